"""Replaying the recorded Router traffic against localcube in the recorded situations.

The recordings' runtimes are recreated by name as localcube runtimes whose sandboxes are
real processes (tests/recordings/capture_sandbox.py): `echo-agent` records what it receives
and answers as the recorder's capture sandbox did; `dead-agent` refuses connections,
`eof-agent` closes them, `stalled-agent` never empties its accept queue, `silent-agent`
never answers, `wm-500` fails to start (localcube's WorkloadManager answers 500), `wm-504`
is never ready (504); `python-interpreter` is localcube's own PicoD. Each situation that
needs its own settings has its own localcube: `--max-concurrent-requests 1`, a short
`--sandbox-ready-timeout`, interpreters run as the capture sandbox (`--picod-command`), and
upstream's session records in a real redis-server (`--store`).
"""

from __future__ import annotations

import base64
import gzip
import http.client
import json
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcube import embedded
from localcube.signing import RequestSigner
from localcube.upstream_router.session_records import go_json, go_time, session_key
from tests.localcube import redis_process
from tests.localcube.support import FIXTURES, SESSION_HEADER, Client, derived_manifest
from tests.recordings.recorded import Exchange, Message, normalise_times
from tests.waiting import wait_until

CAPTURE_PROGRAM = Path(__file__).resolve().parent / "capture_sandbox.py"
SESSION_PLACEHOLDER = re.compile(r"<SESSION_ID_\d+>")
GIVE_UP_AFTER = 2.0  # seconds a client waits for a sandbox that never answers
SLOW_ANSWER = 1.5  # seconds the slow sandbox takes, holding the only concurrency slot


@dataclass
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


@dataclass
class Cube:
    """One localcube serving the recordings' runtimes, and what its sandboxes captured."""

    running: embedded.RunningLocalCube
    state_dir: Path
    capture: Path
    redis: redis_process.RedisServer | None = None
    client: Client = field(init=False)
    shared: dict[str, str] = field(default_factory=dict)  # placeholder -> a session kept open

    def __post_init__(self) -> None:
        self.client = Client(self.running.url)

    @property
    def port(self) -> int:
        return int(self.running.url.rsplit(":", 1)[1])

    def public_key_pem(self) -> bytes:
        return RequestSigner(self.state_dir).public_key_pem

    def captured(self, rec_id: str) -> dict[str, Any] | None:
        """The last request a capture sandbox received with this X-Rec-Id."""
        if not self.capture.exists():
            return None
        entries = [json.loads(line) for line in self.capture.read_text().splitlines()]
        for entry in reversed(entries):
            if any(k.lower() == "x-rec-id" and v == rec_id for k, v in entry["headers"]):
                return entry
        return None

    def open_session(self, kind: str, name: str) -> str:
        answer = self.client.create_session(kind, name)
        assert answer.status_code == 200, f"opening a {name} session: {answer.text}"
        return answer.json()["sessionId"]


def agent(directory: Path, name: str, *arguments: str, readiness: str | None = None) -> Path:
    """An AgentRuntime `name` whose sandbox runs the capture program with `arguments`;
    ready once its port accepts, or with `readiness` once that path answers too."""
    document = yaml.safe_load(derived_manifest(directory, "echo-agent", name).read_text())
    container = document["spec"]["podTemplate"]["spec"]["containers"][0]
    container.update(command=["python3", str(CAPTURE_PROGRAM)], args=list(arguments))
    if readiness is None:
        del container["readinessProbe"]
    else:
        container["readinessProbe"]["httpGet"]["path"] = readiness
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def interpreter(directory: Path, name: str, warm_pool_size: int) -> Path:
    return derived_manifest(directory, "python-interpreter", name, warmPoolSize=warm_pool_size)


def start(
    directory: Path,
    manifests: Callable[[Path, Path], list[Path]],
    *arguments: str,
    redis: redis_process.RedisServer | None = None,
) -> Cube:
    """A localcube in `directory` serving the runtimes `manifests(runtimes, capture)` writes
    under `runtimes`, their capture sandboxes recording into `capture`."""
    directory.mkdir(parents=True, exist_ok=True)
    capture = directory / "captured.jsonl"
    runtimes = directory / "runtimes"
    runtimes.mkdir()
    extra = list(arguments) + (["--store", redis.url] if redis else [])
    running = embedded.start(
        manifests(runtimes, capture),
        directory / "localcube.log",
        state_dir=directory / "state",
        gc_interval="100ms",
        extra_arguments=extra,
    )
    return Cube(running, directory / "state", capture, redis)


