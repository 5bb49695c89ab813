"""`python -m onemachine e2e`: run_e2e.sh's whole plan on the one-machine cluster.

The order is run_e2e.sh's (cluster, set-up, tokens, Go tests, Python tests, the in-cluster
MCP test last, logs on a failure), with two things done at once that run_e2e.sh does one
after the other: the virtual environment is filled and the Go tests are compiled while the
cluster starts.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from kubernetes.client.rest import ApiException

from agentcube_contract.durations import positive_duration
from onemachine.cluster import bootstrap
from onemachine.cluster.layout import SYSTEM_NAMESPACE
from onemachine.e2e import deploy, evidence, oidc, plan, runners, venv
from onemachine.e2e.checkout import Checkout, CheckoutError, mcp_image_mapping
from onemachine.e2e.cluster_run import ClusterEndpoints, ClusterError, ClusterRun
from onemachine.e2e.outcomes import Report

WORKLOAD_NAMESPACE = SYSTEM_NAMESPACE  # run_e2e.sh's defaults: both agentcube (run_e2e.sh:22-23)
MCP_DEPLOYMENT = "agentcube-code-interpreter-mcp"
MCP_PORT = 8000
KEYCLOAK_HOST = f"keycloak.{SYSTEM_NAMESPACE}.svc.cluster.local:8080"  # run_e2e.sh:513
DEFAULT_VENV = Path("/tmp/agentcube-e2e-venv")  # run_e2e.sh's E2E_VENV_DIR (run_e2e.sh:24)


class RunFailed(Exception):
    """A step before the tests failed; the message says which and why."""


def add_e2e_command(commands: argparse._SubParsersAction) -> None:
    e2e = commands.add_parser(
        "e2e",
        help="upstream AgentCube's own e2e (test/e2e/run_e2e.sh's plan) on the one-machine cluster",
        description=(
            "Start the one-machine cluster from your builds, set it up as run_e2e.sh does, "
            "run your checkout's go test ./test/e2e/... and its Python e2e files, print one "
            "summary, write JUnit, collect every log on a failure, and stop the cluster."
        ),
    )
    e2e.add_argument(
        "--checkout",
        type=Path,
        required=True,
        metavar="DIR",
        help="your volcano-sh/agentcube checkout (its test/e2e, CRDs, SDK)",
    )
    e2e.add_argument(
        "--bin-dir",
        type=Path,
        required=True,
        metavar="DIR",
        help="your builds, as `python -m onemachine cluster --bin-dir` takes them",
    )
    e2e.add_argument(
        "--agent-sandbox-src",
        type=Path,
        required=True,
        metavar="DIR",
        help="the kubernetes-sigs/agent-sandbox checkout you built from (its CRDs)",
    )
    e2e.add_argument(
        "--state-dir",
        type=Path,
        metavar="DIR",
        help="a new or empty directory for the cluster, logs and the JUnit file "
        "(default: a new temporary one, kept)",
    )
    e2e.add_argument(
        "--venv",
        type=Path,
        default=DEFAULT_VENV,
        metavar="DIR",
        help=f"the Python e2e's virtual environment, made if missing and kept "
        f"(default {DEFAULT_VENV}, run_e2e.sh's E2E_VENV_DIR)",
    )
    e2e.add_argument("--go", default="go", metavar="PROGRAM", help="your go (default: go on PATH)")
    e2e.add_argument("--run", metavar="REGEXP", help="only the Go tests go test -run selects")
    e2e.add_argument(
        "--python",
        action="append",
        default=[],
        metavar="PATTERN",
        help="only these Python e2e files (fnmatch, .py optional; repeatable)",
    )
    e2e.add_argument("--no-go", action="store_true", help="no Go tests")
    e2e.add_argument("--no-python", action="store_true", help="no Python tests")
    e2e.add_argument(
        "--keep-cluster",
        action="store_true",
        help="leave the cluster running at the end, and say how to stop it",
    )
    e2e.add_argument(
        "--ready-timeout",
        type=positive_duration,
        default=120.0,
        metavar="DURATION",
        help="how long each part of the cluster may take to be ready (default 2m)",
    )
    e2e.add_argument("--rollout-timeout", type=positive_duration, default=300.0,
                     metavar="DURATION",
                     help="how long the MCP Deployment may take to roll out (default 5m, "
                     "run_e2e.sh's --timeout=300s)")  # fmt: skip


def run_e2e(arguments: argparse.Namespace) -> int:
    """The whole plan; 0 when every selected test passed, 1 when one failed or a step
    before them did, 2 for arguments it cannot run with."""
    try:
        checkout = Checkout.at(arguments.checkout)
        selection = plan.Selection(
            go=not arguments.no_go,
            go_run=arguments.run,
            python_patterns=tuple(arguments.python),
            python=not arguments.no_python,
        )
        python_steps = selection.python_steps()
        secrets = checkout.client_secrets()
        state = _fresh_state_dir(arguments.state_dir)
    except (CheckoutError, plan.SelectionError, OSError) as error:
        print(f"onemachine e2e: {error}", file=sys.stderr)
        return 2
    return _Run(arguments, checkout, selection, python_steps, secrets, state).run()


class _Run:
    """One run of the plan, its state under `state`."""

    def __init__(self, arguments, checkout, selection, python_steps, secrets, state) -> None:
        self.arguments = arguments
        self.checkout: Checkout = checkout
        self.selection: plan.Selection = selection
        self.python_steps: list[plan.Step] = python_steps
        self.secrets: dict[str, str] = secrets
        self.state: Path = state
        self.logs = state / "logs"
        self.report = Report()
        self.stages: dict[str, float] = {}
        self.cluster: ClusterRun | None = None
        self.api = None

    def run(self) -> int:
        started = time.monotonic()
        self.logs.mkdir(parents=True, exist_ok=True)
        signal.signal(signal.SIGTERM, _terminated)
        code = 1
        try:
            self._run_plan()
            code = 1 if self.report.failed else 0
        except (
            RunFailed,
            ClusterError,
            deploy.DeployError,
            oidc.TokenError,
            venv.VenvError,
        ) as error:
            print(f"onemachine e2e: {error}", file=sys.stderr)
        except (ApiException, OSError) as error:
            print(f"onemachine e2e: {error}", file=sys.stderr)
        except KeyboardInterrupt:
            print("onemachine e2e: interrupted", file=sys.stderr)
            code = 130
        finally:
            if code != 0:
                self._collect_evidence()
            self._finish(time.monotonic() - started)
        return code

    def _run_plan(self) -> None:
        venv_python = venv.python_of(self.arguments.venv)
        mcp = deploy.mcp_documents(self.checkout, SYSTEM_NAMESPACE, WORKLOAD_NAMESPACE)
        clients = oidc.write_clients_file(self.state / "oidc-clients.json", self.secrets)
        with ThreadPoolExecutor(max_workers=2) as background:
            filled = background.submit(
                _timed_call, venv.prepare, self.arguments.venv, self.checkout,
                self.logs / "venv.log",
            )  # fmt: skip
            compiled = self._compile_go_tests(background)
            endpoints = self._start_cluster(mcp, venv_python, clients)
            values = self._set_up(endpoints)
            self.stages["virtual environment, beside the cluster"] = filled.result()
            if compiled is not None:
                self.stages["Go tests compiled, beside the cluster"] = compiled.result()
        if self.selection.go:
            self._timed("Go tests", self._go_tests, values, endpoints)
        self._timed("Python tests", self._python_tests, values, endpoints, mcp, venv_python)

    def _compile_go_tests(self, background: ThreadPoolExecutor) -> Future | None:
        """`go test -run '^$'`: compiled (into go's cache) while the cluster starts."""
        if not self.selection.go:
            return None
        log = self.logs / "go-compile.log"

        def compile_tests() -> None:
            with log.open("w", encoding="utf-8") as output:
                subprocess.run(
                    [self.arguments.go, "test", "-count=1", "-run", "^$", "./test/e2e/..."],
                    cwd=self.checkout.root, stdout=output, stderr=subprocess.STDOUT,
                )  # fmt: skip

        return background.submit(_timed_call, compile_tests)

    def _start_cluster(self, mcp: list[dict], venv_python: Path, clients: Path) -> ClusterEndpoints:
        image = _container_image(mcp)
        arguments = [
            "--bin-dir", str(self.arguments.bin_dir),
            "--agentcube-src", str(self.checkout.root),
            "--agent-sandbox-src", str(self.arguments.agent_sandbox_src),
            "--image", mcp_image_mapping(image, self.checkout.mcp_entrypoint(), venv_python),
            "--oidc-clients", str(clients),
            "--forward-service", f"{SYSTEM_NAMESPACE}/{MCP_DEPLOYMENT}:{MCP_PORT}",
            "--ready-timeout", f"{self.arguments.ready_timeout:g}s",
        ]  # fmt: skip
        began = time.monotonic()
        self.cluster = ClusterRun.start(
            arguments, self.state / "cluster", self.logs / "cluster.log"
        )
        print(f"onemachine e2e: starting the cluster (log: {self.cluster.log})", flush=True)
        endpoints = self.cluster.wait_ready(timeout=12 * self.arguments.ready_timeout)
        self.stages["cluster start"] = time.monotonic() - began
        self.api = bootstrap.connect(endpoints.admin_kubeconfig)
        return endpoints

    def _set_up(self, endpoints: ClusterEndpoints) -> dict[str, str]:
        """run_e2e.sh's set-up after Helm (run_e2e.sh:416-432) and its tokens (500-531): the
        values every step takes."""
        began = time.monotonic()
        deploy.e2e_service_account(self.api, SYSTEM_NAMESPACE)
        deploy.apply(self.api, deploy.workload_documents(self.checkout, WORKLOAD_NAMESPACE))
        deploy.e2e_token(self.api, SYSTEM_NAMESPACE)  # run_e2e.sh makes it; Keycloak's wins
        app_id, admin_id = oidc.CLIENTS["app"][0], oidc.CLIENTS["admin"][0]
        issuer = endpoints.oidc_issuer
        values = {
            "API_TOKEN": oidc.client_credentials_token(
                issuer, app_id, self.secrets["app"], KEYCLOAK_HOST
            ),
            "ADMIN_TOKEN": oidc.client_credentials_token(
                issuer, admin_id, self.secrets["admin"], KEYCLOAK_HOST
            ),
            "OIDC_ENABLED": "true",
            "KEYCLOAK_TOKEN_URL": oidc.token_url(issuer),
            "WORKLOAD_MANAGER_URL": endpoints.workload_manager,
            "ROUTER_URL": endpoints.router,
            "MTLS_ENABLED": "false",  # no SPIRE here: docs/upstream-e2e.md
            "WORKLOAD_NAMESPACE": WORKLOAD_NAMESPACE,
            "AGENTCUBE_NAMESPACE": SYSTEM_NAMESPACE,
        }
        self.stages["set-up"] = time.monotonic() - began
        return values

    def _go_tests(self, values: dict[str, str], endpoints: ClusterEndpoints) -> None:
        env = _base_env(endpoints) | plan.GO_TESTS.environment(values)
        self.report.add(
            runners.run_go_tests(
                self.arguments.go, self.checkout.root, self.selection.go_run, env,
                self.logs / "go-test.json",
            )
        )  # fmt: skip

    def _python_tests(
        self, values: dict[str, str], endpoints: ClusterEndpoints, mcp: list[dict], python: Path
    ) -> None:
        base = runners.activated(self.arguments.venv, _base_env(endpoints))
        for step in self.python_steps:
            if step.name == plan.IN_CLUSTER_MCP:
                values = values | {"MCP_K8S_MCP_URL": self._deploy_mcp(values, mcp, endpoints)}
            print(f"\n==> {step.name} ({step.cites})", flush=True)
            env = base | step.environment(values)
            log = self.logs / f"{step.name.removesuffix('.py')}.log"
            self.report.add(
                runners.run_python_test(python, self.checkout.e2e_dir, step.name, env, log)
            )

    def _deploy_mcp(self, values: dict[str, str], mcp: list[dict], endpoints) -> str:
        """run_e2e.sh:666-696: the Deployment applied, rolled out, given API_TOKEN, rolled out
        again; the URL of its Service on the host."""
        timeout = self.arguments.rollout_timeout
        deploy.apply(self.api, mcp)
        deploy.wait_rollout(self.api, SYSTEM_NAMESPACE, MCP_DEPLOYMENT, timeout)
        deploy.set_env(self.api, SYSTEM_NAMESPACE, MCP_DEPLOYMENT, "API_TOKEN", values["API_TOKEN"])
        deploy.wait_rollout(self.api, SYSTEM_NAMESPACE, MCP_DEPLOYMENT, timeout)
        key = f"{SYSTEM_NAMESPACE}/{MCP_DEPLOYMENT}:{MCP_PORT}"
        forwarded = ClusterEndpoints.read(self.state / "cluster").forwards.get(key)
        if forwarded is None:
            raise RunFailed(f"the cluster forwards no host port to {key}")
        return f"http://{forwarded}/mcp"

    def _timed(self, stage: str, step, *arguments) -> None:
        began = time.monotonic()
        step(*arguments)
        self.stages[stage] = time.monotonic() - began

    def _collect_evidence(self) -> None:
        if self.api is None:
            return
        artifacts = self.state / "e2e-logs"
        problems = evidence.collect(self.api, self.state / "cluster" / "logs", artifacts)
        print(f"onemachine e2e: logs of every part and pod in {artifacts}", file=sys.stderr)
        for problem in problems:
            print(f"  not collected: {problem}", file=sys.stderr)

    def _finish(self, seconds: float) -> None:
        junit = self.state / "junit.xml"
        self.report.write_junit(junit)
        if self.cluster is not None:
            if self.arguments.keep_cluster and self.cluster.process.poll() is None:
                print(
                    f"onemachine e2e: the cluster keeps running (pid {self.cluster.process.pid},"
                    f" state {self.cluster.state_dir}); stop it with: "
                    f"kill {self.cluster.process.pid}",
                    flush=True,
                )
            else:
                began = time.monotonic()
                self.cluster.stop()
                self.stages["cluster stop"] = time.monotonic() - began
        stages = ", ".join(f"{name} {value:.1f} s" for name, value in self.stages.items())
        print(f"\nstages: {stages}" if stages else "")
        print(f"JUnit: {junit}")
        print(self.report.summary(seconds), flush=True)


def _fresh_state_dir(given: Path | None) -> Path:
    if given is None:
        return Path(tempfile.mkdtemp(prefix="onemachine-e2e-")).resolve()
    if given.exists() and any(given.iterdir()):
        raise OSError(f"--state-dir {given} is not empty: give a new or empty directory")
    given.mkdir(parents=True, exist_ok=True)
    return given.resolve()


def _container_image(documents: list[dict]) -> str:
    deployment = next(d for d in documents if d.get("kind") == "Deployment")
    return deployment["spec"]["template"]["spec"]["containers"][0]["image"]


def _base_env(endpoints: ClusterEndpoints) -> dict[str, str]:
    """The user's environment, with the cluster's admin kubeconfig for upstream's Go tests
    (they load it with client-go's default rules)."""
    return dict(os.environ) | {"KUBECONFIG": str(endpoints.admin_kubeconfig)}


def _timed_call(function, *arguments) -> float:
    """How long `function(*arguments)` took, in seconds."""
    began = time.monotonic()
    function(*arguments)
    return time.monotonic() - began


def _terminated(*_: object) -> None:
    raise KeyboardInterrupt
