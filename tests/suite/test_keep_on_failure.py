"""`-D keep_on_failure=true`: a failed scenario's session survives the run, localcube with it,
and the end of the run says how to reach both; the call it prints really reaches the session.

The scenario is made to fail by expecting a stateful interpreter from localcube, whose
interpreters are stateless.
"""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest
import requests

from tests.suite.commands import run_behave

_REACH = re.compile(
    r"-H 'x-agentcube-session-id: (?P<session>[0-9a-f-]+)' -H 'Content-Type: application/json' "
    r"-d '(?P<body>[^']*)' (?P<url>\S+) ; delete it with curl .*-X DELETE (?P<delete>\S+)"
)
_TOKENS = re.compile(r"export AGENTCUBE_API_TOKEN=\$\(cat (?P<path>\S+)\)")
_LOCALCUBE = re.compile(r"localcube keeps running at (?P<url>\S+) \(pid (?P<pid>\d+),")


def stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_a_failed_scenario_keeps_its_session_and_says_how_to_reach_it(tmp_path: Path) -> None:
    status, output = run_behave(
        "--format=null",
        "--name=still defined in the next",
        "--define=stateful_interpreter=python-interpreter",  # a stateless one: it fails
        "--define=keep_on_failure=true",
        f"--define=reports_dir={tmp_path}",
        timeout=120,
    )
    localcube = _LOCALCUBE.search(output)
    assert localcube, output
    try:
        assert status == 1, output
        assert "Kept for inspection (3):" in output, output
        assert '-H "Authorization: Bearer $AGENTCUBE_API_TOKEN"' in output
        token_file = Path(_TOKENS.search(output)["path"])
        assert token_file.stat().st_mode & 0o777 == 0o600
        token = token_file.read_text().strip()
        assert token not in output
        reach = _REACH.search(output)
        assert reach, output
        authorization = {"Authorization": f"Bearer {token}"}
        answer = requests.post(
            reach["url"],
            data=reach["body"],
            headers={
                **authorization,
                "x-agentcube-session-id": reach["session"],
                "Content-Type": "application/json",
            },
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        assert answer.headers["x-agentcube-session-id"] == reach["session"]
        deleted = requests.delete(reach["delete"], headers=authorization, timeout=30)
        assert deleted.status_code == 200, deleted.text
    finally:
        stop(int(localcube["pid"]))
