"""`python -m onemachine cluster` with stand-ins for the real programs: what it refuses
before starting anything, the part it names when one fails, and that it leaves no process
behind, however it ends."""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.oidc_issuer.realm_clients import write_clients_file
from tests.onemachine.cluster import stand_ins
from tests.onemachine.cluster.conftest import (
    ROOT,
    Launchers,
    launcher_command,
    needs_namespaces,
    started_pids,
)
from tests.processes import alive
from tests.waiting import wait_until


def test_missing_programs_are_named_with_where_they_come_from_and_nothing_starts(
    tmp_path: Path, run_launcher
) -> None:
    bin_dir = stand_ins.bin_dir(tmp_path / "bin")
    (bin_dir / "kube-controller-manager").unlink()
    (bin_dir / "picod").unlink()
    result = run_launcher(bin_dir)
    assert result.returncode == 2
    assert "nothing was started" in result.stderr
    assert f"{bin_dir / 'kube-controller-manager'}: `make WHAT=cmd/kube-controller-manager`" in (
        result.stderr
    )
    assert f"{bin_dir / 'picod'}: `go build -o picod ./cmd/picod`" in result.stderr
    assert "docker/Dockerfile.picod does (no make target builds it)" in result.stderr
    assert "etcd" not in result.stderr.replace(str(bin_dir), "")
    assert started_pids(result.stderr) == {}
    assert not (tmp_path / "state").exists()


