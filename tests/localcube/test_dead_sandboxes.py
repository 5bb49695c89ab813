"""A session's sandbox that dies (kill -9, a crash) is reaped though its session is called:
what it started is killed, its calls answer 502 at once and do not count as activity, so
the session idles out (issue 11 item 4)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from tests.localcube.support import SESSION_HEADER, Client, derived_manifest, process_gone
from tests.waiting import wait_until

UNREACHABLE = {"error": "sandbox unreachable"}


def session_with_a_background_child(client: Client, interpreter: str) -> tuple[str, dict, int]:
    """A session whose sandbox started a process of its own: the session, its sandbox as
    the admin API shows it, and that process's pid."""
    spawned = client.execute(interpreter, ["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"])
    assert spawned.status_code == 200, spawned.text
    session = spawned.headers[SESSION_HEADER]
    return session, client.sandbox_of(session), int(spawned.json()["stdout"])


def test_a_sandbox_killed_while_its_session_is_called_is_reaped(start_localcube) -> None:
    """Upstream: pkg/router/handlers.go:246-251"""
    client = Client(start_localcube().url)
    session, sandbox, child = session_with_a_background_child(client, "python-interpreter")
    os.kill(sandbox["pid"], signal.SIGKILL)  # the sandbox only: its child lives on
    wait_until(lambda: process_gone(sandbox["pid"]), "the killed sandbox to be gone", timeout=5)

    def called_and_reaped() -> bool:
        answer = client.execute("python-interpreter", ["true"], session=session)
        assert answer.status_code == 502, answer.text
        assert answer.json() == UNREACHABLE
        # Its processes end first, then its workspace goes.
        return process_gone(child) and not Path(sandbox["workspace"]).exists()

    wait_until(
        called_and_reaped, "the dead sandbox's child and workspace to go", timeout=5, poll=0.1
    )
    lost = client.sandbox_of(session)
    assert (lost["state"], lost["alive"], lost["callsInFlight"]) == ("lost", False, 0)
    assert client.delete_session("code-interpreter", session).status_code == 200
    assert client.execute("python-interpreter", ["true"], session=session).status_code == 404


def test_a_session_whose_sandbox_died_idles_out_though_it_is_called(
    tmp_path: Path, start_localcube
) -> None:
    """Upstream counts every call as activity, the failed ones too: there a session whose
    pod is gone never idles out while it is called.

    Upstream: pkg/router/handlers.go:78-89"""
    manifest = derived_manifest(tmp_path, "python-interpreter", "dies", sessionTimeout="2s")
    client = Client(start_localcube([manifest]).url)
    session, sandbox, _ = session_with_a_background_child(client, "dies")
    os.killpg(sandbox["pid"], signal.SIGKILL)
    killed_at = time.monotonic()
    wait_until(lambda: process_gone(sandbox["pid"]), "the killed sandbox to be gone", timeout=5)

    def ended() -> bool:
        answer = client.execute("dies", ["true"], session=session)
        assert answer.status_code in (502, 404), answer.text
        return answer.status_code == 404

    wait_until(ended, "the session of the dead sandbox to idle out", timeout=8, poll=0.2)
    assert time.monotonic() - killed_at >= 1.0, "it idled out, not ended at once"
    assert client.sandbox_of(session) is None
