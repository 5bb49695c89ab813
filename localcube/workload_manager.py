"""The WorkloadManager: runtimes, sessions, warm pools and garbage collection.

It owns the mapping session -> sandbox. The Router asks it for sessions and reports
activity; the GC loop ends sandboxes idle past `sessionTimeout` or older than their hard
lifetime, by upstream's rules and clocks (localcube.collection_rules). A request still in
flight counts as activity, so a long task keeps its session: upstream's GC has no such check
and ends a session whose call outlasts its idle timeout and the GC's lookback.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import Counter
from collections.abc import Iterable

from localcube.collection_rules import CollectionRules, whole_seconds
from localcube.manifests import Runtime
from localcube.sandboxing.launcher import SandboxLauncher, is_alive
from localcube.session_errors import RuntimeNotFound
from localcube.store import SandboxRecord, Store, StoreError

log = logging.getLogger("localcube.workload_manager")


class WorkloadManager:
    def __init__(
        self, store: Store, launcher: SandboxLauncher, rules: CollectionRules | None = None
    ) -> None:
        self._store = store
        self._launcher = launcher
        self._rules = rules or CollectionRules()
        self._runtimes: dict[tuple[str, str, str], Runtime] = {}
        self._in_flight: Counter[str] = Counter()
        self._refills: dict[tuple[str, str, str], asyncio.Task[None]] = {}
        self._closing = False

    # runtimes -------------------------------------------------------------------------

    async def apply(self, runtimes: Iterable[Runtime]) -> None:
        """Create or replace runtimes; a replaced runtime's warm sandboxes start anew."""
        for runtime in runtimes:
            previous = self._runtimes.get(runtime.key)
            self._runtimes[runtime.key] = runtime
            if previous is not None and previous != runtime:
                await self._end_warm(runtime.key)
            self._schedule_refill(runtime.key)

    def configured_runtimes(self) -> list[Runtime]:
        return list(self._runtimes.values())

    async def remove(self, kind: str, namespace: str, name: str) -> Runtime:
        runtime = self._runtimes.pop((kind, namespace, name), None)
        if runtime is None:
            raise RuntimeNotFound(kind, namespace, name)
        await self._end_warm(runtime.key)
        return runtime

    # sessions -------------------------------------------------------------------------

    async def create_session(
        self, kind: str, namespace: str, name: str, owner: str | None, ttl: int | None
    ) -> SandboxRecord:
        """A new session on a claimed warm sandbox, or on a sandbox started for it.

        Raises RuntimeNotFound, SandboxStartError or StoreError (see
        localcube.session_errors); a sandbox started for a session the store cannot record
        is ended, a warm one stays warm."""
        runtime = self._runtimes.get((kind, namespace, name))
        if runtime is None:
            raise RuntimeNotFound(kind, namespace, name)
        warm, dead = self._take_warm(runtime)
        try:
            sandbox = warm or await self._start(runtime)
            now = time.time()
            lifetime = (
                runtime.max_session_duration
                if ttl is None
                else min(ttl, runtime.max_session_duration)
            )
            record = sandbox.claimed(
                session_id=str(uuid.uuid4()),
                sandbox_kind=runtime.sandbox_kind,
                owner=owner,
                now=now,
                idle_timeout=runtime.session_timeout,
                expires_at=now + lifetime,
            )
            try:
                self._store.put(record)
            except StoreError:
                if warm is None:
                    await self._end_processes(sandbox, "its session could not be recorded")
                raise
        finally:
            await asyncio.gather(*(self._end_processes(r, "warm sandbox died") for r in dead))
        self._schedule_refill(runtime.key)
        log.info(
            "session %s created on sandbox %s (%s)",
            record.session_id,
            record.sandbox_name,
            "from the warm pool" if warm else "started for it",
        )
        return record

    def session(self, session_id: str) -> SandboxRecord | None:
        return self._store.by_session(session_id)

    async def delete_session(self, session_id: str) -> bool:
        """End the session's sandbox; True once its processes are gone, False if unknown."""
        record = self._store.by_session(session_id)
        if record is None:
            return False
        await self._end(record, "deleted")
        return True

    def request_started(self, session_id: str) -> None:
        self._in_flight[session_id] += 1
        self._record_activity(session_id)

    def request_finished(self, session_id: str) -> None:
        self._in_flight[session_id] -= 1
        if self._in_flight[session_id] <= 0:
            del self._in_flight[session_id]
        self._record_activity(session_id)

    def _record_activity(self, session_id: str) -> None:
        """Activity in whole seconds, as upstream keeps it. A call is served even when its
        activity cannot be recorded, as upstream's Router only logs that
        (pkg/router/handlers.go:78-81)."""
        try:
            self._store.touch(session_id, whole_seconds(time.time()))
        except StoreError as failure:
            log.warning("%s", failure)

    def sandboxes(self) -> list[SandboxRecord]:
        """Every sandbox, warm, claimed or lost, oldest first."""
        return self._store.all()

    def calls_in_flight(self, session_id: str) -> int:
        return self._in_flight.get(session_id, 0)

    # lifecycle ------------------------------------------------------------------------

    async def adopt(self) -> None:
        """After a restart: keep live sandboxes from the store, end dead ones and warm
        sandboxes of runtimes no longer configured. Call after `apply`."""
        records = [record for record in self._store.all() if record.lost_at is None]
        for record in records:  # before anything ends: no new sandbox may take these ports
            self._launcher.ports.reserve(port for _, port in record.endpoints)
        for record in records:
            key = (record.kind, record.namespace, record.runtime)
            if not is_alive(record.pid, record.process_start):
                if record.session_id is None:
                    await self._end(record, "found dead after restart")
                else:
                    await self._lose(record)
            elif record.session_id is None and key not in self._runtimes:
                await self._end(record, "its runtime is no longer configured")
            else:
                log.info("adopted sandbox %s (session %s)", record.sandbox_name, record.session_id)
        known = {record.sandbox_id for record in self._store.all()}
        for sandbox_id in await self._launcher.sweep(known):
            log.info("ended sandbox %s: it was still starting when localcube stopped", sandbox_id)

    async def collect_garbage(self) -> None:
        """One GC pass: idle and expired sessions (at most 100 candidates of each, as
        upstream: localcube.collection_rules), dead sandboxes, pools to refill."""
        self._launcher.reap()
        now = time.time()
        records = self._store.all()
        # session id -> its record, for the sandboxes that serve a session
        sessions = {r.session_id: r for r in records if r.session_id is not None}
        expired = set(
            self._rules.expired_sessions(
                {sid: r.expires_at for sid, r in sessions.items() if r.expires_at is not None},
                now,
            )
        )
        # a call in flight keeps its session, yet takes one of the pass's places as upstream
        idle_candidates = set(
            self._rules.idle_candidates(
                {
                    sid: r.last_activity_at
                    for sid, r in sessions.items()
                    if r.last_activity_at is not None
                },
                now,
            )
        )
        endings = []
        for record in records:
            if record.session_id is None:
                if not is_alive(record.pid, record.process_start):
                    endings.append(self._end(record, "warm sandbox died"))
            elif record.session_id in expired:
                endings.append(self._end(record, "reached its maximum session duration"))
            elif record.lost_at is None and not is_alive(record.pid, record.process_start):
                endings.append(self._lose(record))
            elif (
                record.session_id in idle_candidates
                and record.session_id not in self._in_flight
                and record.idle_timeout is not None
                and record.last_activity_at is not None
                and self._rules.is_idle(record.last_activity_at, record.idle_timeout, now)
            ):
                endings.append(self._end(record, "idle past its session timeout"))
        await asyncio.gather(*endings)
        for key in self._runtimes:
            self._schedule_refill(key)

    async def run_gc(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await self.collect_garbage()
            except Exception:
                log.exception("garbage collection pass failed")

    async def shutdown(self) -> None:
        """End every sandbox and its session (a graceful stop)."""
        self._closing = True
        for task in self._refills.values():
            task.cancel()
        await asyncio.gather(*self._refills.values(), return_exceptions=True)
        await asyncio.gather(*(self._end(r, "localcube stopped") for r in self._store.all()))

    def warm_count(self, key: tuple[str, str, str]) -> int:
        return sum(1 for record in self._warm(key))

    # internals ------------------------------------------------------------------------

    def _warm(self, key: tuple[str, str, str]) -> list[SandboxRecord]:
        return self._store.warm(*key)

    def _take_warm(self, runtime: Runtime) -> tuple[SandboxRecord | None, list[SandboxRecord]]:
        """A live warm sandbox, if any, and the dead ones met on the way, already forgotten
        and left for the caller to end.

        Synchronous, so no other session can take the same sandbox before it is claimed."""
        dead: list[SandboxRecord] = []
        for record in self._warm(runtime.key):
            if is_alive(record.pid, record.process_start):
                return record, dead
            self._store.delete(record.sandbox_id)
            dead.append(record)
        return None, dead

    async def _start(self, runtime: Runtime) -> SandboxRecord:
        sandbox_id = str(uuid.uuid4())
        started = await self._launcher.start(runtime, sandbox_id)
        return SandboxRecord(
            sandbox_id=sandbox_id,
            sandbox_name=f"{runtime.name}-{sandbox_id[:8]}",
            kind=runtime.kind,
            namespace=runtime.namespace,
            runtime=runtime.name,
            pid=started.pid,
            process_start=started.process_start,
            endpoints=started.endpoints,
            workspace=str(started.workspace),
            created_at=time.time(),
        )

    def _schedule_refill(self, key: tuple[str, str, str]) -> None:
        runtime = self._runtimes.get(key)
        if self._closing or runtime is None or runtime.warm_pool_size == 0:
            return
        task = self._refills.get(key)
        if task is None or task.done():
            self._refills[key] = asyncio.get_running_loop().create_task(self._refill(key))

    async def _refill(self, key: tuple[str, str, str]) -> None:
        runtime = self._runtimes.get(key)
        while not self._closing and runtime is not None:
            missing = runtime.warm_pool_size - self.warm_count(key)
            if missing <= 0:
                return
            warmed = await asyncio.gather(*(self._warm_one(runtime) for _ in range(missing)))
            if not all(warmed):
                return  # the GC pass tries again
            runtime = self._runtimes.get(key)

    async def _warm_one(self, runtime: Runtime) -> bool:
        """Start one warm sandbox and record it as soon as it serves, so that a refill
        cancelled while others of its batch still start (a stop) leaves none unrecorded,
        which the stop would never end. False if it could not start or be recorded."""
        key = runtime.key
        try:
            sandbox = await self._start(runtime)
        except Exception as failure:
            log.error("warm pool of %s/%s: %s", key[1], key[2], failure)
            return False
        if self._runtimes.get(key) != runtime:  # changed or went while it started
            await self._end_processes(sandbox, "runtime changed")  # never recorded
            return True
        try:
            self._store.put(sandbox)
        except StoreError as failure:
            log.error("warm pool of %s/%s: %s", key[1], key[2], failure)
            await self._end_processes(sandbox, "it could not be recorded")
            return False
        log.info("warm sandbox %s ready", sandbox.sandbox_name)
        return True

    async def _end_warm(self, key: tuple[str, str, str]) -> None:
        await asyncio.gather(*(self._end(r, "runtime changed") for r in self._warm(key)))

    async def _end(self, record: SandboxRecord, reason: str) -> None:
        """Forget the sandbox at once (no caller finds it any more), then end its processes,
        unless another ending forgot it first or it was lost (its processes already ended).
        If the store cannot forget it (StoreError), the sandbox is left whole."""
        if not self._store.delete(record.sandbox_id):
            return
        if record.lost_at is None:
            await self._end_processes(record, reason)
        else:
            log.info("session %s of a lost sandbox ended: %s", record.session_id, reason)

    async def _lose(self, record: SandboxRecord) -> None:
        """The sandbox of a session died (kill -9, a crash). What it left running ends now and
        its port and workspace are released; the session stays, marked lost, so that its
        calls are answered 502 at once (the Router neither forwards them nor counts them as
        activity) until it idles out or expires. It is not started again: its state is gone."""
        if self._store.mark_lost(record.sandbox_id, time.time()):
            await self._end_processes(record, f"its process died (session {record.session_id})")

    async def _end_processes(self, record: SandboxRecord, reason: str) -> None:
        await self._launcher.end(
            record.pid,
            record.process_start,
            self._launcher.directory_of(record.sandbox_id),
            (port for _, port in record.endpoints),
        )
        log.info("sandbox %s ended: %s", record.sandbox_name, reason)