def test_a_missing_checkout_is_named_by_its_flag(tmp_path: Path) -> None:
    bin_dir = stand_ins.bin_dir(tmp_path / "bin")
    command = [arg for arg in launcher_command(bin_dir, tmp_path) if arg != "--agentcube-src"]
    command.remove(str(tmp_path / "checkouts" / "agentcube"))
    result = subprocess.run(command, capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert result.returncode == 2
    assert "--agentcube-src is needed: the checkout whose manifests/charts/base/crds/" in (
        result.stderr
    )
    assert started_pids(result.stderr) == {}


@needs_namespaces
def test_a_part_that_exits_is_named_with_the_end_of_its_log_and_the_rest_stopped(
    tmp_path: Path, run_launcher
) -> None:
    bin_dir = stand_ins.bin_dir(
        tmp_path / "bin", etcd=stand_ins.serving(), kube_apiserver=stand_ins.exiting()
    )
    result = run_launcher(bin_dir, "--ready-timeout", "20s")
    assert result.returncode == 1, result.stderr
    assert "kube-apiserver exited (exit code 3) before it was ready" in result.stderr
    assert "  | E1201 run.go:72] error: stand-in refuses to start" in result.stderr
    pids = started_pids(result.stderr)
    assert set(pids) == {"etcd", "kube-apiserver"}
    assert not any(alive(pid) for pid in pids.values())


@needs_namespaces
def test_a_part_never_ready_is_named_when_its_wait_times_out(tmp_path: Path, run_launcher) -> None:
    bin_dir = stand_ins.bin_dir(tmp_path / "bin", etcd=stand_ins.serving())
    result = run_launcher(bin_dir, "--ready-timeout", "2s")
    assert result.returncode == 1, result.stderr
    assert (
        "kube-apiserver was not ready within 2 s (waiting for GET https://127.0.0.1:6443/readyz "
        "answering 200)"
    ) in result.stderr
    assert "  | starting, and never ready" in result.stderr
    assert not any(alive(pid) for pid in started_pids(result.stderr).values())


@pytest.mark.slow
@needs_namespaces
def test_an_api_server_ready_late_is_waited_for_over_tls_with_the_cluster_ca(
    tmp_path: Path, run_launcher
) -> None:
    bin_dir = stand_ins.bin_dir(
        tmp_path / "bin", etcd=stand_ins.serving(), kube_apiserver=stand_ins.serving(delay=1.5)
    )
    result = run_launcher(bin_dir, "--ready-timeout", "20s")
    assert "kube-apiserver ready" in result.stderr
    # The stand-in serves only /readyz: the first manifest is refused, and named.
    assert result.returncode == 1
    assert "the API server refused Namespace agentcube: 404 Not Found" in result.stderr
    assert not any(alive(pid) for pid in started_pids(result.stderr).values())


def wait_for(text: str, path: Path, timeout: float = 30) -> None:
    wait_until(
        lambda: path.exists() and text in path.read_text(),
        f"{path.name} to say {text!r}",
        timeout=timeout,
        poll=0.05,
    )


@needs_namespaces
def test_sigterm_stops_every_part_and_exits_0(tmp_path: Path, launchers: Launchers) -> None:
    bin_dir = stand_ins.bin_dir(tmp_path / "bin", etcd=stand_ins.serving())
    launcher, errors = launchers.start(bin_dir, "--ready-timeout", "60s")
    wait_for("starting, and never ready", tmp_path / "state" / "logs" / "kube-apiserver.log")
    wait_for("started kube-apiserver (pid", errors)
    launcher.send_signal(signal.SIGTERM)
    assert launcher.wait(timeout=30) == 0, errors.read_text()
    pids = started_pids(errors.read_text())
    assert set(pids) == {"etcd", "kube-apiserver"}
    assert not any(alive(pid) for pid in pids.values())


@needs_namespaces
def test_a_launcher_killed_hard_leaves_no_part_running(
    tmp_path: Path, launchers: Launchers
) -> None:
    """SIGKILL (or the OOM killer) gives the launcher no chance to stop anything: each part
    dies with it by its parent-death signal."""
    bin_dir = stand_ins.bin_dir(tmp_path / "bin", etcd=stand_ins.serving())
    launcher, errors = launchers.start(bin_dir, "--ready-timeout", "60s")
    wait_for("starting, and never ready", tmp_path / "state" / "logs" / "kube-apiserver.log")
    # the part may write its log before the launcher logs its pid: the test needs the pid
    wait_for("started kube-apiserver (pid", errors)
    launcher.kill()
    launcher.wait(timeout=10)
    pids = started_pids(errors.read_text())
    assert set(pids) == {"etcd", "kube-apiserver"}
    wait_until(
        lambda: [name for name, pid in pids.items() if alive(pid)] == [],
        "every part to die with the launcher",
        poll=0.05,
    )


STUBBORN = textwrap.dedent(
    """\
    import signal, subprocess, sys, time
    # A child in a session of its own (as the node's pods are), ignoring SIGTERM too.
    child = subprocess.Popen([sys.executable, "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"],
        start_new_session=True)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("ignoring SIGTERM, and so does child", child.pid, flush=True)
    time.sleep(600)
    """
)


@needs_namespaces
def test_a_second_signal_during_the_stop_kills_at_once(
    tmp_path: Path, launchers: Launchers
) -> None:
    bin_dir = stand_ins.bin_dir(tmp_path / "bin", etcd=stand_ins.serving(), kube_apiserver=STUBBORN)
    launcher, errors = launchers.start(bin_dir, "--ready-timeout", "60s")
    log = tmp_path / "state" / "logs" / "kube-apiserver.log"
    wait_for("ignoring SIGTERM", log)
    child = int(log.read_text().split()[-1])
    launcher.send_signal(signal.SIGTERM)
    wait_for("stopping every part", errors)
    launcher.send_signal(signal.SIGTERM)
    launcher.wait(timeout=60)
    told = errors.read_text()
    assert "second signal: killing every part" in told
    # had the stop waited out kube-apiserver's grace, the end of the grace would have killed it
    assert "after SIGTERM: killed" not in told, "the stop waited for its grace after all"
    assert not any(alive(pid) for pid in started_pids(errors.read_text()).values())
    assert not alive(child), "a part's child in a session of its own was left running"


@pytest.mark.skipif(os.geteuid() != 0, reason="drops CAP_SYS_ADMIN from root's bounding set")
def test_a_machine_refusing_namespaces_stops_the_launch_saying_so(tmp_path: Path) -> None:
    """Without CAP_SYS_ADMIN (setpriv drops it) the kernel refuses unshare(CLONE_NEWNET), as
    a machine that allows no namespaces does: no fallback to the machine's network."""
    bin_dir = stand_ins.bin_dir(tmp_path / "bin", etcd=stand_ins.serving())
    result = subprocess.run(
        ["setpriv", "--bounding-set=-sys_admin", *launcher_command(bin_dir, tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "onemachine cluster: this machine does not allow network namespaces: "
        "unshare(CLONE_NEWNET) failed: Operation not permitted"
    )
    assert started_pids(result.stderr) == {}


def test_a_state_dir_in_use_is_refused_before_anything_starts(tmp_path: Path, run_launcher) -> None:
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "etcd").mkdir()
    result = run_launcher(stand_ins.bin_dir(tmp_path / "bin"))
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"onemachine cluster: --state-dir {tmp_path / 'state'} is not empty: "
        "give a new or empty directory"
    )


@pytest.mark.parametrize(
    ("value", "reason"),
    [("0s", "'0s' must be positive"), ("soon", 'time: invalid duration "soon"')],
)
def test_a_ready_timeout_that_is_not_a_positive_duration_is_refused(
    tmp_path: Path, run_launcher, value: str, reason: str
) -> None:
    result = run_launcher(stand_ins.bin_dir(tmp_path / "bin"), "--ready-timeout", value)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"python -m onemachine cluster: error: argument --ready-timeout: {reason}"
    )


