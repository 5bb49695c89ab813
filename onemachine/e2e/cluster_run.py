"""The one-machine cluster under the e2e: `python -m onemachine cluster` started as a child
from the maintainer's builds, waited for until it writes its cluster.json, and stopped as
its own Ctrl-C stops it (SIGTERM: every part, last started first)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from onemachine.cluster.readiness import wait_until

REPOSITORY = Path(__file__).resolve().parents[2]  # whose launcher runs, from any directory
POLL = 0.2
STOP_TIMEOUT = 60.0


class ClusterError(Exception):
    """The cluster did not come up; the message ends with the end of its log."""


@dataclass(frozen=True)
class ClusterEndpoints:
    """What the cluster's cluster.json says: its URLs on the host and its files."""

    router: str
    workload_manager: str
    oidc_issuer: str
    admin_kubeconfig: Path
    forwards: dict[str, str]

    @classmethod
    def read(cls, state_dir: Path) -> ClusterEndpoints:
        described = json.loads((state_dir / "cluster.json").read_text(encoding="utf-8"))
        forwards_file = state_dir / "service-forwards.json"
        forwards = (
            json.loads(forwards_file.read_text(encoding="utf-8")) if forwards_file.exists() else {}
        )
        return cls(
            router=described["router"],
            workload_manager=described["workload_manager"],
            oidc_issuer=described["oidc_issuer"],
            admin_kubeconfig=Path(described["admin_kubeconfig"]),
            forwards=forwards,
        )


class ClusterRun:
    """A launcher this run started; its output in `log`."""

    def __init__(self, process: subprocess.Popen[bytes], state_dir: Path, log: Path) -> None:
        self.process = process
        self.state_dir = state_dir
        self.log = log

    @classmethod
    def start(cls, arguments: Sequence[str], state_dir: Path, log: Path) -> ClusterRun:
        """`python -m onemachine cluster ARGUMENTS --state-dir STATE_DIR`."""
        with log.open("w", encoding="utf-8") as output:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "onemachine",
                    "cluster",
                    *arguments,
                    "--state-dir",
                    str(state_dir),
                ],
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=REPOSITORY,
                start_new_session=True,  # a Ctrl-C reaches this command, which stops it once
            )
        return cls(process, state_dir, log)

    def wait_ready(self, timeout: float) -> ClusterEndpoints:
        described = self.state_dir / "cluster.json"
        ended = wait_until(
            lambda: described.exists() or self.process.poll() is not None,
            timeout=timeout,
            interval=POLL,
        )
        if described.exists():
            return ClusterEndpoints.read(self.state_dir)
        why = (
            f"exited with code {self.process.returncode}"
            if ended
            else f"was not ready within {timeout:g} s"
        )
        raise ClusterError(f"the one-machine cluster {why} (log: {self.log}):\n{self.tail()}")

    def tail(self, lines: int = 25) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return "\n".join(f"  | {line}" for line in text.splitlines()[-lines:])

    def stop(self) -> int:
        """SIGTERM, as Ctrl-C in its terminal; SIGKILL if it has not ended in a minute."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode
