"""How the sustained-load scenarios tell one session's failure from another, and how the
scenarios that call at the same moment keep within the Router's declared concurrency limit:
against a localcube limited below 20, the 20 sessions are opened a limit's worth at a time,
while the overload scenario still proves the Router's refusal past that limit."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

from acceptance.core.settings import load_settings
from acceptance.domain.load import error_kind, in_waves, within_the_limit
from tests.conftest import StartLocalCube
from tests.suite.commands import run_behave
from tests.suite.conftest import MakeAnswer

LIMIT = 4

SESSION = {"x-agentcube-session-id": "3b1f8a52-0c1e-4a7e-9d59-2f4c1d6e7a10"}


def test_a_session_that_printed_what_it_was_asked_succeeded(answer: MakeAnswer) -> None:
    assert error_kind(answer(200, {"stdout": "hi\n"}, headers=SESSION), "hi\n") is None


@pytest.mark.parametrize(
    ("status", "body", "headers", "kind"),
    [
        (503, {"error": "sandbox unreachable"}, {}, "status 503: sandbox unreachable"),
        (500, b"Internal Server Error", {}, "status 500"),
        (200, {"stdout": "hi\n"}, {}, "no session id in the answer"),
        (200, b"<html>", SESSION, "an answer that is not PicoD's JSON"),
        (200, {"stdout": "other\n"}, SESSION, "wrong output"),
    ],
)
def test_each_failure_has_its_kind(
    answer: MakeAnswer, status: int, body: object, headers: dict[str, str], kind: str
) -> None:
    assert error_kind(answer(status, body, headers=headers), "hi\n") == kind


def test_as_many_at_once_as_declared_or_all_when_nothing_is_declared() -> None:
    assert within_the_limit(load_settings({}, {}), 20) == 20
    assert within_the_limit(load_settings({"max_concurrent_requests": "4"}, {}), 20) == 4
    assert within_the_limit(load_settings({"max_concurrent_requests": "50"}, {}), 20) == 20


def test_waves_never_call_more_at_once_than_asked_and_keep_the_order() -> None:
    in_flight, most = 0, 0
    lock = threading.Lock()

    def call(number: int) -> int:
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        time.sleep(0.02)
        with lock:
            in_flight -= 1
        return number

    assert in_waves(10, 4, call, gather_timeout=5) == list(range(10))
    assert most == 4  # the last wave has 2: a barrier of 4 would never have opened


@pytest.mark.slow
def test_a_router_limited_below_20_passes_the_concurrency_scenarios_when_declared(
    start_localcube: StartLocalCube, tmp_path: Path
) -> None:
    """Opened all at once, 16 of the 20 sessions would meet the Router's rightful 429."""
    cube = start_localcube(extra_arguments=["--max-concurrent-requests", str(LIMIT)])
    status, output = run_behave(
        "features/concurrency.feature",
        "-f",
        "plain",
        f"--define=router_url={cube.url}",
        "--define=platform=localcube",
        f"--define=max_concurrent_requests={LIMIT}",
        f"--define=reports_dir={tmp_path}",
        "--junit",
        f"--junit-directory={tmp_path / 'junit'}",
        timeout=240,
        AGENTCUBE_MAX_CONCURRENT_REQUESTS="",
    )
    assert status == 0, output
    assert ": 2 passed, 0 failed" in output, output
    assert re.search(rf"first call \(cold start\), {LIMIT} at once +20 ", output), output
    junit = "".join(path.read_text() for path in (tmp_path / "junit").glob("*.xml"))
    assert f"20 sessions opened {LIMIT} at a time: the declared max_concurrent_requests is" in (
        junit
    )
