"""Code-interpreter sessions through the Router: execution, files, jail, isolation, JWT."""

from __future__ import annotations

import base64
import http.client
import json
import sys
from pathlib import Path

import requests

from tests.localcube.support import SESSION_HEADER, Client

INTERPRETER = "python-interpreter"


def upload(client: Client, session: str, path: str, content: bytes) -> requests.Response:
    body = {"path": path, "content": base64.b64encode(content).decode()}
    return client.interpreter(INTERPRETER, "/api/files", session, json=body)


def new_session(client: Client) -> str:
    return client.execute(INTERPRETER, ["true"]).headers[SESSION_HEADER]


def test_code_runs_in_a_session_created_on_the_first_call(client: Client) -> None:
    answer = client.execute(INTERPRETER, ["python3", "-c", "print(1+1)"])
    assert answer.status_code == 200
    assert answer.json()["stdout"] == "2\n"
    assert answer.json()["exit_code"] == 0
    assert answer.headers[SESSION_HEADER]


def test_python3_in_a_sandbox_is_a_bare_python_of_localcubes_version(client: Client) -> None:
    """Not a version manager's shim, nor localcube's environment with its packages: the
    standard library alone, as in the fixtures' python image."""
    code = "import sys; print(sys.version_info[:2], sys.prefix != sys.base_prefix, sys.path[-1])"
    answer = client.execute(INTERPRETER, ["python3", "-c", code])
    version, in_environment, site = answer.json()["stdout"].rsplit(maxsplit=2)
    assert (version, in_environment) == (str(tuple(sys.version_info[:2])), "True")
    assert not any(Path(site).iterdir())  # an empty site-packages: nothing installed


def test_interpreter_state_is_not_kept_but_files_are(client: Client) -> None:
    session = new_session(client)
    first = client.execute(
        INTERPRETER, ["python3", "-c", "x = 10; open('x.txt', 'w').write('10')"], session
    )
    assert first.json()["exit_code"] == 0
    second = client.execute(INTERPRETER, ["python3", "-c", "print(x)"], session)
    assert second.json()["exit_code"] == 1
    assert "NameError" in second.json()["stderr"]
    third = client.execute(INTERPRETER, ["cat", "x.txt"], session)
    assert third.json()["stdout"] == "10"


def test_files_upload_list_and_download(client: Client) -> None:
    session = new_session(client)
    assert upload(client, session, "data/in.txt", b"payload").json()["size"] == 7
    listing = client.interpreter(INTERPRETER, "/api/files", session, params={"path": "data"})
    assert [entry["name"] for entry in listing.json()["files"]] == ["in.txt"]
    download = client.interpreter(INTERPRETER, "/api/files/data/in.txt", session)
    assert download.content == b"payload"
    assert "attachment" in download.headers["Content-Disposition"]


def test_a_command_past_its_timeout_gives_124_and_the_session_goes_on(client: Client) -> None:
    session = new_session(client)
    slow = client.execute(INTERPRETER, ["sleep", "5"], session, timeout="300ms")
    assert slow.json()["exit_code"] == 124
    assert "Command timed out after 0 seconds" in slow.json()["stderr"]
    assert client.execute(INTERPRETER, ["echo", "next"], session).json()["stdout"] == "next\n"


def test_paths_outside_the_workspace_are_refused_and_nothing_is_written(client: Client) -> None:
    session = new_session(client)
    workspace = Path(client.sandbox_of(session)["workspace"])
    outside = workspace.parent
    client.execute(INTERPRETER, ["ln", "-s", str(outside), "escape"], session)
    before = sorted(p.name for p in outside.iterdir())
    for path in ("../planted.txt", "escape/planted.txt", "a/../../planted.txt"):
        answer = upload(client, session, path, b"x")
        assert answer.status_code == 400, path
        assert "escapes workspace jail" in answer.json()["error"]
    listing = client.interpreter(INTERPRETER, "/api/files", session, params={"path": "escape"})
    assert listing.status_code == 400
    download = client.interpreter(INTERPRETER, "/api/files/escape/sandbox.log", session)
    assert download.status_code == 400
    outside_dir = client.execute(INTERPRETER, ["pwd"], session, working_dir="../")
    assert outside_dir.status_code == 400
    assert sorted(p.name for p in outside.iterdir()) == before


def test_an_absolute_path_is_taken_inside_the_workspace(client: Client) -> None:
    session = new_session(client)
    assert upload(client, session, "/etc/localcube-test.txt", b"inside").status_code == 200
    workspace = Path(client.sandbox_of(session)["workspace"])
    assert (workspace / "etc" / "localcube-test.txt").read_bytes() == b"inside"
    assert not Path("/etc/localcube-test.txt").exists()


def test_sessions_do_not_see_each_others_files(client: Client) -> None:
    first, second = new_session(client), new_session(client)
    upload(client, first, "notes.txt", b"first")
    upload(client, second, "notes.txt", b"second")
    assert client.interpreter(INTERPRETER, "/api/files/notes.txt", first).content == b"first"
    assert client.interpreter(INTERPRETER, "/api/files/notes.txt", second).content == b"second"
    upload(client, first, "only-first.txt", b"1")
    assert client.interpreter(INTERPRETER, "/api/files/only-first.txt", second).status_code == 404


def test_an_oversized_upload_is_413(client: Client) -> None:
    session = new_session(client)
    files = {"file": ("big.bin", b"\0" * (33 * 1024 * 1024))}
    answer = client.interpreter(
        INTERPRETER, "/api/files", session, files=files, data={"path": "big.bin"}
    )
    assert answer.status_code == 413
    assert answer.headers[SESSION_HEADER] == session


def test_a_sandbox_refuses_calls_that_bypass_the_router(client: Client) -> None:
    session = new_session(client)
    endpoint = client.sandbox_of(session)["endpoint"]
    direct = requests.post(f"http://{endpoint}/api/execute", json={"command": ["id"]}, timeout=10)
    assert direct.status_code == 401
    forged = requests.post(
        f"http://{endpoint}/api/execute",
        json={"command": ["id"]},
        headers={"Authorization": "Bearer eyJhbGciOiJub25lIn0.e30."},
        timeout=10,
    )
    assert forged.status_code == 401


def test_dot_segments_reach_the_sandbox_as_sent(client: Client) -> None:
    """The Router forwards the raw path (as upstream does); the sandbox's jail refuses it."""
    session = new_session(client)
    host = client.url.removeprefix("http://")
    connection = http.client.HTTPConnection(host, timeout=10)
    path = f"/v1/namespaces/default/code-interpreters/{INTERPRETER}/invocations/api/files/../x"
    connection.request("GET", path, headers={SESSION_HEADER: session})
    answer = connection.getresponse()
    assert answer.status == 400
    assert "escapes workspace jail" in json.loads(answer.read())["error"]
    connection.close()
