"""Measure localcube's overheads side by side in one run and print the ratios.

1. `/api/execute` (and PicoD's `/health`) through the Router versus a direct call to the
   same sandbox with a valid Router JWT, requests interleaved so both see the same machine.
2. Session creation on an interpreter without a pool (cold) versus one with a warm pool.

Run: .venv/bin/python bench/localcube_latency.py [--calls 300] [--sessions 10]
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


def timed(call: Callable[[], requests.Response]) -> float:
    started = time.perf_counter()
    answer = call()
    elapsed = time.perf_counter() - started
    answer.raise_for_status()
    return elapsed * 1000


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def row(name: str, samples: list[float]) -> str:
    p50, p95 = percentile(samples, 0.5), percentile(samples, 0.95)
    return f"| {name} | {p50:.2f} | {p95:.2f} | {statistics.mean(samples):.2f} |"


def proxy_overhead(url: str, state_dir: Path, calls: int) -> list[str]:
    http = requests.Session()
    base = f"{url}/v1/namespaces/default/code-interpreters/python-interpreter/invocations"
    first = http.post(f"{base}/api/execute", json={"command": ["true"]}, timeout=30)
    session = first.headers[SESSION_HEADER]
    sandboxes = http.get(f"{url}/localcube/v1/sandboxes", timeout=10).json()["sandboxes"]
    endpoint = next(box["endpoint"] for box in sandboxes if box["sessionId"] == session)
    token = RequestSigner(state_dir).token_for(session)
    routed = {SESSION_HEADER: session}
    direct = {"Authorization": f"Bearer {token}"}
    body = {"command": ["true"]}
    results: dict[str, list[float]] = {name: [] for name in ("er", "ed", "hr", "hd")}
    for _ in range(calls):
        results["er"].append(
            timed(lambda: http.post(f"{base}/api/execute", json=body, headers=routed))
        )
        results["ed"].append(
            timed(lambda: http.post(f"http://{endpoint}/api/execute", json=body, headers=direct))
        )
        results["hr"].append(timed(lambda: http.get(f"{base}/health", headers=routed)))
        results["hd"].append(timed(lambda: http.get(f"http://{endpoint}/health")))
    http.delete(f"{url}/v1/code-interpreter/sessions/{session}", timeout=30)
    ratio = percentile(results["er"], 0.5) / percentile(results["ed"], 0.5)
    health_ratio = percentile(results["hr"], 0.5) / percentile(results["hd"], 0.5)
    return [
        f"### Proxy path ({calls} calls each, interleaved)",
        "",
        "| call | p50 ms | p95 ms | mean ms |",
        "|---|---|---|---|",
        row("`/api/execute` via Router", results["er"]),
        row("`/api/execute` direct", results["ed"]),
        row("`/health` via Router", results["hr"]),
        row("`/health` direct", results["hd"]),
        "",
        f"p50 ratio Router/direct: execute {ratio:.2f}x, health {health_ratio:.2f}x",
    ]


def session_creation(url: str, sessions: int) -> list[str]:
    http = requests.Session()
    results: dict[str, list[float]] = {"python-interpreter": [], "python-interpreter-warm": []}
    created: list[str] = []
    for _ in range(sessions):
        wait_for_full_pool(http, url, "python-interpreter-warm", 2)
        for name, samples in results.items():
            started = time.perf_counter()
            answer = http.post(
                f"{url}/v1/code-interpreter",
                json={"name": name, "namespace": "default"},
                timeout=60,
            )
            samples.append((time.perf_counter() - started) * 1000)
            answer.raise_for_status()
            created.append(answer.json()["sessionId"])
    for session in created:
        http.delete(f"{url}/v1/code-interpreter/sessions/{session}", timeout=30)
    cold, warm = results["python-interpreter"], results["python-interpreter-warm"]
    return [
        f"### Session creation ({sessions} each, alternating)",
        "",
        "| interpreter | p50 ms | p95 ms | mean ms |",
        "|---|---|---|---|",
        row("cold (no pool)", cold),
        row("warm pool", warm),
        "",
        f"p50 ratio cold/warm: {percentile(cold, 0.5) / percentile(warm, 0.5):.1f}x",
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
    parser.add_argument("--sessions", type=int, default=10)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        state_dir = Path(scratch) / "state"
        cube = embedded.start([FIXTURES], Path(scratch) / "localcube.log", state_dir=state_dir)
        try:
            report = proxy_overhead(cube.url, state_dir, options.calls)
            report += ["", *session_creation(cube.url, options.sessions)]
        finally:
            cube.stop()
    print("\n".join(report))


if __name__ == "__main__":
    main()
