"""The official agentcube-sdk from PyPI works unchanged against localcube."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentcube import AgentRuntimeClient, CodeInterpreterClient

from localcube.embedded import RunningLocalCube
from tests.localcube.support import Client


@pytest.fixture
def interpreter(shared_cube: RunningLocalCube):
    sdk = CodeInterpreterClient(
        name="python-interpreter",
        namespace="default",
        workload_manager_url=shared_cube.url,
        router_url=shared_cube.url,
    )
    yield sdk
    sdk.stop()


def test_code_interpreter_client_round_trip(interpreter, shared_cube, tmp_path: Path) -> None:
    session = interpreter.session_id
    assert interpreter.run_code("python", "print(6 * 7)") == "42\n"
    interpreter.write_file("hello from the sdk", "notes/hello.txt")
    local = tmp_path / "upload.txt"
    local.write_text("uploaded")
    interpreter.upload_file(str(local), "notes/upload.txt")
    names = sorted(entry["name"] for entry in interpreter.list_files("notes"))
    assert names == ["hello.txt", "upload.txt"]
    interpreter.download_file("notes/hello.txt", str(tmp_path / "back.txt"))
    assert (tmp_path / "back.txt").read_text() == "hello from the sdk"
    interpreter.stop()
    assert Client(shared_cube.url).sandbox_of(session) is None


def test_agent_runtime_client_invoke(shared_cube) -> None:
    with AgentRuntimeClient(agent_name="echo-agent", router_url=shared_cube.url) as agent:
        assert agent.session_id
        assert agent.invoke({"input": "from sdk"})["output"] == "echo: from sdk"
