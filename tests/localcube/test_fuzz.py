"""Bounded bad-input fuzzing of the Router, the WorkloadManager and PicoD, on one real
localcube: generated paths, headers, session ids, JSON and multipart bodies never get a
500 localcube made up, never hang, never leave a process behind (docs/faults.md).

Bounds: EXAMPLES inputs per surface, derandomized so CI sees the same inputs every run;
each call must answer within HANG_BOUND. Set FUZZ_EXAMPLES to fuzz harder by hand.
"""

from __future__ import annotations

import json
import os
import string
from collections.abc import Iterator
from urllib.parse import quote

import pytest
import requests
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from localcube import embedded
from tests.localcube.picod_process import session_members
from tests.localcube.support import NAMESPACE, SESSION_HEADER, Client
from tests.waiting import wait_until

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "100"))
HANG_BOUND = 10.0  # seconds: a call that takes longer hangs
bounded = settings(
    max_examples=EXAMPLES,
    deadline=None,  # hangs are caught by HANG_BOUND, not by Hypothesis's timing
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# Bodies that broke parsers before: deep nesting, a number past Python's digit limit, a lone
# surrogate, NUL, Go's and Python's non-JSON numbers.
PATHOLOGICAL_BODIES = [
    b"[" * 100_000,
    b'{"a":' * 50_000,
    b'{"name": "x", "namespace": "y", "ttl": ' + b"9" * 5000 + b"}",
    b'{"command": ["echo", ' + b"1" * 5000 + b"]}",
    b'{"path": "\\ud800", "content": ""}',
    b'{"name": "\x00", "namespace": "\x00"}',
    b'{"ttl": NaN, "name": "x", "namespace": "y"}',
    b"\xef\xbb\xbf{}",
    b"",
]
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)


def json_object(*fields: str) -> st.SearchStrategy[bytes]:
    """JSON objects with some of `fields` (and other keys) holding any JSON value."""
    keys = st.sampled_from(fields) | st.text(max_size=8) if fields else st.text(max_size=8)
    objects = st.dictionaries(keys, json_values, max_size=5)
    documents = objects.map(lambda value: json.dumps(value, allow_nan=True).encode())
    return documents | json_values.map(lambda v: json.dumps(v).encode()) | st.binary(max_size=40)


segments = st.text(string.ascii_letters + string.digits + "-._~%:@!$&'()*+,;=é ", max_size=12)
paths = st.lists(segments, max_size=4).map(lambda parts: "/" + "/".join(parts))
header_names = st.text(string.ascii_letters + string.digits + "-_", min_size=1, max_size=16)
header_values = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)
headers = st.dictionaries(
    header_names.filter(lambda name: name.lower() not in ("content-length", "host")),
    header_values,
    max_size=4,
)
session_ids = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=40)


def boundary_free(data: bytes) -> bytes:
    return data.replace(b"--fz", b"")


multipart_parts = st.tuples(
    st.lists(st.tuples(header_names, header_values), max_size=3),
    st.binary(max_size=64).map(boundary_free),
)
multipart_bodies = st.lists(multipart_parts, max_size=3).map(
    lambda parts: (
        b"".join(
            b"--fz\r\n"
            + b"".join(f"{name}: {value}\r\n".encode() for name, value in part_headers)
            + b"\r\n"
            + content
            + b"\r\n"
            for part_headers, content in parts
        )
        + b"--fz--\r\n"
    )
)


@pytest.fixture(scope="module")
def sessions(shared_cube: embedded.RunningLocalCube) -> Iterator[dict[str, str]]:
    """An echo-agent and a python-interpreter session to fuzz, and a check that every
    sandbox is alone in its session once fuzzing is over."""
    client = Client(shared_cube.url)
    opened = {
        name: client.create_session(kind, name).json()["sessionId"]
        for kind, name in (
            ("agent-runtime", "echo-agent"),
            ("code-interpreter", "python-interpreter"),
        )
    }
    yield opened
    boxes = client.sandboxes()
    assert {box["sessionId"] for box in boxes} >= set(opened.values()), "no session was lost"
    # The fuzzed runtimes' sandboxes (a stateful interpreter's keeps its kernel beside it).
    for box in (box for box in boxes if box["runtime"] in opened):
        wait_until(
            lambda box=box: session_members(box["pid"]) == [box["pid"]],
            f"sandbox {box['sandboxName']} to be alone in its session",
            timeout=5,
        )


