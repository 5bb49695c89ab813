"""The machine's cgroup hierarchies, and a cgroup root of the runtime's own in each.

A private mount namespace with a fresh `/sys` no longer shows the hierarchies (runc then
finds "no cgroup mount"), so the runtime's holder mounts each again by type
(`mount_commands`). The directories are the machine's all the same: cgroup v1 has no
namespace of its own here, so whatever the runtime starts (containerd, its shims, the
containers) is placed under one root of its own (`/onemachine-NAME`, made in every
hierarchy) and that root is emptied and removed when the runtime stops.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_MOUNTS = "/sys/fs/cgroup"
_SKIPPED_OPTIONS = ("rw", "ro")


@dataclass(frozen=True)
class Hierarchy:
    """One mounted cgroup hierarchy: where it is, `cgroup` (v1) or `cgroup2`, and the
    options that name it (`cpu`, `name=systemd`; none for cgroup2)."""

    mount_point: str
    fstype: str
    options: str


def hierarchies(mountinfo: str | None = None) -> list[Hierarchy]:
    """The hierarchies mounted under /sys/fs/cgroup, in mount order (this process's view)."""
    text = mountinfo if mountinfo is not None else Path("/proc/self/mountinfo").read_text()
    found: list[Hierarchy] = []
    for line in text.splitlines():
        fields, _, after = line.partition(" - ")
        mount_point = fields.split()[4]
        fstype, _source, super_options = after.split()[:3]
        if fstype not in ("cgroup", "cgroup2") or not mount_point.startswith(CGROUP_MOUNTS):
            continue
        options = ",".join(
            option
            for option in super_options.split(",")
            if option not in _SKIPPED_OPTIONS and not option.startswith("release_agent=")
        )
        found.append(Hierarchy(mount_point, fstype, options if fstype == "cgroup" else ""))
    return found


def mount_commands(found: list[Hierarchy]) -> list[list[str]]:
    """The `mount` commands that show `found` again in a mount namespace with a fresh
    /sys: a tmpfs on /sys/fs/cgroup (unless it is itself the one cgroup2 hierarchy), then
    each hierarchy by type."""
    commands: list[list[str]] = []
    if not any(hierarchy.mount_point == CGROUP_MOUNTS for hierarchy in found):
        commands.append(["mount", "-t", "tmpfs", "-o", "mode=755", "cgroup", CGROUP_MOUNTS])
    for hierarchy in found:
        options = ["-o", hierarchy.options] if hierarchy.options else []
        commands.append(["mkdir", "-p", hierarchy.mount_point])
        commands.append(
            ["mount", "-t", hierarchy.fstype, *options, "cgroup", hierarchy.mount_point]
        )
    return commands


class CgroupRoot:
    """`/NAME` in every hierarchy: made (cpuset's cpus and mems copied from the parent, as
    cgroup v1 requires before a process may join), joined, emptied and removed."""

    def __init__(self, name: str, found: list[Hierarchy] | None = None) -> None:
        self.path = f"/{name}"
        self._hierarchies = found if found is not None else hierarchies()

    def directories(self, below: str = "") -> list[Path]:
        """The root's directory (or `below` under it) in each hierarchy."""
        return [Path(hierarchy.mount_point + self.path) / below for hierarchy in self._hierarchies]

    def make(self, below: str = "") -> None:
        """The root (and `below` under it) in every hierarchy."""
        for hierarchy in self._hierarchies:
            directory = Path(hierarchy.mount_point)
            for part in f"{self.path.strip('/')}/{below}".strip("/").split("/"):
                parent, directory = directory, directory / part
                if directory.is_dir():
                    continue
                directory.mkdir()
                if "cpuset" in hierarchy.options.split(","):
                    for name in ("cpuset.cpus", "cpuset.mems"):
                        (directory / name).write_text((parent / name).read_text())

    def add(self, pid: int, below: str = "") -> None:
        """Process `pid` (all its threads) into `below` of the root in every hierarchy;
        the children it starts afterwards are born there."""
        for directory in self.directories(below):
            (directory / "cgroup.procs").write_text(str(pid))

    def processes(self) -> set[int]:
        """Every process in the root or below it, in any hierarchy."""
        found: set[int] = set()
        for top in self.directories():
            for directory in _tree(top):
                try:
                    listed = (directory / "cgroup.procs").read_text()
                except FileNotFoundError:  # removed meanwhile
                    continue
                found.update(int(pid) for pid in listed.split())
        return found

    def exists(self) -> bool:
        return any(directory.exists() for directory in self.directories())

    def remove(self, timeout: float = 10.0) -> None:
        """Kill whatever is still in the root, then remove its directories, deepest first;
        a directory still busy after `timeout` raises OSError."""
        deadline = time.monotonic() + timeout
        killed: set[int] = set()
        while processes := self.processes():
            for pid in processes:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            killed |= processes
            if time.monotonic() > deadline:
                raise OSError(errno.EBUSY, f"processes {sorted(processes)} stay in {self.path}")
            time.sleep(0.05)
        # A pod's PID 1 leaves its cgroup before it has finished exiting (it waits for
        # the rest of its PID namespace): wait until each is gone (or a zombie).
        while exiting := {pid for pid in killed if _running(pid)}:
            if time.monotonic() > deadline:
                raise OSError(errno.EBUSY, f"processes {sorted(exiting)} do not end")
            time.sleep(0.05)
        for top in self.directories():
            for directory in reversed(_tree(top)):
                _remove_when_empty(directory, deadline)


def _running(pid: int) -> bool:
    """Alive and not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _tree(top: Path) -> list[Path]:
    """`top` and every directory below it, parents first ([] when `top` is gone)."""
    if not top.is_dir():
        return []
    return [Path(path) for path, _dirs, _files in os.walk(top)]


def _remove_when_empty(directory: Path, deadline: float) -> None:
    """rmdir, again while the kernel still counts a process that just died in it."""
    while True:
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as error:
            if error.errno != errno.EBUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