@pytest.mark.parametrize("value", ["mcp:latest", "=integrations/Dockerfile", "mcp:latest="])
def test_a_dockerfile_image_that_is_not_a_name_and_a_dockerfile_is_refused(
    tmp_path: Path, run_launcher, value: str
) -> None:
    result = run_launcher(stand_ins.bin_dir(tmp_path / "bin"), "--dockerfile-image", value)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "python -m onemachine cluster: error: argument --dockerfile-image: "
        f"{value!r} is not NAME=DOCKERFILE"
    )


def test_an_oidc_clients_file_others_may_read_is_refused_before_anything_starts(
    tmp_path: Path, run_launcher
) -> None:
    clients = write_clients_file(tmp_path / "clients.json", mode=0o644)
    result = run_launcher(stand_ins.bin_dir(tmp_path / "bin"), "--oidc-clients", str(clients))
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"onemachine cluster: --oidc-clients {clients}: mode 0644 lets others read it; "
        "it holds secrets, so it must be 0600 or stricter (chmod 600)"
    )
    assert started_pids(result.stderr) == {}
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize(
    "value", ["agentcube-code-interpreter-mcp:8000", "agentcube/mcp", "agentcube/mcp:0", "a/B:80"]
)
def test_a_forward_service_that_is_not_namespace_name_port_is_refused(
    tmp_path: Path, run_launcher, value: str
) -> None:
    result = run_launcher(stand_ins.bin_dir(tmp_path / "bin"), "--forward-service", value)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"python -m onemachine cluster: error: argument --forward-service: {value!r}: expected "
        "NAMESPACE/NAME:PORT, the Service's name and one of its ports "
        "(e.g. agentcube/agentcube-code-interpreter-mcp:8000)"
    )


def test_node_real_without_a_kubelet_names_it_with_where_it_comes_from_and_nothing_starts(
    tmp_path: Path, run_launcher
) -> None:
    """The stand-ins' bin-dir has no kubelet or kube-scheduler (CI has none either)."""
    bin_dir = stand_ins.bin_dir(tmp_path / "bin")
    result = run_launcher(bin_dir, "--node", "real")
    assert result.returncode == 2, result.stderr
    assert "nothing was started" in result.stderr
    assert f"{bin_dir / 'kubelet'}: `make WHAT=cmd/kubelet`" in result.stderr, result.stderr
    assert f"{bin_dir / 'kube-scheduler'}: `make WHAT=cmd/kube-scheduler`" in result.stderr
    assert not started_pids(result.stderr)


def test_node_auto_without_a_kubelet_runs_the_process_node_and_says_why(
    tmp_path: Path, run_launcher
) -> None:
    bin_dir = stand_ins.bin_dir(tmp_path / "bin")
    result = run_launcher(bin_dir, "--node", "auto", "--ready-timeout", "1ms")
    assert "pods run on the process node: the real node's kubelet, kube-scheduler" in (
        result.stderr
    ), result.stderr


def test_a_node_kind_the_launcher_does_not_know_is_refused(tmp_path: Path, run_launcher) -> None:
    result = run_launcher(stand_ins.bin_dir(tmp_path / "bin"), "--node", "vm")
    assert result.returncode == 2
    assert "argument --node: invalid choice: 'vm'" in result.stderr
