"""The runtime namespace's holder: `python -m onemachine.containers.holder`.

A long-lived process whose network and mount namespaces the runtime's programs join
(`nsenter -t PID -m -n`), so that nothing of the runtime is mounted on the machine (a held
namespace leaves nothing behind, where `ip netns add` leaves a shared mount of
/run/netns). It makes a new mount namespace (and, unless told `--network inherit`, a new
network namespace with `lo` up), private from `/` down, and mounts in it:

- a fresh sysfs on /sys, of its own network namespace;
- the machine's cgroup hierarchies again under /sys/fs/cgroup (cgroups.py says why);
- a tmpfs on each `--private` directory (/run: containerd 1.6 puts its shims' sockets
  in /run/containerd/s whatever its config says).

It prints `ready` when done and holds until its standard input closes (its starter ends
it so, or by dying) or SIGTERM; the namespaces go when it and every process that joined
them have exited.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys

from onemachine import netns
from onemachine.containers import cgroups

READY = "ready"


def _run(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"holder: {' '.join(command)} failed: {result.stderr.strip()}")


def set_up(network: str, private: list[str]) -> None:
    """This process into its namespaces, with the mounts the module docstring lists."""
    found = cgroups.hierarchies()  # read before /sys is mounted again
    flags = netns.CLONE_NEWNS | (netns.CLONE_NEWNET if network == "new" else 0)
    try:
        netns.unshare(flags)
    except netns.NamespaceUnavailable as refused:
        raise SystemExit(f"holder: {refused}") from refused
    _run(["mount", "--make-rprivate", "/"])
    if network == "new":
        _run(["ip", "link", "set", "lo", "up"])
    _run(["mount", "-t", "sysfs", "sysfs", "/sys"])
    for command in cgroups.mount_commands(found):
        _run(command)
    for directory in private:
        _run(["mkdir", "-p", directory])
        _run(["mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", directory])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m onemachine.containers.holder")
    parser.add_argument("--network", choices=("new", "inherit"), default="new")
    parser.add_argument("--private", action="append", default=[], metavar="DIR")
    arguments = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    set_up(arguments.network, arguments.private)
    print(READY, flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
