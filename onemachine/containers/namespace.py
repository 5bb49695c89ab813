"""The runtime namespace: the holder process started and ended, and commands run inside it.

`RuntimeNamespace.start()` starts the holder (holder.py) and waits for its `ready`;
`command(argv)` is `argv` run inside its mount and network namespaces (through
util-linux's nsenter); `stop()` closes the holder's input and waits for it. The network
namespace is checked to be private (only loopback, and the interfaces the caller names)
before anything is put in it, so no pod address can reach the machine's network.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence

from onemachine import netns
from onemachine.containers.holder import READY

# containerd 1.6 puts its shims' sockets in /run/containerd/s whatever its config says.
PRIVATE_DIRECTORIES = ("/run",)


class NamespaceFailed(RuntimeError):
    """The holder could not make its namespaces (the message says what it refused)."""


class RuntimeNamespace:
    """A started holder: `pid`, `command()`, `require_private()`, `stop()`."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._process = process
        self.pid = process.pid

    @classmethod
    def start(
        cls,
        network: str = "new",
        private: Sequence[str] = (),
        timeout: float = 10.0,
    ) -> RuntimeNamespace:
        """A holder in a new mount namespace and, with network `new`, a new network
        namespace (`inherit`: the caller's own, e.g. the cluster's private one), with a
        tmpfs of its own on /run and on each of `private`."""
        argv = [sys.executable, "-m", "onemachine.containers.holder", "--network", network]
        for directory in dict.fromkeys([*PRIVATE_DIRECTORIES, *private]):
            argv += ["--private", directory]
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None and process.stderr is not None
        line = process.stdout.readline().strip()
        if line != READY:
            process.kill()
            _out, error = process.communicate(timeout=timeout)
            raise NamespaceFailed(
                error.strip().splitlines()[-1] if error.strip() else "the holder exited"
            )
        return cls(process)

    def command(self, argv: Sequence[str], network_only: bool = False) -> list[str]:
        """`argv` run inside the namespaces (the network namespace alone: `network_only`,
        for a program that reads the machine's files, such as a CNI test's curl)."""
        namespaces = ["-n"] if network_only else ["-m", "-n"]
        return ["nsenter", "-t", str(self.pid), *namespaces, "--", *argv]

    def require_private(self, also: Callable[[str], bool] | None = None) -> None:
        """NotPrivateNamespace unless the network namespace holds only `lo` (and
        interfaces `also` accepts)."""
        with netns.entered(f"/proc/{self.pid}/ns/net"):
            netns.only_loopback(also)

    def network_namespace(self) -> str:
        """The network namespace's identity (`net:[INODE]`), to find who is still in it."""
        return os.readlink(f"/proc/{self.pid}/ns/net")

    def stop(self, timeout: float = 10.0) -> None:
        """The holder ended: its input closed, killed if it outlasts `timeout`."""
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        for stream in (self._process.stdout, self._process.stderr):
            if stream is not None:
                stream.close()