def capturing(capture: Path, *more: str) -> tuple[str, ...]:
    return ("--capture", str(capture), *more)


def stopped_at_the_end(cube: Cube) -> Iterator[Cube]:
    try:
        yield cube
    finally:
        cube.running.stop()
        if cube.redis is not None:
            cube.redis.stop()


@pytest.fixture(scope="module")
def main_cube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cube]:
    """The recordings' default situation: every runtime the Router answered for."""

    def manifests(runtimes: Path, capture: Path) -> list[Path]:
        return [
            agent(runtimes, "echo-agent", *capturing(capture)),
            FIXTURES / "python-interpreter.yaml",
            agent(runtimes, "wm-500", "--behave", "exit"),
            agent(runtimes, "dead-agent", "--behave", "refuse", readiness="/ready"),
            agent(runtimes, "eof-agent", "--behave", "hang-up"),
            agent(runtimes, "stalled-agent", "--behave", "stall"),
            agent(runtimes, "silent-agent", "--behave", "silent"),
        ]

    yield from stopped_at_the_end(start(tmp_path_factory.mktemp("main"), manifests))


@pytest.fixture(scope="module")
def limited_cube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cube]:
    """`--max-concurrent-requests 1`, with a sandbox slow enough to hold the only slot."""

    def manifests(runtimes: Path, capture: Path) -> list[Path]:
        return [
            agent(runtimes, "echo-agent", *capturing(capture)),
            agent(runtimes, "slow-agent", *capturing(capture, "--delay", str(SLOW_ANSWER))),
        ]

    limited = start(tmp_path_factory.mktemp("limited"), manifests, "--max-concurrent-requests", "1")
    yield from stopped_at_the_end(limited)


@pytest.fixture(scope="module")
def capture_interpreter_cube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cube]:
    """Code interpreters whose sandboxes are the capture program (`--picod-command`), one
    of them from a warm pool (a SandboxClaim)."""
    directory = tmp_path_factory.mktemp("interpreters")
    command = f"{sys.executable} {CAPTURE_PROGRAM} --capture {directory / 'captured.jsonl'}"
    command += " --port {port} --workspace {workspace}"

    def manifests(runtimes: Path, _: Path) -> list[Path]:
        return [interpreter(runtimes, "ci-echo", 0), interpreter(runtimes, "claim-echo", 1)]

    cube = start(directory, manifests, "--picod-command", command)
    yield from stopped_at_the_end(cube)


@pytest.fixture(scope="module")
def slow_start_cube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cube]:
    """A sandbox that is never ready, with a creation timeout of one second."""

    def manifests(runtimes: Path, _: Path) -> list[Path]:
        return [agent(runtimes, "wm-504", "--behave", "never-ready")]

    slow = start(tmp_path_factory.mktemp("slow-start"), manifests, "--sandbox-ready-timeout", "1s")
    yield from stopped_at_the_end(slow)


@pytest.fixture(scope="module")
def redis_cube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cube]:
    """Upstream's session records in a real redis-server, where a test rewrites them as
    upstream's WorkloadManager and GC would have left them (skipped without redis-server)."""
    directory = tmp_path_factory.mktemp("redis")
    server = redis_process.start(directory / "redis")

    def manifests(runtimes: Path, capture: Path) -> list[Path]:
        return [agent(runtimes, "echo-agent", *capturing(capture))]

    yield from stopped_at_the_end(start(directory, manifests, redis=server))


def send(
    cube: Cube, recorded: Message, sessions: dict[str, str], timeout: float = 30
) -> Answer | None:
    """The recorded request sent as recorded (header names, their order, the body bytes,
    chunked framing included), placeholders replaced; None when no answer came in time."""

    def filled(text: str) -> str:
        text = text.replace("<ROUTER_PORT>", str(cube.port))
        return SESSION_PLACEHOLDER.sub(lambda found: sessions[found.group()], text)

    connection = http.client.HTTPConnection("127.0.0.1", cube.port, timeout=timeout)
    try:
        connection.putrequest(
            recorded.fields["method"],
            filled(recorded.fields["path"]),
            skip_host=True,
            skip_accept_encoding=True,
        )
        for name, value in recorded.headers.items():
            for line in value.split("\n"):
                connection.putheader(name, filled(line))
        connection.endheaders(recorded.body or None)
        response = connection.getresponse()
        return Answer(response.status, response.getheaders(), response.read())
    except TimeoutError:
        return None
    finally:
        connection.close()