def call(method: str, url: str, **kwargs) -> requests.Response:
    """One call that must answer within HANG_BOUND and without a 500 of localcube's own."""
    answer = requests.request(method, url, timeout=HANG_BOUND, allow_redirects=False, **kwargs)
    assert answer.status_code != 500 or "Server got itself in trouble" not in answer.text, (
        f"{method} {url}: unhandled error"
    )
    return answer


@pytest.mark.slow
@bounded
@given(kind=st.sampled_from(["agent-runtime", "code-interpreter"]), body=json_object())
@example(kind="agent-runtime", body=PATHOLOGICAL_BODIES[0])
@example(kind="agent-runtime", body=PATHOLOGICAL_BODIES[1])
@example(kind="agent-runtime", body=PATHOLOGICAL_BODIES[2])
@example(kind="agent-runtime", body=PATHOLOGICAL_BODIES[5])
@example(kind="agent-runtime", body=PATHOLOGICAL_BODIES[6])
@example(kind="code-interpreter", body=PATHOLOGICAL_BODIES[7])
@example(kind="code-interpreter", body=PATHOLOGICAL_BODIES[8])
def test_workload_manager_create_refuses_bad_bodies(
    shared_cube: embedded.RunningLocalCube, kind: str, body: bytes
) -> None:
    """Anything but a known runtime is 400 `Invalid request body` (nesting too deep and
    numbers too long too) or a field's message, or 404 for a runtime not configured: never
    a 500.

    Upstream: pkg/workloadmanager/handlers.go:146-150"""
    answer = call("POST", f"{shared_cube.url}/v1/{kind}", data=body)
    assert answer.status_code in (400, 404), answer.text
    assert set(answer.json()) == {"message"}


@bounded
@given(session=session_ids)
def test_workload_manager_delete_of_unknown_sessions_is_404(
    shared_cube: embedded.RunningLocalCube, session: str
) -> None:
    answer = call("DELETE", f"{shared_cube.url}/v1/agent-runtime/sessions/{quote(session)}")
    assert answer.status_code == 404, answer.text


@bounded
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]),
    runtime=segments,
    path=paths,
    extra_headers=headers,
    session=st.none() | session_ids | st.just("echo-agent"),
    body=st.none() | st.binary(max_size=64),
)
def test_router_never_fails_on_bad_calls(
    shared_cube: embedded.RunningLocalCube,
    sessions: dict[str, str],
    method: str,
    runtime: str,
    path: str,
    extra_headers: dict[str, str],
    session: str | None,
    body: bytes | None,
) -> None:
    """Unknown runtimes and sessions are 404, other methods Gin's 404: the Router's own
    answers are never 5xx. What a real session's sandbox answers is its own (it carries the
    session header). Bodies go with POST only: the echo agent leaves a GET's body unread on
    its keep-alive connection, which then fails the next call whatever the proxy."""
    if session is None:
        runtime = f"fz-{runtime}"  # never opens a session: no runtime has that name
    else:
        runtime = "echo-agent"
        extra_headers[SESSION_HEADER] = sessions.get(session, session)
    url = (
        f"{shared_cube.url}/v1/namespaces/{NAMESPACE}/agent-runtimes/{quote(runtime)}"
        f"/invocations/fz{quote(path)}"
    )
    answer = call(method, url, headers=extra_headers, data=body if method == "POST" else None)
    if SESSION_HEADER not in answer.headers:
        assert answer.status_code < 500, answer.text


