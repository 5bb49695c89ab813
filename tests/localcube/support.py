"""Helpers for localcube's tests: derived manifests and a small client of its HTTP API."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests
import yaml

from localcube.sandboxing.launcher import process_start_time

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runtimes"
SESSION_HEADER = "x-agentcube-session-id"
NAMESPACE = "default"


def derived_manifest(directory: Path, base: str, name: str, **spec: Any) -> Path:
    """A copy of fixture runtime `base` named `name`, with `spec` fields overridden."""
    for document in fixture_documents():
        if document["metadata"]["name"] == base:
            document["metadata"]["name"] = name
            document["spec"].update(spec)
            path = directory / f"{name}.yaml"
            path.write_text(yaml.safe_dump(document))
            return path
    raise LookupError(base)


def agent_running(directory: Path, name: str, program: str) -> Path:
    """The echo agent's manifest, named `name`, running the Python `program` instead (it
    serves $HOST:$PORT); without a readiness probe, so localcube waits for the port."""
    document = yaml.safe_load(derived_manifest(directory, "echo-agent", name).read_text())
    container = document["spec"]["podTemplate"]["spec"]["containers"][0]
    container.update(command=["python3", "-c"], args=[program])
    del container["readinessProbe"]
    manifest = directory / f"{name}.yaml"
    manifest.write_text(yaml.safe_dump(document))
    return manifest


def fixture_documents() -> list[dict]:
    return [
        doc
        for file in sorted(FIXTURES.glob("*.yaml"))
        for doc in yaml.safe_load_all(file.read_text())
    ]


class Client:
    """Calls the Router, WorkloadManager and admin routes of one localcube."""

    def __init__(self, url: str, token: str | None = None) -> None:
        self.url = url
        self.http = requests.Session()
        if token:
            self.http.headers["Authorization"] = f"Bearer {token}"

    def agent(
        self, name: str, path: str = "/echo", session: str | None = None, **kwargs
    ) -> requests.Response:
        return self._invoke("agent-runtimes", name, path, session, **kwargs)

    def interpreter(
        self, name: str, path: str, session: str | None = None, **kwargs
    ) -> requests.Response:
        return self._invoke("code-interpreters", name, path, session, **kwargs)

    def execute(
        self, name: str, command: list[str], session: str | None = None, **fields
    ) -> requests.Response:
        return self.interpreter(name, "/api/execute", session, json={"command": command, **fields})

    def create_session(self, kind: str, name: str, **fields) -> requests.Response:
        body = {"name": name, "namespace": NAMESPACE, **fields}
        return self.http.post(f"{self.url}/v1/{kind}", json=body, timeout=60)

    def delete_session(self, kind: str, session: str) -> requests.Response:
        return self.http.delete(f"{self.url}/v1/{kind}/sessions/{session}", timeout=30)

    def sandboxes(self) -> list[dict]:
        answer = self.http.get(f"{self.url}/localcube/v1/sandboxes", timeout=10)
        answer.raise_for_status()
        return answer.json()["sandboxes"]

    def sandbox_of(self, session: str) -> dict | None:
        return next((box for box in self.sandboxes() if box["sessionId"] == session), None)

    def _invoke(
        self, plural: str, name: str, path: str, session: str | None, **kwargs
    ) -> requests.Response:
        headers = dict(kwargs.pop("headers", {}))
        if session:
            headers[SESSION_HEADER] = session
        method = kwargs.pop(
            "method",
            "POST" if ("json" in kwargs or "data" in kwargs or "files" in kwargs) else "GET",
        )
        url = f"{self.url}/v1/namespaces/{NAMESPACE}/{plural}/{name}/invocations{path}"
        return self.http.request(
            method, url, headers=headers, timeout=kwargs.pop("timeout", 60), **kwargs
        )


def open_sessions(client: Client, count: int) -> list[dict]:
    """`count` echo-agent sessions opened at the WorkloadManager at once; their sandboxes
    as the admin API describes them."""
    with ThreadPoolExecutor(count) as openers:
        answers = list(
            openers.map(
                lambda _: client.create_session("agent-runtime", "echo-agent"), range(count)
            )
        )
    assert [answer.status_code for answer in answers] == [200] * count
    sessions = [answer.json()["sessionId"] for answer in answers]
    return [client.sandbox_of(session) for session in sessions]


def process_gone(pid: int) -> bool:
    return process_start_time(pid) is None


def processes_under(directory: Path) -> list[int]:
    """Live processes whose working directory lies under `directory` (sandboxes, their children)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = (entry / "cwd").readlink()
        except OSError:
            continue
        if cwd.is_relative_to(directory) and not process_gone(int(entry.name)):
            found.append(int(entry.name))
    return found


def session_leader_of(pid: int) -> int | None:
    """The session id of a live process (field 6 of /proc/PID/stat), or None if it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[3])
    except (OSError, IndexError, ValueError):
        return None


def unowned_processes(directory: Path, sandboxes: list[dict]) -> list[int]:
    """Live processes under `directory` whose session leader is no sandbox localcube lists:
    every process a sandbox started has the sandbox as its session leader."""
    owners = {box["pid"] for box in sandboxes}
    return [pid for pid in processes_under(directory) if session_leader_of(pid) not in owners]


def ready_latencies(url: str, probes: int = 3) -> list[float]:
    """Seconds each of `probes` GET /health/ready took on an open connection; each must be 200."""
    with requests.Session() as http:
        http.get(f"{url}/health/ready", timeout=5).raise_for_status()  # open the connection
        latencies = []
        for _ in range(probes):
            started = time.perf_counter()
            answer = http.get(f"{url}/health/ready", timeout=5)
            latencies.append(time.perf_counter() - started)
            assert answer.status_code == 200, answer.text
    return latencies


@contextmanager
def stopped(pid: int) -> Iterator[None]:
    """The sandbox's process group stopped (SIGSTOP) while in the block: the kernel still
    accepts connections into its backlog, nobody answers them."""
    os.killpg(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.killpg(pid, signal.SIGCONT)