def sessions_for(exchange_headers: dict[str, str], known: dict[str, str]) -> dict[str, str]:
    """`known` placeholders, and a fresh id for every other one the request names."""
    named = SESSION_PLACEHOLDER.findall(" ".join(exchange_headers.values()))
    return {**{name: str(uuid.uuid4()) for name in named}, **known}


def bind_answer(recorded: Message, answer: Answer | None, sessions: dict[str, str]) -> None:
    """A session the answer opened stands for the placeholder the recording names there."""
    placeholder = recorded.header(SESSION_HEADER)
    given = None if answer is None else answer.header(SESSION_HEADER)
    if placeholder and given and placeholder not in sessions:
        sessions[placeholder] = given


def normalised(body: bytes, sessions: dict[str, str]) -> str:
    """localcube's body with the recordings' placeholders (README, "Normalisation")."""
    text = body.decode("utf-8", "replace")
    for placeholder, session in sessions.items():
        text = text.replace(session, placeholder)
    text = normalise_times(text)
    text = re.sub(r'"duration":[0-9.e+-]+', '"duration":"<DURATION>"', text)
    return re.sub(r'"uptime":"[^"]*"', '"uptime":"<UPTIME>"', text)


def recorded_body(recorded: Message) -> str:
    """The recorded body as text, gunzipped where it was kept as gzip bytes."""
    if recorded.fields.get("body_gzip"):
        return base64.b64decode(recorded.fields["body_gunzipped_b64"]).decode()
    return (recorded.body or b"").decode("utf-8", "replace")


def answer_mismatches(
    recorded: Message, answer: Answer | None, sessions: dict[str, str]
) -> list[str]:
    """Status, Content-Type, Content-Encoding, whether a Server and a session id are named
    (the capture sandbox's Server is the recorder's own), and the body after normalisation,
    each where localcube differs from the recorded answer."""
    if recorded.fields.get("status") is None:
        return [] if answer is None else [f"answered {answer.status} where upstream never did"]
    if answer is None:
        return [f"no answer where upstream answered {recorded.fields['status']}"]
    mismatches = []
    if answer.status != recorded.fields["status"]:
        mismatches.append(f"status {answer.status}, upstream {recorded.fields['status']}")
    for name in ("Content-Type", "Content-Encoding"):
        if answer.header(name) != recorded.header(name):
            mismatches.append(f"{name} {answer.header(name)!r}, upstream {recorded.header(name)!r}")
    if (answer.header("Server") is None) != (recorded.header("Server") is None):
        mismatches.append(
            f"Server {answer.header('Server')!r}, upstream {recorded.header('Server')!r}"
        )
    if (answer.header(SESSION_HEADER) is None) != (recorded.header(SESSION_HEADER) is None):
        mismatches.append(
            f"session header {answer.header(SESSION_HEADER)!r}, "
            f"upstream {recorded.header(SESSION_HEADER)!r}"
        )
    body = answer.body
    if answer.header("Content-Encoding") == "gzip" and recorded.fields.get("body_gzip"):
        body = gzip.decompress(body)
    if normalised(body, sessions) != recorded_body(recorded):
        mismatches.append(
            f"body {normalised(body, sessions)[:300]!r}, upstream {recorded_body(recorded)[:300]!r}"
        )
    return mismatches


def wait_for_warm_sandbox(cube: Cube, runtime: str) -> None:
    wait_until(
        lambda: any(
            box["runtime"] == runtime and box["state"] == "warm" for box in cube.client.sandboxes()
        ),
        f"a warm {runtime} sandbox",
        timeout=30,
    )


def not_reproduced(exchange: Exchange) -> list[str]:
    """The mismatch a situation localcube cannot recreate stands for; the ledger says why."""
    return ["the recorded situation is not recreated in localcube"]


