"""`python -m onemachine e2e` end to end with stand-ins: the launcher and its stand-in
parts (tests/onemachine/cluster/programs), the real node, the real issuer, a stand-in
checkout (a go, Python e2e files, installable packages, an MCP server the node runs as a
pod). What is checked is the command's own work: the set-up reaching the cluster, each
step's variables, the tokens from the token endpoint, the in-cluster MCP pod through its
Service, the report, the logs on a failure, and nothing left running."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from tests.onemachine.cluster import stand_ins as cluster_stand_ins
from tests.onemachine.cluster.conftest import needs_namespaces, started_pids
from tests.onemachine.cluster.running import StandInInputs, stand_in_inputs
from tests.onemachine.e2e import checkouts, stand_ins
from tests.processes import alive
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[3]
TIMEOUT = 300

pytestmark = needs_namespaces


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One virtual environment for the module's runs (the command fills it each time)."""
    return tmp_path_factory.mktemp("e2e-venv") / "venv"


def inputs_with_checkout(directory: Path) -> StandInInputs:
    inputs = stand_in_inputs(directory)
    checkout = checkouts.write(inputs.agentcube_src)
    crds = checkout / "manifests/charts/base/crds"
    (crds / "codeinterpreter.yaml").write_text(
        cluster_stand_ins.crd("runtime.agentcube.volcano.sh", "CodeInterpreter"), encoding="utf-8"
    )
    stand_ins.write_python_tests(checkout / "test/e2e")
    stand_ins.write_packages(checkout)
    return inputs


def e2e_command(inputs: StandInInputs, state: Path, venv: Path, *extra: str) -> list[str]:
    """`python -m onemachine e2e` on the stand-ins, with the stand-in go."""
    go = stand_ins.write_go(state.parent / "go")
    return [
        sys.executable,
        "-m",
        "onemachine",
        "e2e",
        "--checkout",
        str(inputs.agentcube_src),
        "--bin-dir",
        str(inputs.bin_dir),
        "--agent-sandbox-src",
        str(inputs.agent_sandbox_src),
        "--state-dir",
        str(state),
        "--venv",
        str(venv),
        "--go",
        str(go),
        *extra,
    ]


