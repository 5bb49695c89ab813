"""Code-interpreter sandboxes forked from the PicoD template: each a fresh daemon, as one
started by exec; the template's failures and its end."""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import subprocess
import time
from pathlib import Path

import pytest

from localcube.manifests import load_paths
from localcube.sandboxing.launcher import SandboxLauncher, process_start_time
from localcube.sandboxing.picod_template import SandboxTemplate, TemplateError
from tests.localcube.support import FIXTURES, SESSION_HEADER, Client
from tests.waiting import wait_until

INTERPRETER = "python-interpreter"
MEMORY_LIMIT = 512 << 20  # fixtures/runtimes/python-interpreter.yaml


def status_field(pid: int, name: str) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return line.split(":", 1)[1].strip()
    raise LookupError(name)


def children_of(pid: int) -> list[int]:
    return [
        int(entry)
        for entry in os.listdir("/proc")
        if entry.isdigit() and _parent_of(int(entry)) == pid
    ]


def _parent_of(pid: int) -> int | None:
    try:
        return int(status_field(pid, "PPid"))
    except (FileNotFoundError, ProcessLookupError, LookupError):
        return None


def sandbox_pid(client: Client, session: str) -> int:
    sandbox = client.sandbox_of(session)
    assert sandbox is not None
    return sandbox["pid"]


def test_a_forked_sandbox_is_a_daemon_of_its_own(client: Client) -> None:
    """Its own session, its workspace, only the sandbox's environment, its memory limit."""
    answer = client.execute(INTERPRETER, ["env", "-0"])
    pid = sandbox_pid(client, answer.headers[SESSION_HEADER])
    assert os.getsid(pid) == pid
    workspace = Path(os.readlink(f"/proc/{pid}/cwd"))
    assert workspace.name == "workspace"
    environ = dict(entry.split("=", 1) for entry in answer.json()["stdout"].split("\0") if entry)
    assert environ["HOME"] == str(workspace)
    assert "PYTHONPATH" not in environ  # the template's, not the sandbox's
    assert resource.prlimit(pid, resource.RLIMIT_DATA) == (MEMORY_LIMIT, MEMORY_LIMIT)
    assert os.readlink(f"/proc/{pid}/fd/0") == os.devnull
    assert os.readlink(f"/proc/{pid}/fd/1").endswith("/sandbox.log")
    assert sorted(os.listdir(f"/proc/{pid}/fd"))[:3] == ["0", "1", "2"]


@pytest.mark.slow
def test_the_template_ends_when_localcube_dies_and_its_sandboxes_live_on(
    tmp_path: Path, start_localcube
) -> None:
    state = tmp_path / "state"
    cube = start_localcube(state_dir=state)
    client = Client(cube.url)
    session = client.execute(INTERPRETER, ["true"]).headers[SESSION_HEADER]
    sandbox = sandbox_pid(client, session)
    templates = [pid for pid in children_of(cube.pid) if os.getsid(pid) != pid]
    assert len(templates) == 1 and _parent_of(sandbox) == templates[0]
    cube.crash()
    wait_until(lambda: _parent_of(templates[0]) is None, "the template to end with localcube")
    assert _parent_of(sandbox) is not None
    start_localcube(state_dir=state)  # adopts the sandboxes, and ends them when it stops


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 30))


def test_a_daemon_that_exits_before_it_listens_reports_its_exit_code(tmp_path: Path) -> None:
    async def scenario() -> tuple[int, bool]:
        template = SandboxTemplate()
        try:
            forked = await template.fork(
                ["--auth", "neither"], tmp_path, {"PORT": "1"}, tmp_path / "log", None
            )
            code = await forked.exited
            return code, forked.listening.done()
        finally:
            await template.close()

    assert run(scenario()) == (2, False)  # argparse's exit code for a bad choice
    assert "invalid choice: 'neither'" in (tmp_path / "log").read_text()


def test_a_fork_the_template_dies_before_answering_fails(tmp_path: Path) -> None:
    async def scenario() -> None:
        template = SandboxTemplate()
        try:
            await template.start()
            process = template._process
            assert process is not None
            os.kill(process.pid, signal.SIGSTOP)  # it cannot answer the request
            pending = asyncio.ensure_future(
                template.fork(["--auth", "none"], tmp_path, {}, tmp_path / "log", None)
            )
            await asyncio.sleep(0.05)
            process.kill()
            with pytest.raises(TemplateError, match="cannot fork: the PicoD template exited"):
                await pending
        finally:
            await template.close()

    run(scenario())


def test_a_template_that_died_is_started_again(tmp_path: Path) -> None:
    async def scenario() -> None:
        template = SandboxTemplate()
        try:
            await template.start()
            first = template._process
            assert first is not None
            first.kill()
            await first.wait()
            env = {"PORT": "0", "HOST": "127.0.0.1"}
            forked = await template.fork(["--auth", "none"], tmp_path, env, tmp_path / "log", None)
            await forked.listening
            assert template._process is not first
            os.kill(forked.pid.result(), signal.SIGTERM)
            assert await forked.exited == 0
        finally:
            await template.close()

    run(scenario())


def test_a_start_cancelled_while_the_template_forks_ends_what_it_forked(tmp_path: Path) -> None:
    """A client that goes away cancels the start; the fork still happens, and is ended."""
    (runtime,) = [r for r in load_paths([FIXTURES]) if r.name == INTERPRETER]
    (tmp_path / "sandboxes").mkdir()

    async def scenario() -> None:
        launcher = SandboxLauncher(tmp_path / "sandboxes", "", ready_timeout=10)
        try:
            await launcher.open()
            template = launcher._template._process
            assert template is not None
            os.kill(template.pid, signal.SIGSTOP)  # the request waits for its pid
            starting = asyncio.ensure_future(launcher.start(runtime, "cancelled"))
            await asyncio.sleep(0.1)
            starting.cancel()
            os.kill(template.pid, signal.SIGCONT)
            with pytest.raises(asyncio.CancelledError):
                await starting
            deadline = time.monotonic() + 5
            while children_of(template.pid) and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert children_of(template.pid) == []
            assert not (tmp_path / "sandboxes" / "cancelled").exists()
            assert launcher.ports.reserved == frozenset()
        finally:
            await launcher.close()

    run(scenario())


def test_a_sandbox_ended_before_it_leads_its_session_is_killed(tmp_path: Path) -> None:
    """The template reports a fork's pid before the child calls setsid, so a start cancelled
    at once (localcube stopping while its warm pool forks) can end a sandbox still in the
    template's session. It must die all the same, not go on to become a daemon: here a
    process of this test's session stands for such a child."""
    directory = tmp_path / "sandboxes" / "not-yet-a-leader"
    directory.mkdir(parents=True)
    child = subprocess.Popen(["sleep", "60"])
    assert os.getsid(child.pid) != child.pid

    async def scenario() -> None:
        launcher = SandboxLauncher(tmp_path / "sandboxes", "", ready_timeout=10)
        try:
            await launcher.end(child.pid, process_start_time(child.pid) or "", directory)
        finally:
            await launcher.close()

    run(scenario())
    ended = child.poll()
    if ended is None:
        child.kill()
        child.wait()
    assert ended == -signal.SIGKILL, f"the ended sandbox was left running (exit {ended})"
    assert not directory.exists()
