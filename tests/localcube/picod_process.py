"""Run the PicoD-compatible daemon (`python -m localcube.picod`) as a real process in tests."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import jwt
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

ROOT = Path(__file__).resolve().parents[2]
PICOD = [sys.executable, "-m", "localcube.picod"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class SigningKey:
    """A fresh RSA key pair that signs JWTs the way the Router does."""

    def __init__(self) -> None:
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.public_pem = (
            self.private.public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode()
        )

    def token(self, lifetime: int = 300, omit: tuple[str, ...] = (), **claims: object) -> str:
        """An RS256 token (iss, session_id, iat, exp = now + lifetime) with claims overridden."""
        now = int(time.time())
        payload = {
            "iss": "agentcube-router",
            "session_id": "test-session",
            "iat": now,
            "exp": now + lifetime,
            **claims,
        }
        for name in omit:
            del payload[name]
        return jwt.encode(payload, self.private, algorithm="RS256")


def picod_env(port: int | None, public_key_pem: str | None, **extra: str) -> dict[str, str]:
    """The environment for a daemon: PORT, HOST, PICOD_AUTH_PUBLIC_KEY as given."""
    env = {k: v for k, v in os.environ.items() if k not in ("PORT", "PICOD_AUTH_PUBLIC_KEY")}
    env.update(HOST="127.0.0.1", PYTHONPATH=str(ROOT), **extra)
    if port is not None:
        env["PORT"] = str(port)
    if public_key_pem is not None:
        env["PICOD_AUTH_PUBLIC_KEY"] = public_key_pem
    return env


def is_dead(pid: int) -> bool:
    """The process is gone or a zombie (killed, waiting for whoever inherited it to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def session_members(sid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid and fields[0] not in ("Z", "X"):
                members.append(int(entry.name))
    return members


class Picod:
    """One daemon on a free loopback port, in its own session; stop() leaves nothing behind."""

    def __init__(
        self,
        workspace: Path,
        log: Path,
        public_key_pem: str | None,
        auth: str = "jwt",
        **extra_env: str,
    ) -> None:
        self.workspace = workspace
        self.log = log
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = picod_env(self.port, public_key_pem, **extra_env)
        with open(log, "ab") as output:
            self.process = subprocess.Popen(
                [*PICOD, "--workspace", str(workspace), "--auth", auth],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                umask=0o022,
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"picod exited: {self.log.read_text()}")
            with contextlib.suppress(requests.ConnectionError):
                if requests.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"picod not ready: {self.log.read_text()}")
            time.sleep(0.05)

    def stop(self, timeout: float = 5.0) -> int:
        """SIGTERM, then SIGKILL if needed; also kills anything left in its session."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for pid in session_members(self.process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return self.process.returncode


# Records its arguments and whether it got the Router's key in a file named after its pid,
# then becomes localcube's daemon; without a key (authMode none), one without authentication.
WRAPPER = """\
{{ printf '%s\\n' "$@"; printf 'key=%s\\n' "${{PICOD_AUTH_PUBLIC_KEY:+given}}"; }} > {records}/$$
[ -n "$PICOD_AUTH_PUBLIC_KEY" ] || set -- "$@" --auth none
PYTHONPATH={root} exec {python} -m localcube.picod "$@"
"""


def own_picod_command(directory: Path, records: Path) -> str:
    """A `--picod-command` running localcube's daemon behind a wrapper (written to
    `directory`) that leaves a record of each start in `records`."""
    records.mkdir()
    wrapper = directory / "my-picod.sh"
    wrapper.write_text(WRAPPER.format(records=records, root=ROOT, python=sys.executable))
    return f"sh {wrapper} --port {{port}} --workspace {{workspace}}"
