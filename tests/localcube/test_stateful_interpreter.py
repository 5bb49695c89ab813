"""The stateful interpreter, a localcube extension: one Jupyter kernel per session, reached
through the Router with POST /api/run_code in the shape of E2B's run_code."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path

import pytest
import requests
from jupyter_client.asynchronous import AsyncKernelClient

from localcube.manifests import ManifestError, parse_documents
from localcube.picod.commands import ProcessGroups
from localcube.picod.kernel import Execution, Kernel
from localcube.sandboxing.launcher import process_start_time
from tests.localcube.support import FIXTURES, SESSION_HEADER, Client
from tests.waiting import wait_until

STATEFUL = "python-interpreter-stateful"


def run_code(client: Client, session: str, code: str, **fields: object) -> requests.Response:
    return client.interpreter(STATEFUL, "/api/run_code", session, json={"code": code, **fields})


def new_session(client: Client) -> str:
    return client.execute(STATEFUL, ["true"]).headers[SESSION_HEADER]


def test_a_variable_defined_by_one_run_is_defined_in_the_next(client: Client) -> None:
    session = new_session(client)
    first = run_code(client, session, "x = 10\nprint('defined')\nx + 1")
    assert first.status_code == 200, first.text
    assert first.json() == {
        "results": [{"is_main_result": True, "text": "11"}],
        "logs": {"stdout": ["defined\n"], "stderr": []},
        "error": None,
        "execution_count": 1,
    }
    second = run_code(client, session, "import sys\nprint(x)\nprint('warned', file=sys.stderr)")
    assert second.headers[SESSION_HEADER] == session
    assert second.json()["logs"] == {"stdout": ["10\n"], "stderr": ["warned\n"]}
    assert second.json()["execution_count"] == 2


def test_commands_stay_stateless_beside_the_kernel(client: Client) -> None:
    session = new_session(client)
    run_code(client, session, "x = 10")
    command = client.execute(STATEFUL, ["python3", "-c", "print(x)"], session)
    assert command.json()["exit_code"] == 1
    assert "NameError" in command.json()["stderr"]


def test_an_error_is_answered_in_the_execution_and_the_session_goes_on(client: Client) -> None:
    session = new_session(client)
    failed = run_code(client, session, "y")
    assert failed.status_code == 200, failed.text
    error = failed.json()["error"]
    assert (error["name"], error["value"]) == ("NameError", "name 'y' is not defined")
    assert "\x1b[" not in error["traceback"] and "NameError" in error["traceback"]
    assert run_code(client, session, "print(2)").json()["logs"]["stdout"] == ["2\n"]


def test_a_run_past_its_timeout_is_interrupted_and_the_state_kept(client: Client) -> None:
    session = new_session(client)
    run_code(client, session, "x = 10")
    slow = run_code(client, session, "import time\ntime.sleep(30)", timeout=0.5)
    assert slow.status_code == 200
    assert slow.json()["error"]["name"] == "TimeoutError"
    assert slow.json()["error"]["value"] == "Execution timed out after 0.5 seconds"
    assert "KeyboardInterrupt" in slow.json()["error"]["traceback"]
    assert run_code(client, session, "print(x)").json()["logs"]["stdout"] == ["10\n"]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({}, "code must be a non-empty string"),
        ({"code": "  "}, "code must be a non-empty string"),
        ({"code": 1}, "code must be a non-empty string"),
        ({"code": "1", "language": "r"}, "language 'r' is not supported: only python"),
        ({"code": "1", "timeout": 0}, "timeout must be a positive number of seconds"),
        ({"code": "1", "timeout": "5s"}, "timeout must be a positive number of seconds"),
        ({"code": "1", "timeout": True}, "timeout must be a positive number of seconds"),
        ([], "the request must be a JSON object"),
    ],
)
def test_a_request_it_cannot_take_is_refused(client: Client, body: object, error: str) -> None:
    session = new_session(client)
    answer = client.interpreter(STATEFUL, "/api/run_code", session, json=body)
    assert (answer.status_code, answer.json()) == (400, {"code": 400, "error": error})


def test_a_body_that_is_not_json_is_refused(client: Client) -> None:
    session = new_session(client)
    answer = client.interpreter(
        STATEFUL, "/api/run_code", session, method="POST", data=b"{not json"
    )
    assert answer.status_code == 400
    assert answer.json()["error"].startswith("invalid JSON: ")


def test_a_dead_kernel_ends_the_sandbox_as_a_crash_does(client: Client) -> None:
    session = new_session(client)
    run_code(client, session, "x = 10")
    sandbox = client.sandbox_of(session)
    death = run_code(client, session, "import os\nos._exit(3)")
    assert death.status_code == 500
    assert death.json()["error"] == (
        "the session's kernel died (the kernel exited with code 3): "
        "its state is lost, the sandbox ends"
    )
    wait_until(
        lambda: process_start_time(sandbox["pid"]) is None, "the sandbox to end with its kernel"
    )
    after = run_code(client, session, "print(x)")
    assert after.status_code == 502, after.text
    assert "sandbox unreachable" in after.json()["error"]


def test_the_kernel_ends_with_its_session_and_leaves_the_workspace_alone(client: Client) -> None:
    session = new_session(client)
    pid = int(
        run_code(client, session, "import os\nprint(os.getpid())").json()["logs"]["stdout"][0]
    )
    listing = client.interpreter(STATEFUL, "/api/files", session, params={"path": "."})
    assert listing.json()["files"] == []
    assert client.delete_session("code-interpreter", session).status_code == 200
    assert process_start_time(pid) is None


def test_a_stateless_interpreter_has_no_run_code(client: Client) -> None:
    session = client.execute("python-interpreter", ["true"]).headers[SESSION_HEADER]
    answer = client.interpreter("python-interpreter", "/api/run_code", session, json={"code": "1"})
    assert answer.status_code == 404


def test_the_annotation_chooses_the_interpreter() -> None:
    fixture = (FIXTURES / "python-interpreter.yaml").read_text()
    kinds = {runtime.name: runtime.stateful for runtime in parse_documents(fixture, "fixture")}
    assert kinds == {
        "python-interpreter": False,
        "python-interpreter-warm": False,
        STATEFUL: True,
    }
    odd = fixture.replace("interpreter: stateful", "interpreter: sometimes")
    with pytest.raises(ManifestError, match=r"annotations\[.*\] must be stateless or stateful"):
        parse_documents(odd, "odd")


def test_the_kernel_listens_on_no_port_and_only_to_signed_messages(client: Client) -> None:
    session = new_session(client)
    run_code(client, session, "1")
    workspace = Path(client.sandbox_of(session)["workspace"])
    connection = workspace.parent / "kernel" / "kernel.json"
    info = json.loads(connection.read_text())
    assert info["transport"] == "ipc" and info["ip"].startswith("@")  # an abstract socket
    assert len(info["key"]) == 64
    assert stat.S_IMODE(connection.stat().st_mode) == 0o600


def test_a_missed_heartbeat_while_the_kernel_starts_is_not_its_death(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """jupyter_client's wait_for_ready takes a heartbeat missed by a kernel busy starting on
    a loaded machine for its death ("Kernel died before replying to kernel_info"); the
    kernel, whose process lives, is waited for again and runs the code."""
    ready = AsyncKernelClient.wait_for_ready
    missed: list[float | None] = []

    async def missing_a_beat_once(client: AsyncKernelClient, timeout: float | None = None):
        if not missed:
            missed.append(timeout)
            raise RuntimeError("Kernel died before replying to kernel_info")
        return await ready(client, timeout=timeout)

    monkeypatch.setattr(AsyncKernelClient, "wait_for_ready", missing_a_beat_once)
    deaths: list[str] = []

    async def run_once() -> Execution:
        (tmp_path / "workspace").mkdir()
        kernel = Kernel(tmp_path / "workspace", tmp_path / "kernel", ProcessGroups(), deaths.append)
        await kernel.start()
        try:
            return await kernel.run("1 + 1", 30)
        finally:
            await kernel.stop()

    execution = asyncio.run(run_once())
    assert missed, "the readiness check did not miss"
    assert [result.get("text") for result in execution.results] == ["2"], execution
    assert deaths == []
