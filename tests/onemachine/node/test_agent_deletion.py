"""Deletion as the kubelet does it, against the stand-in API server with real pods: a
graceful delete stops the containers as a container runtime does (a process without a
SIGTERM handler is not stopped by SIGTERM and is killed at the end of the grace period; one
with a handler ends early), then the node finishes the delete with grace 0 and a uid
precondition; a force delete (grace 0) and a node stop still stop every process."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from onemachine.node.pod_runtime import PodRuntime
from tests.kubernetes.fake_api import FakeKubernetes
from tests.onemachine.node.agent_fixtures import (
    NODE,
    PODS,
    cluster,
    processes_with,
    python,
    serving,
)
from tests.waiting import wait_until

PORT = 8080
LISTEN = """
import os, signal, socket, sys
{handler}
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("", int(os.environ["PORT"])))
server.listen()
while True:
    server.accept()[0].close()
"""
NO_HANDLER = ""
HANDLER = "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))"
# The grace a test waits out: long enough that the checks made within it (1.2 s in) hold on
# a loaded machine. The node counts it from its SIGTERM, after the delete was answered; the
# deletionTimestamp it may count from has whole seconds, so an end may come up to 1 s sooner.
GRACE = 3


def listener(handler: str, marker: str) -> dict:
    """A container listening on PORT until it is stopped, marked by an env value."""
    return python(
        "server",
        LISTEN.format(handler=handler),
        ports=[{"containerPort": PORT}],
        env=[{"name": "TEST_MARK", "value": marker}],
        readinessProbe={"tcpSocket": {"port": PORT}, "periodSeconds": 1},
    )


def test_a_process_without_a_sigterm_handler_lives_out_the_grace_period(
    tmp_path: Path, runtime: PodRuntime
) -> None:
    marker = f"mark-{uuid.uuid4()}"
    with cluster(tmp_path, runtime) as running:
        running.create(
            "stubborn", listener(NO_HANDLER, marker), terminationGracePeriodSeconds=GRACE
        )
        address = running.ready("stubborn")["status"]["podIP"]
        deleted_at = time.monotonic()
        answer = running.delete("stubborn")
        assert answer["metadata"]["deletionGracePeriodSeconds"] == GRACE
        time.sleep(1.2)
        assert serving(address, PORT), "SIGTERM stopped a process that has no handler for it"
        running.wait_gone("stubborn", timeout=30)
        assert time.monotonic() - deleted_at >= GRACE - 1, "killed before its grace was out"
        assert not serving(address, PORT)
        assert processes_with(marker) == []
        last = last_status(running.fake, "stubborn")
        assert last["phase"] == "Failed"
        terminated = last["containerStatuses"][0]["state"]["terminated"]
        # killed: 137; no `signal`, which a kubelet never fills in (convertToAPIContainerStatuses)
        assert (terminated["exitCode"], terminated["reason"]) == (137, "Error")
        assert "signal" not in terminated


def test_a_process_with_a_sigterm_handler_ends_early_and_the_delete_is_finished(
    tmp_path: Path, runtime: PodRuntime
) -> None:
    marker = f"mark-{uuid.uuid4()}"
    with cluster(tmp_path, runtime) as running:
        created = running.create("polite", listener(HANDLER, marker))
        running.ready("polite")
        answer = running.delete("polite")  # the default grace: 30 s
        assert answer["metadata"]["deletionGracePeriodSeconds"] == 30
        # before the grace's end, where it would have been killed (exit 137, below: 0)
        running.wait_gone("polite", timeout=25)
        assert processes_with(marker) == []
        finishing = [
            r
            for r in running.fake.requests
            if r.method == "DELETE" and r.path == f"{PODS}/polite" and r.body
        ][-1]
        assert finishing.body["gracePeriodSeconds"] == 0
        assert finishing.body["preconditions"] == {"uid": created["metadata"]["uid"]}
        last = last_status(running.fake, "polite")
        assert last["phase"] == "Succeeded"  # it exited 0 on SIGTERM
        assert last["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0


def test_a_force_delete_cuts_a_grace_period_short(tmp_path: Path, runtime: PodRuntime) -> None:
    marker = f"mark-{uuid.uuid4()}"
    with cluster(tmp_path, runtime) as running:
        running.create("slow", listener(NO_HANDLER, marker), terminationGracePeriodSeconds=30)
        running.ready("slow")
        running.delete("slow")
        time.sleep(0.5)
        assert processes_with(marker), "stopped before its grace period ended"
        running.delete("slow", grace=0)
        # within the 30 s grace, whose end would kill it too
        wait_until(lambda: processes_with(marker) == [], "the forced delete's kill", timeout=20)


def test_a_shorter_delete_starts_the_grace_over_with_its_own_length(
    tmp_path: Path, runtime: PodRuntime
) -> None:
    """As the kubelet's pod worker (pod_workers.go calculateEffectiveGracePeriod): a later
    delete with a shorter grace stops the pod within it, not at once."""
    marker = f"mark-{uuid.uuid4()}"
    with cluster(tmp_path, runtime) as running:
        running.create("slow", listener(NO_HANDLER, marker), terminationGracePeriodSeconds=30)
        address = running.ready("slow")["status"]["podIP"]
        first_delete = time.monotonic()
        running.delete("slow")
        time.sleep(0.3)
        shorter_delete = time.monotonic()
        running.delete("slow", grace=GRACE)
        time.sleep(1.2)
        assert serving(address, PORT), "killed at once, not at the end of the shorter grace"
        running.wait_gone("slow", timeout=25)
        assert time.monotonic() - shorter_delete >= GRACE - 1, "killed before the shorter grace"
        # the first delete's 30 s grace would end it only 30 s after that delete
        assert time.monotonic() - first_delete < 30, "the shorter grace did not apply"
        assert processes_with(marker) == []


def last_status(fake: FakeKubernetes, name: str) -> dict:
    """The last status the node patched for the pod."""
    patches = [
        r for r in fake.requests if r.method == "PATCH" and r.path == f"{PODS}/{name}/status"
    ]
    return patches[-1].body["status"]


def test_a_force_delete_still_stops_the_processes(tmp_path: Path, runtime: PodRuntime) -> None:
    marker = f"mark-{uuid.uuid4()}"
    with cluster(tmp_path, runtime) as running:
        running.create("forced", listener(NO_HANDLER, marker))
        address = running.ready("forced")["status"]["podIP"]
        assert processes_with(marker)
        running.delete("forced", grace=0)
        assert running.pod("forced") is None  # gone from the API at once
        # within the 30 s grace, whose end would kill it too
        wait_until(lambda: processes_with(marker) == [], "the forced delete's kill", timeout=20)
        assert not serving(address, PORT)


def test_a_node_stop_stops_every_pod(tmp_path: Path, runtime: PodRuntime) -> None:
    marker = f"mark-{uuid.uuid4()}"
    with cluster(tmp_path, runtime) as running:
        running.create("one", listener(NO_HANDLER, marker))  # the default grace: 30 s
        running.create("two", listener(HANDLER, marker))
        running.ready("one")
        running.ready("two")
        assert len(processes_with(marker)) >= 2
        started = time.monotonic()
    # a stop that waited out pod "one"'s grace would take 30 s
    assert time.monotonic() - started < 30, "the node's stop waited out a grace period"
    assert processes_with(marker) == []
    assert not list((tmp_path / "node" / "pods").glob("*"))


def test_a_pod_that_never_ran_is_deleted_at_once(tmp_path: Path, runtime: PodRuntime) -> None:
    with cluster(tmp_path, runtime) as running:
        running.create("unmapped", {"name": "c", "image": "example.com/nothing:1"})
        running.wait_pod("unmapped", "reported", lambda p: bool(p.get("status", {}).get("phase")))
        running.delete("unmapped")
        running.wait_gone("unmapped", timeout=20)  # at once: not at its 30 s grace's end


def test_a_pod_left_terminating_by_a_previous_node_is_finished(
    tmp_path: Path, runtime: PodRuntime
) -> None:
    fake = FakeKubernetes()
    pod = {
        "metadata": {
            "name": "left",
            "deletionTimestamp": "2026-12-01T10:00:00Z",
            "deletionGracePeriodSeconds": 30,
        },
        "spec": {"nodeName": NODE, "containers": [python("c", "pass")]},
        "status": {"phase": "Running"},
    }
    fake.put(PODS, pod)
    with cluster(tmp_path, runtime, fake=fake) as running:
        running.wait_gone("left", timeout=20)  # at once: its grace ended long ago
