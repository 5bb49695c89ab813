"""A container started inside a pod: `python -m onemachine.node.container_init --spec-fd N`.

It reads its spec (JSON on a pipe, so that no value of the environment shows in a process
list: the descriptor it was handed of the pod's PID 1's /proc directory, the working
directory, argv, the whole environment and the machine's installations its command needs, if
any), enters the pod's network, UTS, mount and PID namespaces, binds those installations
read-only into the pod's root (`pod_runtime._machines_own` says which and why), enters that
root and forks twice: a process in the pod's PID namespace makes a PID
namespace of the container's own, whose PID 1 is the command (so a command without a
SIGTERM handler ignores SIGTERM, as in a container, and killing it ends every process it
started). Each level exits as the level below it did (same code, same signal) and dies
with the level above it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

from onemachine.netns import CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWUTS, setns, unshare
from onemachine.node.pod_init import bind_read_only, die_with_parent

_NAMESPACES = (("uts", CLONE_NEWUTS), ("net", CLONE_NEWNET), ("pid", CLONE_NEWPID))


def _enter(pod_init: int, bind: list[str]) -> None:
    """Into the namespaces and the root of the pod's PID 1 (`pod_init`: a descriptor of its
    /proc directory, which fails every lookup once that process ended), each of the machine's
    `bind` bound at the same path of that root first (the machine's / is the mount namespace's
    root until the chroot)."""
    root = os.open("root", os.O_RDONLY | os.O_DIRECTORY, dir_fd=pod_init)
    mount = os.open("ns/mnt", os.O_RDONLY, dir_fd=pod_init)
    for kind, nstype in _NAMESPACES:
        descriptor = os.open(f"ns/{kind}", os.O_RDONLY, dir_fd=pod_init)
        setns(descriptor, nstype)
        os.close(descriptor)
    setns(mount, CLONE_NEWNS)
    for installation in bind:
        _bind_into(installation, f"/proc/self/fd/{root}{installation}")
    os.fchdir(root)
    os.chroot(".")
    os.close(root)
    os.close(mount)


def _bind_into(source: str, target: str) -> None:
    """`source` bound read-only at `target`, made first like it (a directory or a file)."""
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        open(target, "a").close()
    bind_read_only(source, target)


def _exit_as(child: int) -> None:
    """Wait for `child` and end as it ended: its exit code, or killed by its signal."""
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):
        if os.WTERMSIG(status) != signal.SIGKILL:
            signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
        os._exit(128 + os.WTERMSIG(status))  # a signal that does not end a process
    os._exit(os.waitstatus_to_exitcode(status))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m onemachine.node.container_init")
    parser.add_argument("--spec-fd", required=True, type=int)
    options = parser.parse_args(argv)
    with os.fdopen(options.spec_fd, "rb") as spec_file:
        spec = json.load(spec_file)
    try:
        _enter(spec["pod_init_fd"], spec["bind"])
        os.close(spec["pod_init_fd"])
        os.chdir(spec["working_dir"])
    except OSError as error:
        sys.exit(f"container_init: cannot enter the pod: {error}")
    in_pod = os.fork()
    if in_pod:
        _exit_as(in_pod)
    die_with_parent()
    unshare(CLONE_NEWPID)
    command = os.fork()
    if command:
        _exit_as(command)
    die_with_parent()
    try:
        os.execvpe(spec["argv"][0], spec["argv"], spec["env"])
    except OSError as error:
        print(f"exec {spec['argv'][0]}: {error.strerror}", file=sys.stderr, flush=True)
        os._exit(127)


if __name__ == "__main__":
    main()