ON_REDIS = {"expired-record-still-stored", "creating-placeholder", "garbage-record"}
CAPTURE_INTERPRETERS = {"ci-echo-new-session", "claim-echo-new-session"}


def cube_for(exchange_id: str, request: pytest.FixtureRequest) -> Cube:
    """The localcube serving the situation of a router-answers exchange."""
    if exchange_id.startswith("limit1-"):
        return request.getfixturevalue("limited_cube")
    if exchange_id in CAPTURE_INTERPRETERS:
        cube = request.getfixturevalue("capture_interpreter_cube")
        wait_for_warm_sandbox(cube, "claim-echo")
        return cube
    if exchange_id == "wm-504":
        return request.getfixturevalue("slow_start_cube")
    if exchange_id in ON_REDIS:
        return request.getfixturevalue("redis_cube")
    return request.getfixturevalue("main_cube")


def shared_sessions(cube: Cube) -> dict[str, str]:
    """The recordings' first agent session and first interpreter session (holding the
    `a.txt` the recorder uploaded), opened once per localcube."""
    if not cube.shared:
        interpreter = cube.open_session("code-interpreter", "python-interpreter")
        upload = {"path": "a.txt", "content": "aGVsbG8="}
        answer = cube.client.interpreter(
            "python-interpreter", "/api/files", interpreter, json=upload
        )
        assert answer.status_code == 200, answer.text
        cube.shared.update(
            {
                "<SESSION_ID_1>": cube.open_session("agent-runtime", "echo-agent"),
                "<SESSION_ID_2>": interpreter,
            }
        )
    return cube.shared


def rewritten_record(cube: Cube, session: str, **fields: object) -> None:
    """The session's record in Redis with `fields` changed, written as Go writes it."""
    store = cube.redis.client()
    stored = store.get(session_key(session))
    assert stored is not None, f"session {session} has no record"
    record = {**json.loads(stored), **fields}
    store.set(session_key(session), go_json(record))


def sessions_in(exchange_id: str, headers: dict[str, str], cube: Cube) -> dict[str, str]:
    """What the session placeholders of a router-answers exchange's request (`headers`)
    stand for in its situation."""
    known: dict[str, str] = {}
    if exchange_id == "ended-session":  # opened, then deleted as DELETE does
        ended = cube.open_session("agent-runtime", "echo-agent")
        assert cube.client.delete_session("agent-runtime", ended).status_code == 200
        known["<SESSION_ID_1>"] = ended
    elif exchange_id == "expired-record-still-stored":
        session = cube.open_session("agent-runtime", "echo-agent")
        rewritten_record(cube, session, expiresAt=go_time(time.time() - 3600))
        known["<SESSION_ID_8>"] = session
    elif exchange_id == "creating-placeholder":
        session = cube.open_session("agent-runtime", "echo-agent")
        rewritten_record(cube, session, sandboxId="", entryPoints=None, status="creating")
        known["<SESSION_ID_9>"] = session
    elif exchange_id == "garbage-record":
        known = sessions_for(headers, {})
        cube.redis.client().set(session_key(f"garbage-{known['<SESSION_ID_9>']}"), b"not json")
    elif SESSION_PLACEHOLDER.search(str(headers)):
        known = {
            name: session for name, session in shared_sessions(cube).items() if name in str(headers)
        }
    return sessions_for(headers, known)


@contextmanager
def slot_held(cube: Cube) -> Iterator[None]:
    """The only concurrency slot taken by a call the slow sandbox is still answering."""
    rec_id = f"slot-holder-{uuid.uuid4()}"
    statuses: list[int] = []
    holder = threading.Thread(
        target=lambda: statuses.append(
            cube.client.agent("slow-agent", json={}, headers={"X-Rec-Id": rec_id}).status_code
        )
    )
    holder.start()
    try:
        wait_until(lambda: cube.captured(rec_id) is not None, "the slot to be held", timeout=10)
        yield
    finally:
        holder.join()
    assert statuses == [200], f"the call holding the slot was answered {statuses}"


def situation_of(exchange_id: str) -> Callable[[Cube], AbstractContextManager[object]]:
    """What surrounds the replayed call: the only slot held, for the `limit1-` exchanges
    made while it was."""
    held = exchange_id.startswith("limit1-") and exchange_id != "limit1-slow-call"
    return slot_held if held else lambda _: nullcontext()