def run_e2e(
    inputs: StandInInputs, state: Path, venv: Path, *extra: str, env: dict | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        e2e_command(inputs, state, venv, *extra),
        cwd=ROOT,
        env=inputs.env | (env or {}),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def launcher_pids(state: Path) -> list[int]:
    """Every part's pid, of both clusters, as their launchers logged them."""
    logs = "".join(log.read_text(encoding="utf-8") for log in state.glob("logs/cluster-*.log"))
    return list(started_pids(logs).values())


def test_the_whole_plan_passes_reports_and_stops_everything(tmp_path: Path, venv: Path) -> None:
    inputs = inputs_with_checkout(tmp_path)
    state = tmp_path / "state"
    answer = run_e2e(inputs, state, venv)
    output = answer.stdout + answer.stderr
    assert answer.returncode == 0, output
    summary = answer.stdout.strip().splitlines()[-1]
    assert summary.startswith(
        "upstream e2e on the one-machine cluster: 19 passed, 0 failed, 2 skipped in "
    ), output
    # Without Keycloak first: the OIDC test skips, upstream's own words; then with it.
    assert "(go 2 passed, 0 failed, 2 skipped; test_codeinterpreter.py 2 passed" in summary
    assert "test_mcp_code_interpreter_k8s.py 4 passed, 0 failed, 0 skipped; " in summary
    assert summary.endswith(
        "go with Keycloak 1 passed, 0 failed, 0 skipped; "
        "test_oidc_auth.py 4 passed, 0 failed, 0 skipped)"
    ), summary
    suites = ElementTree.parse(state / "junit.xml").getroot().findall("testsuite")
    assert [s.get("name") for s in suites][:2] == ["go", "test_codeinterpreter.py"]
    with_keycloak = next(s for s in suites if s.get("name") == "go with Keycloak")
    assert [c.get("name") for c in with_keycloak.findall("testcase")] == ["TestOIDCAuth"]
    assert not (state / "e2e-logs").exists()
    assert launcher_pids(state) and not any(alive(pid) for pid in launcher_pids(state))
    assert not list(state.glob("cluster-*/cluster.json"))
    for secret in ("app-secret-1", "admin-secret-3"):
        assert secret not in output
        for log in state.glob("**/*.log"):
            assert secret not in log.read_text(), log


@pytest.mark.slow
def test_a_failing_test_fails_the_run_with_every_part_s_and_pod_s_log(
    tmp_path: Path, venv: Path
) -> None:
    inputs = inputs_with_checkout(tmp_path)
    state = tmp_path / "state"
    answer = run_e2e(
        inputs,
        state,
        venv,
        "--python",
        "test_mcp_code_interpreter_k8s",
        env={"STAND_IN_GO_FAIL": "1"},
    )
    output = answer.stdout + answer.stderr
    assert answer.returncode == 1, output
    assert "failed: go: TestVariables" in answer.stdout, output
    logs = state / "e2e-logs" / "without-keycloak"
    assert (logs / "part-kube-apiserver.log").is_file(), output
    pods = sorted(p.name for p in logs.glob("pod-agentcube-agentcube-code-interpreter-mcp-*.json"))
    assert pods, sorted(p.name for p in logs.iterdir())
    envs = [
        {
            e["name"]: e["value"]
            for e in json.loads((logs / pod).read_text())["spec"]["containers"][0]["env"]
        }
        for pod in pods
    ]
    assert any("API_TOKEN" in env for env in envs), envs  # the pod after `set env`
    assert {value for env in envs for value in env.values()} == {"(value not collected)"}
    # Each container's log, read through the API server from the node's kubelet API: the
    # MCP pod's server logged the test's request.
    mcp_logs = [
        log.read_text()
        for log in logs.glob("pod-agentcube-agentcube-code-interpreter-mcp-*-mcp.log")
    ]
    assert any('"GET /mcp HTTP/1.1" 200' in log for log in mcp_logs), mcp_logs
    assert launcher_pids(state) and not any(alive(pid) for pid in launcher_pids(state))


@pytest.mark.slow
def test_a_selection_runs_on_one_cluster_which_keep_cluster_leaves_running(
    tmp_path: Path, venv: Path
) -> None:
    """`--run` selects among the Go tests, and with no OIDC test among them and no
    Keycloak-only file there is no second configuration: its cluster is never started, and
    --keep-cluster keeps the one the tests ran on."""
    inputs = inputs_with_checkout(tmp_path)
    state = tmp_path / "state"
    answer = run_e2e(
        inputs,
        state,
        venv,
        "--keep-cluster",
        "--run",
        "^TestVariables$",
        "--python",
        "test_codeinterpreter",
    )
    assert answer.returncode == 0, answer.stdout + answer.stderr
    suites = ElementTree.parse(state / "junit.xml").getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == ["go", "test_codeinterpreter.py"]
    assert [c.get("name") for c in suites[0].findall("testcase")] == ["TestVariables"]
    assert not (state / "cluster-with-keycloak").exists()
    kept = re.search(r"keeps running \(state (\S+)\); stop it with: kill (\d+)", answer.stdout)
    assert kept, answer.stdout
    assert kept[1] == str(state / "cluster-without-keycloak")
    described = json.loads((Path(kept[1]) / "cluster.json").read_text())
    assert described["router"].startswith("http://127.0.0.1:")  # still there to call
    pid = int(kept[2])
    assert alive(pid) and launcher_pids(state)
    os.kill(pid, signal.SIGTERM)
    wait_until(
        lambda: not any(alive(part) for part in [pid, *launcher_pids(state)]),
        "the kept cluster and every part of it to stop on SIGTERM",
        timeout=60,
    )


@pytest.mark.slow
def test_sigterm_in_the_middle_stops_every_cluster_and_test(tmp_path: Path, venv: Path) -> None:
    inputs = inputs_with_checkout(tmp_path)
    state = tmp_path / "state"
    with subprocess.Popen(
        e2e_command(inputs, state, venv),
        cwd=ROOT,
        env=inputs.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as e2e:
        wait_until(
            lambda: (state / "cluster-with-keycloak" / "cluster.json").exists(),
            "the second cluster to be ready",
            timeout=120,
        )
        e2e.send_signal(signal.SIGTERM)
        out, err = e2e.communicate(timeout=120)
    assert e2e.returncode == 130, out + err
    assert "onemachine e2e: interrupted" in err
    assert launcher_pids(state) and not any(alive(pid) for pid in launcher_pids(state))
    assert not list(state.glob("cluster-*/cluster.json"))
