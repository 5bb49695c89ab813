"""The supervisor's waits and stops, with stand-in programs on free loopback ports in the
test's own namespace (no namespace is needed for these)."""

from __future__ import annotations

import socket
import sys
import textwrap
import time
from pathlib import Path

import pytest

from onemachine.cluster.parts import Part
from onemachine.cluster.readiness import HttpProbe
from onemachine.cluster.supervisor import PartFailed, Supervisor, descendants
from tests.onemachine.cluster import stand_ins
from tests.processes import alive
from tests.waiting import wait_until


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def supervisor(tmp_path: Path):
    running = Supervisor(tmp_path, {"PATH": "/usr/bin:/bin"}, tmp_path)
    yield running
    running.kill_all()


def etcd_like(tmp_path: Path, delay: float) -> Part:
    """The `serving` stand-in as etcd: /health on the port its flag names."""
    port = free_port()
    program = stand_ins.write(tmp_path / "etcd", stand_ins.serving(delay))
    url = f"http://127.0.0.1:{port}"
    return Part("etcd", (str(program), f"--listen-client-urls={url}"), HttpProbe(f"{url}/health"))


def test_a_part_ready_late_is_waited_for(tmp_path: Path, supervisor: Supervisor) -> None:
    running = supervisor.start(etcd_like(tmp_path, delay=1.0))
    supervisor.wait_ready(running, timeout=20)
    assert time.monotonic() - running.started >= 1.0
    assert running.process.poll() is None


def test_a_part_that_exits_is_named_with_its_exit_and_log(
    tmp_path: Path, supervisor: Supervisor
) -> None:
    program = stand_ins.write(tmp_path / "kube-apiserver", stand_ins.exiting())
    part = Part("kube-apiserver", (str(program),), HttpProbe("http://127.0.0.1:1/readyz"))
    with pytest.raises(PartFailed) as failure:
        supervisor.start_ready(part, timeout=20)
    message = str(failure.value)
    assert message.startswith("kube-apiserver exited (exit code 3) before it was ready; ")
    assert f"the end of its log {tmp_path / 'kube-apiserver.log'}:" in message
    assert message.endswith("  | E1201 run.go:72] error: stand-in refuses to start")


def test_a_part_never_ready_times_out_naming_it_and_what_was_awaited(
    tmp_path: Path, supervisor: Supervisor
) -> None:
    program = stand_ins.write(tmp_path / "kube-apiserver", stand_ins.silent())
    port = free_port()
    probe = HttpProbe(f"http://127.0.0.1:{port}/readyz")
    with pytest.raises(PartFailed) as failure:
        supervisor.start_ready(Part("kube-apiserver", (str(program),), probe), timeout=1)
    assert str(failure.value).startswith(
        f"kube-apiserver was not ready within 1 s (waiting for GET http://127.0.0.1:{port}"
        "/readyz answering 200); the end of its log"
    )


FORKER = textwrap.dedent(
    """\
    import os, signal, subprocess, sys, time
    # A child in a session of its own (as the node's pods are), ignoring SIGTERM.
    child = subprocess.Popen([sys.executable, "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"],
        start_new_session=True)
    print(child.pid, flush=True)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(600)
    """
)


def test_stop_ends_every_part_and_every_descendant_even_those_ignoring_sigterm(
    tmp_path: Path, supervisor: Supervisor
) -> None:
    program = stand_ins.write(tmp_path / "node", FORKER)
    running = supervisor.start(Part("node", (str(program),), lambda: True))
    log = tmp_path / "node.log"
    child = int(wait_until(lambda: log.read_text().strip(), "the forker's child's pid").split()[0])
    assert descendants({running.process.pid}) == {child}
    supervisor.stop_all(grace=0.5)
    assert not alive(running.process.pid)
    assert not alive(child)


def test_a_part_that_ends_is_reported_by_name(tmp_path: Path, supervisor: Supervisor) -> None:
    program = stand_ins.write(tmp_path / "redis-server", "import sys; sys.exit(0)\n")
    supervisor.start(Part("redis", (str(program),), lambda: True))
    ended = supervisor.wait_any_exit()
    assert supervisor.describe_exit(ended).startswith("redis exited (exit code 0); its log")


def test_the_environment_is_the_base_one_and_the_part_s_own(
    tmp_path: Path, supervisor: Supervisor
) -> None:
    part = Part(
        "env",
        (sys.executable, "-c", "import os; print(sorted(os.environ))"),
        lambda: True,
        {"KUBECONFIG": "/k"},
    )
    supervisor.start(part).process.wait()
    names = (tmp_path / "env.log").read_text()
    assert "'KUBECONFIG'" in names and "'PATH'" in names
