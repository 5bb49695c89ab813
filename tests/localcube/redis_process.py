"""A real redis-server for tests: its own loopback port and directory, no persistence.

Tests that need one skip, saying why, where the binary is missing (./dev test installs
Debian's redis-server when it is absent).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from localcube.sandboxing.ports import kernel_free_port

MISSING = "redis-server is not installed (apt-get install redis-server; ./dev test installs it)"


@dataclass
class RedisServer:
    process: subprocess.Popen
    port: int
    log_path: Path
    password: str | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def client(self) -> redis.Redis:
        return redis.Redis(
            host="127.0.0.1", port=self.port, password=self.password, socket_timeout=5
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start(directory: Path, password: str | None = None, timeout: float = 10.0) -> RedisServer:
    """Start redis-server on a free loopback port (requiring `password` if given; it goes
    through stdin, never the arguments); skip the test when it is not installed."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip(MISSING)
    directory.mkdir(parents=True, exist_ok=True)
    port = kernel_free_port()
    log_path = directory / "redis.log"
    arguments = [binary, "--bind", "127.0.0.1", "--port", str(port), "--dir", str(directory)]
    arguments += ["--save", "", "--appendonly", "no", "--logfile", str(log_path)]
    config = f"requirepass {password}\n" if password else ""
    process = subprocess.Popen(
        [binary, "-", *arguments[1:]],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    process.stdin.write(config)
    process.stdin.close()
    server = RedisServer(process, port, log_path, password)
    deadline = time.monotonic() + timeout
    while True:
        try:
            server.client().ping()
            return server
        except (redis.ConnectionError, redis.AuthenticationError):
            if process.poll() is not None or time.monotonic() > deadline:
                server.stop()
                log = log_path.read_text(errors="replace") if log_path.exists() else ""
                raise RuntimeError(f"redis-server did not start: {log[-2000:]}") from None
            time.sleep(0.05)