def picod(cube: embedded.RunningLocalCube, path: str) -> str:
    return (
        f"{cube.url}/v1/namespaces/{NAMESPACE}/code-interpreters/python-interpreter"
        f"/invocations{path}"
    )


def assert_picod_answer(answer: requests.Response) -> None:
    """PicoD's own 500s are upstream's file system failures (`Failed to ...`)."""
    if answer.status_code >= 500:
        assert answer.json()["error"].startswith("Failed to "), answer.text


safe_commands = st.lists(st.text(max_size=10), max_size=3).map(lambda args: ["echo", *args])


@bounded
@given(
    body=json_object("command", "timeout", "working_dir", "env")
    | st.fixed_dictionaries(
        {"command": safe_commands},
        optional={
            "timeout": st.text(max_size=6) | json_scalars,
            "working_dir": st.text(string.ascii_letters + "/._", max_size=10),
            "env": st.dictionaries(st.text(max_size=6), json_scalars, max_size=3),
        },
    ).map(lambda value: json.dumps(value, allow_nan=True).encode())
)
@example(body=PATHOLOGICAL_BODIES[0])
@example(body=PATHOLOGICAL_BODIES[3])
def test_picod_execute_refuses_bad_bodies(
    shared_cube: embedded.RunningLocalCube, sessions: dict[str, str], body: bytes
) -> None:
    """Bodies that bind run `echo` (200) or are refused (400, Go's binding error; nesting too
    deep: `exceeded max depth`): generated commands are only ever `echo`, so nothing runs
    that could harm the machine.

    Upstream: pkg/picod/execute.go:57-63"""
    try:
        command = json.loads(body).get("command")
    except (ValueError, RecursionError, AttributeError):
        command = None
    if isinstance(command, list) and command and command[0] != "echo":
        body = b"{}"  # never run a generated program
    answer = call(
        "POST",
        picod(shared_cube, "/api/execute"),
        data=body,
        headers={SESSION_HEADER: sessions["python-interpreter"]},
    )
    assert_picod_answer(answer)


upload_paths = st.text(string.ascii_letters + string.digits + "/._ -", min_size=1, max_size=16)


@bounded
@given(
    as_json=json_object("path", "content", "mode")
    | st.fixed_dictionaries(
        {"path": upload_paths.filter(lambda p: ".." not in p), "content": st.text(max_size=12)},
        optional={"mode": st.text(max_size=5)},
    ).map(lambda value: json.dumps(value).encode()),
    form=multipart_bodies,
)
@pytest.mark.slow
@example(as_json=PATHOLOGICAL_BODIES[4], form=b"--fz--\r\n")
def test_picod_upload_refuses_bad_bodies(
    shared_cube: embedded.RunningLocalCube, sessions: dict[str, str], as_json: bytes, form: bytes
) -> None:
    """JSON and multipart uploads: written (200) or refused (400), never outside the
    workspace (generated paths to write never hold `..`)."""
    if b".." in as_json:
        as_json = b"{}"
    url = picod(shared_cube, "/api/files")
    session = {SESSION_HEADER: sessions["python-interpreter"]}
    assert_picod_answer(call("POST", url, data=as_json, headers=session))
    multipart = {**session, "Content-Type": "multipart/form-data; boundary=fz"}
    assert_picod_answer(call("POST", url, data=form, headers=multipart))


@bounded
@given(path=paths | st.text(max_size=20), ranged=st.none() | header_values)
def test_picod_reads_refuse_bad_paths(
    shared_cube: embedded.RunningLocalCube,
    sessions: dict[str, str],
    path: str,
    ranged: str | None,
) -> None:
    """Listing and downloading any path (`..` too: reading is harmless) never fails."""
    headers = {SESSION_HEADER: sessions["python-interpreter"]}
    if ranged is not None:
        headers["Range"] = ranged
    listing = call("GET", picod(shared_cube, "/api/files"), params={"path": path}, headers=headers)
    assert_picod_answer(listing)
    download = call("GET", picod(shared_cube, f"/api/files/{quote(path)}"), headers=headers)
    assert_picod_answer(download)
