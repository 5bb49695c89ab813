"""Measure localcube's latencies side by side in one run: min / median / p95 / max, and ratios.

1. Calls in a session, through the Router versus directly on the same sandbox, interleaved
   so that both see the same machine: PicoD's `/api/execute` (with a valid Router JWT) and
   `/health`, and the echo agent's `/echo` over a reused connection.
2. Cold starts (create to first answer) versus warm claims, alternating: a session of an
   interpreter without a pool, one from a warm pool, and an echo-agent session opened by
   its first call.

Run: .venv/bin/python bench/localcube_latency.py [--calls 300] [--sessions 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from localcube import embedded
from localcube.signing import RequestSigner

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "runtimes"
SESSION_HEADER = "x-agentcube-session-id"
INTERPRETER = "/v1/namespaces/default/code-interpreters/python-interpreter/invocations"
AGENT = "/v1/namespaces/default/agent-runtimes/echo-agent/invocations"


def timed(call: Callable[[], requests.Response]) -> float:
    started = time.perf_counter()
    answer = call()
    elapsed = time.perf_counter() - started
    answer.raise_for_status()
    return elapsed * 1000


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def median(samples: list[float]) -> float:
    return statistics.median(samples)


TABLE_HEAD = ["| what | min ms | median ms | p95 ms | max ms |", "|---|---|---|---|---|"]


def row(name: str, samples: list[float]) -> str:
    figures = (min(samples), median(samples), percentile(samples, 0.95), max(samples))
    return f"| {name} | " + " | ".join(f"{figure:.2f}" for figure in figures) + " |"


def endpoint_of(http: requests.Session, url: str, session: str) -> str:
    sandboxes = http.get(f"{url}/localcube/v1/sandboxes", timeout=10).json()["sandboxes"]
    return next(box["endpoint"] for box in sandboxes if box["sessionId"] == session)


def in_session_calls(url: str, state_dir: Path, calls: int) -> list[str]:
    http = requests.Session()
    execute = {"command": ["true"]}
    first = http.post(f"{url}{INTERPRETER}/api/execute", json=execute, timeout=30)
    interpreter = first.headers[SESSION_HEADER]
    first = http.post(f"{url}{AGENT}/echo", json={"input": "hello"}, timeout=30)
    agent = first.headers[SESSION_HEADER]
    picod, echo = endpoint_of(http, url, interpreter), endpoint_of(http, url, agent)
    token = RequestSigner(state_dir).token_for(interpreter)
    to_interpreter, to_agent = {SESSION_HEADER: interpreter}, {SESSION_HEADER: agent}
    signed = {"Authorization": f"Bearer {token}"}
    echo_body = {"input": "hello"}
    calls_by_name: dict[str, Callable[[], requests.Response]] = {
        "`/api/execute` via Router": lambda: http.post(
            f"{url}{INTERPRETER}/api/execute", json=execute, headers=to_interpreter
        ),
        "`/api/execute` direct": lambda: http.post(
            f"http://{picod}/api/execute", json=execute, headers=signed
        ),
        "`/health` via Router": lambda: http.get(
            f"{url}{INTERPRETER}/health", headers=to_interpreter
        ),
        "`/health` direct": lambda: http.get(f"http://{picod}/health"),
        "echo agent `/echo` via Router": lambda: http.post(
            f"{url}{AGENT}/echo", json=echo_body, headers=to_agent
        ),
        "echo agent `/echo` direct": lambda: http.post(f"http://{echo}/echo", json=echo_body),
    }
    results: dict[str, list[float]] = {name: [] for name in calls_by_name}
    for _ in range(calls):
        for name, call in calls_by_name.items():
            results[name].append(timed(call))
    for kind, session in (("code-interpreter", interpreter), ("agent-runtime", agent)):
        http.delete(f"{url}/v1/{kind}/sessions/{session}", timeout=30)
    medians = {name: median(samples) for name, samples in results.items()}
    names = list(results)
    ratios = ", ".join(
        f"{label} {medians[names[i]] / medians[names[i + 1]]:.2f}x"
        for label, i in (("execute", 0), ("health", 2), ("echo", 4))
    )
    return [
        f"### Calls in a session ({calls} each, interleaved, one reused connection)",
        "",
        *TABLE_HEAD,
        *(row(name, samples) for name, samples in results.items()),
        "",
        f"median ratio Router/direct: {ratios}",
    ]


def cold_and_warm_starts(url: str, sessions: int) -> list[str]:
    http = requests.Session()
    results: dict[str, list[float]] = {
        "interpreter, cold (no pool)": [],
        "interpreter, warm pool": [],
        "echo agent, cold (first call)": [],
    }
    created: list[tuple[str, str]] = []

    def interpreter(name: str) -> requests.Response:
        return http.post(
            f"{url}/v1/code-interpreter", json={"name": name, "namespace": "default"}, timeout=60
        )

    starts: dict[str, Callable[[], requests.Response]] = {
        "interpreter, cold (no pool)": lambda: interpreter("python-interpreter"),
        "interpreter, warm pool": lambda: interpreter("python-interpreter-warm"),
        "echo agent, cold (first call)": lambda: http.post(
            f"{url}{AGENT}/echo", json={"input": "first"}, timeout=60
        ),
    }
    for _ in range(sessions):
        wait_for_full_pool(http, url, "python-interpreter-warm", 2)
        for name, start in starts.items():
            started = time.perf_counter()
            answer = start()
            results[name].append((time.perf_counter() - started) * 1000)
            answer.raise_for_status()
            if name.startswith("echo"):
                created.append(("agent-runtime", answer.headers[SESSION_HEADER]))
            else:
                created.append(("code-interpreter", answer.json()["sessionId"]))
    for kind, session in created:
        http.delete(f"{url}/v1/{kind}/sessions/{session}", timeout=30)
    cold, warm, agent = (median(samples) for samples in results.values())
    return [
        f"### Cold starts and warm claims, create to first answer ({sessions} each, alternating)",
        "",
        *TABLE_HEAD,
        *(row(name, samples) for name, samples in results.items()),
        "",
        f"median ratio cold/warm: interpreter {cold / warm:.1f}x, echo agent {agent / warm:.1f}x",
    ]


def wait_for_full_pool(http: requests.Session, url: str, runtime: str, size: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        boxes = http.get(f"{url}/localcube/v1/sandboxes", timeout=10).json()["sandboxes"]
        if sum(1 for b in boxes if b["runtime"] == runtime and b["state"] == "warm") >= size:
            return
        time.sleep(0.05)
    raise TimeoutError(f"the warm pool of {runtime} did not refill")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--sessions", type=int, default=20)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        state_dir = Path(scratch) / "state"
        cube = embedded.start([FIXTURES], Path(scratch) / "localcube.log", state_dir=state_dir)
        try:
            report = in_session_calls(cube.url, state_dir, options.calls)
            report += ["", *cold_and_warm_starts(cube.url, options.sessions)]
        finally:
            cube.stop()
    print("\n".join(report))


if __name__ == "__main__":
    main()
