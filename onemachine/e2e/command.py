"""`python -m onemachine e2e`: run_e2e.sh's whole plan on the one-machine cluster.

The order is run_e2e.sh's (cluster, set-up, tokens, Go tests, Python tests, the in-cluster
MCP test last, logs on a failure), in its two configurations one after the other (without
Keycloak, then with it: plan.py), with what run_e2e.sh does one step after another done at
once where nothing waits on it: the virtual environment is filled and the Go tests are
compiled while the first cluster starts, and the second cluster starts while the first
one's tests run.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import urllib3
import yaml
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from onemachine.cluster import bootstrap
from onemachine.cluster.binaries import NODE_KINDS
from onemachine.cluster.layout import SYSTEM_NAMESPACE
from onemachine.e2e import deploy, evidence, oidc, plan, runners, venv
from onemachine.e2e.checkout import MCP_DEPLOYMENT as MCP_MANIFEST
from onemachine.e2e.checkout import MCP_DOCKERFILE, Checkout, CheckoutError, mcp_image_mapping
from onemachine.e2e.cluster_run import ClusterEndpoints, ClusterError, ClusterRun
from onemachine.e2e.outcomes import Outcome, Report
from plumbing.arguments import positive_duration

WORKLOAD_NAMESPACE = SYSTEM_NAMESPACE  # run_e2e.sh's defaults: both agentcube (run_e2e.sh:22-23)
MCP_DEPLOYMENT = "agentcube-code-interpreter-mcp"
MCP_PORT = 8000
KEYCLOAK_HOST = f"keycloak.{SYSTEM_NAMESPACE}.svc.cluster.local:8080"  # run_e2e.sh:513
DEFAULT_VENV = Path("/tmp/agentcube-e2e-venv")  # run_e2e.sh's E2E_VENV_DIR (run_e2e.sh:24)


class RunFailed(Exception):
    """A step before the tests failed; the message says which and why."""


# What ends a run with a message, not a traceback: its own steps' errors, and the API
# server or a part gone (the client's own errors, and urllib3's beneath it).
_FAILURES = (
    RunFailed,
    ClusterError,
    deploy.DeployError,
    oidc.TokenError,
    venv.VenvError,
    ApiException,
    urllib3.exceptions.HTTPError,
    OSError,
)


def add_e2e_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
        type=_absolute,
        required=True,
        metavar="DIR",
        help="your volcano-sh/agentcube checkout (its test/e2e, CRDs, SDK)",
    )
    e2e.add_argument(
        "--bin-dir",
        type=_absolute,
        required=True,
        metavar="DIR",
        help="your builds, as `python -m onemachine cluster --bin-dir` takes them",
    )
    e2e.add_argument(
        "--agent-sandbox-src",
        type=_absolute,
        required=True,
        metavar="DIR",
        help="the kubernetes-sigs/agent-sandbox checkout you built from (its CRDs)",
    )
    e2e.add_argument(
        "--state-dir",
        type=_absolute,
        metavar="DIR",
        help="a new or empty directory for the cluster, logs and the JUnit file "
        "(default: a new temporary one, kept)",
    )
    e2e.add_argument(
        "--venv",
        type=_absolute,
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
    e2e.add_argument(
        "--node",
        choices=NODE_KINDS,
        default="auto",
        help="the cluster's node (python -m onemachine cluster --node): real runs the pods "
        "as containers through your kubelet and containerd (needs root); process runs them "
        "as local processes (runs without root); auto (default): real where its programs "
        "are found and this is root, else process (docs/upstream-e2e.md)",
    )
    e2e.add_argument(
        "--rollout-timeout",
        type=positive_duration,
        default=300.0,
        metavar="DURATION",
        help="how long the MCP Deployment may take to roll out (default 5m, "
        "run_e2e.sh's --timeout=300s)",
    )


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
        mcp = deploy.mcp_documents(checkout, SYSTEM_NAMESPACE, WORKLOAD_NAMESPACE)
        image = mcp_image_mapping(
            _container_image(mcp), checkout.mcp_entrypoint(), venv.python_of(arguments.venv)
        )
        state = _fresh_state_dir(arguments.state_dir)
    except (CheckoutError, plan.SelectionError, OSError, yaml.YAMLError) as error:
        print(f"onemachine e2e: {error}", file=sys.stderr)
        return 2
    return _Run(arguments, checkout, selection, python_steps, secrets, mcp, image, state).run()


@dataclass(frozen=True)
class _Configuration:
    """One of run_e2e.sh's two configurations (plan.py): its name in the report, and
    whether Keycloak (here, the issuer) is on, with the Router checking its tokens."""

    name: str
    keycloak: bool

    @property
    def directory(self) -> str:
        return "with-keycloak" if self.keycloak else "without-keycloak"


T = TypeVar("T")
WITHOUT_KEYCLOAK = _Configuration("", keycloak=False)
WITH_KEYCLOAK = _Configuration("with Keycloak", keycloak=True)


class _Run:
    """One run of the plan, its state under `state`."""

    def __init__(
        self,
        arguments: argparse.Namespace,
        checkout: Checkout,
        selection: plan.Selection,
        python_steps: list[plan.Step],
        secrets: dict[str, str],
        mcp: list[dict[str, Any]],
        image: str,
        state: Path,
    ) -> None:
        self.arguments = arguments
        self.checkout = checkout
        self.selection = selection
        self.python_steps = python_steps
        self.secrets = secrets
        self.state = state
        self.logs = state / "logs"
        self.venv_python = venv.python_of(arguments.venv)
        self.mcp = mcp
        self.image = image  # the process node's --image entry for the MCP image
        self.mcp_image = _container_image(mcp)  # made by the real node (--dockerfile-image)
        self.report = Report()
        self.stages: dict[str, float] = {}
        self.clusters: dict[_Configuration, ClusterRun] = {}
        self.apis: dict[_Configuration, ApiClient] = {}

    def run(self) -> int:
        started = time.monotonic()
        self.logs.mkdir(mode=0o700, parents=True, exist_ok=True)
        signal.signal(signal.SIGTERM, _terminated)
        code = 1
        try:
            self._run_plan()
            code = 1 if self.report.failed else 0
        except _FAILURES as error:
            print(f"onemachine e2e: {error}", file=sys.stderr)
        except KeyboardInterrupt:
            print("onemachine e2e: interrupted", file=sys.stderr)
            code = 130
        try:
            if code == 1:  # run_e2e.sh collects when a test failed (run_e2e.sh:703-707)
                self._collect_evidence()
        except _FAILURES as error:
            print(f"onemachine e2e: logs not collected: {error}", file=sys.stderr)
        finally:
            self._finish(time.monotonic() - started)
        return code

    def _run_plan(self) -> None:
        """Without Keycloak first, every selected test but the Keycloak-only file; then
        with Keycloak, on a second cluster, the Go tests the first configuration skipped for
        want of OIDC, and the Keycloak-only file. For the whole plan the second cluster
        starts while the first one's tests run."""
        keycloak_steps = [step for step in self.python_steps if step.keycloak_only]
        plain_steps = [step for step in self.python_steps if not step.keycloak_only]
        background = ThreadPoolExecutor(max_workers=2)
        try:
            filled = background.submit(
                _timed_call,
                venv.prepare,
                self.arguments.venv,
                self.checkout,
                self.logs / "venv.log",
            )
            compiled = self._compile_go_tests(background)
            endpoints = self._start(WITHOUT_KEYCLOAK)
            if keycloak_steps or (self.selection.go and self.selection.go_run is None):
                self._launch(WITH_KEYCLOAK)  # comes up while the first configuration runs
            values = self._set_up(WITHOUT_KEYCLOAK, endpoints)
            self.stages["virtual environment (beside the cluster)"] = filled.result()
            if compiled is not None:
                self.stages["Go tests compiled (beside the cluster)"] = compiled.result()
        finally:  # an interrupt does not wait for pip or the compiler
            background.shutdown(wait=False, cancel_futures=True)
        go_outcomes = []
        if self.selection.go:
            go_outcomes = self._timed(
                "Go tests",
                self._go_tests,
                WITHOUT_KEYCLOAK,
                values,
                endpoints,
                self.selection.go_run,
            )
        self._timed(
            "Python tests", self._python_tests, WITHOUT_KEYCLOAK, values, endpoints, plain_steps
        )
        oidc_tests = [o.name for o in go_outcomes if plan.OIDC_SKIP in o.detail]
        if not (oidc_tests or keycloak_steps):
            if WITH_KEYCLOAK in self.clusters:  # nothing for it: the first cluster is kept
                self.clusters.pop(WITH_KEYCLOAK).stop()
            return
        if WITH_KEYCLOAK not in self.clusters:
            self._launch(WITH_KEYCLOAK)
        self._stop(WITHOUT_KEYCLOAK)
        self._timed("with Keycloak", self._with_keycloak, oidc_tests, keycloak_steps)

    def _with_keycloak(self, go_tests: list[str], python_steps: list[plan.Step]) -> None:
        endpoints = self._wait_ready(WITH_KEYCLOAK)
        values = self._set_up(WITH_KEYCLOAK, endpoints)
        if go_tests:
            run = "^(" + "|".join(re.escape(name) for name in go_tests) + ")$"
            self._go_tests(WITH_KEYCLOAK, values, endpoints, run)
        self._python_tests(WITH_KEYCLOAK, values, endpoints, python_steps)

    def _compile_go_tests(self, background: ThreadPoolExecutor) -> Future[float] | None:
        """`go test -run '^$'`: compiled (into go's cache) while the cluster starts."""
        if not self.selection.go:
            return None
        log = self.logs / "go-compile.log"

        def compile_tests() -> None:
            with log.open("w", encoding="utf-8") as output:
                subprocess.run(
                    [self.arguments.go, "test", "-count=1", "-run", "^$", "./test/e2e/..."],
                    cwd=self.checkout.root,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                )

        return background.submit(_timed_call, compile_tests)

    def _launch(self, configuration: _Configuration) -> None:
        arguments = [
            "--bin-dir",
            str(self.arguments.bin_dir),
            "--agentcube-src",
            str(self.checkout.root),
            "--agent-sandbox-src",
            str(self.arguments.agent_sandbox_src),
            "--image",
            self.image,
            "--dockerfile-image",
            f"{self.mcp_image}={MCP_DOCKERFILE}",
            "--ready-timeout",
            f"{self.arguments.ready_timeout:g}s",
            "--node",
            self.arguments.node,
        ]
        if configuration.keycloak:
            clients = oidc.write_clients_file(self.state / "oidc-clients.json", self.secrets)
            arguments += ["--oidc-clients", str(clients)]
        else:
            forward = f"{SYSTEM_NAMESPACE}/{MCP_DEPLOYMENT}:{MCP_PORT}"
            arguments += ["--router-auth", "none", "--forward-service", forward]
        log = self.logs / f"cluster-{configuration.directory}.log"
        cluster = ClusterRun.start(
            arguments, self.state / f"cluster-{configuration.directory}", log
        )
        self.clusters[configuration] = cluster
        print(
            f"onemachine e2e: starting a cluster {configuration.name or 'without Keycloak'}"
            f" (log: {cluster.log})",
            flush=True,
        )

    def _start(self, configuration: _Configuration) -> ClusterEndpoints:
        began = time.monotonic()
        self._launch(configuration)
        endpoints = self._wait_ready(configuration)
        self.stages["cluster start"] = time.monotonic() - began
        return endpoints

    def _wait_ready(self, configuration: _Configuration) -> ClusterEndpoints:
        cluster = self.clusters[configuration]
        endpoints = cluster.wait_ready(timeout=12 * self.arguments.ready_timeout)
        self.apis[configuration] = bootstrap.connect(endpoints.admin_kubeconfig)
        return endpoints

    def _set_up(self, configuration: _Configuration, endpoints: ClusterEndpoints) -> dict[str, str]:
        """run_e2e.sh's set-up after Helm (run_e2e.sh:416-432) and its tokens (500-531): the
        values every step takes."""
        began = time.monotonic()
        api = self.apis[configuration]
        deploy.e2e_service_account(api, SYSTEM_NAMESPACE)
        deploy.apply(api, deploy.workload_documents(self.checkout, WORKLOAD_NAMESPACE))
        values = {
            "API_TOKEN": deploy.e2e_token(api, SYSTEM_NAMESPACE),
            "ADMIN_TOKEN": "",  # ${ADMIN_TOKEN:-}
            "OIDC_ENABLED": "false",  # ${OIDC_ENABLED:-false}
            "KEYCLOAK_TOKEN_URL": "",  # ${KEYCLOAK_TOKEN_URL:-}
            "WORKLOAD_MANAGER_URL": endpoints.workload_manager,
            "ROUTER_URL": endpoints.router,
            "MTLS_ENABLED": "false",  # no SPIRE here: docs/upstream-e2e.md
            "WORKLOAD_NAMESPACE": WORKLOAD_NAMESPACE,
            "AGENTCUBE_NAMESPACE": SYSTEM_NAMESPACE,
        }
        if configuration.keycloak:  # Keycloak's tokens replace the service account's
            issuer = endpoints.oidc_issuer
            values |= {
                "API_TOKEN": self._token(issuer, "app"),
                "ADMIN_TOKEN": self._token(issuer, "admin"),
                "OIDC_ENABLED": "true",
                "KEYCLOAK_TOKEN_URL": oidc.token_url(issuer),
            }
        self.stages[f"set-up {configuration.name}".strip()] = time.monotonic() - began
        return values

    def _token(self, issuer: str, client: str) -> str:
        client_id = oidc.CLIENTS[client][0]
        return oidc.client_credentials_token(issuer, client_id, self.secrets[client], KEYCLOAK_HOST)

    def _go_tests(
        self,
        configuration: _Configuration,
        values: dict[str, str],
        endpoints: ClusterEndpoints,
        run: str | None,
    ) -> list[Outcome]:
        env = _base_env(endpoints) | plan.GO_TESTS.environment(values, configuration.keycloak)
        log = self.logs / f"go-test-{configuration.directory}.json"
        suite = f"go {configuration.name}".strip()
        outcomes = runners.run_go_tests(self.arguments.go, self.checkout.root, run, env, log, suite)
        self.report.add(outcomes)
        return outcomes

    def _python_tests(
        self,
        configuration: _Configuration,
        values: dict[str, str],
        endpoints: ClusterEndpoints,
        steps: list[plan.Step],
    ) -> None:
        base = runners.activated(self.arguments.venv, _base_env(endpoints))
        for step in steps:
            if step.name == plan.IN_CLUSTER_MCP:
                url = self._deploy_mcp(configuration, values, endpoints)
                values = values | {"MCP_K8S_MCP_URL": url}
            print(f"\n==> {step.name} ({step.cites})", flush=True)
            env = base | step.environment(values, configuration.keycloak)
            log = self.logs / f"{step.name.removesuffix('.py')}.log"
            self.report.add(
                runners.run_python_test(
                    self.venv_python, self.checkout.e2e_dir, step.name, env, log
                )
            )

    def _deploy_mcp(
        self, configuration: _Configuration, values: dict[str, str], endpoints: ClusterEndpoints
    ) -> str:
        """run_e2e.sh:666-696: the Deployment applied, rolled out, given API_TOKEN, rolled out
        again; the URL of its Service on the host."""
        api, timeout = self.apis[configuration], self.arguments.rollout_timeout
        deploy.apply(api, self.mcp)
        deploy.wait_rollout(api, SYSTEM_NAMESPACE, MCP_DEPLOYMENT, timeout)
        deploy.set_env(api, SYSTEM_NAMESPACE, MCP_DEPLOYMENT, "API_TOKEN", values["API_TOKEN"])
        deploy.wait_rollout(api, SYSTEM_NAMESPACE, MCP_DEPLOYMENT, timeout)
        key = f"{SYSTEM_NAMESPACE}/{MCP_DEPLOYMENT}:{MCP_PORT}"
        forwarded = endpoints.forwards.get(key)  # written before cluster.json, at ready
        if forwarded is None:
            raise RunFailed(f"the cluster forwards no host port to {key}")
        return f"http://{forwarded}/mcp"

    def _timed(self, stage: str, step: Callable[..., T], *arguments: Any) -> T:
        began = time.monotonic()
        result = step(*arguments)
        self.stages[stage] = time.monotonic() - began
        return result

    def _stop(self, configuration: _Configuration) -> None:
        """The cluster stopped, its logs collected first when a test failed on it."""
        if self.report.failed:
            self._collect_evidence_of(configuration)
        self.clusters.pop(configuration).stop()
        self.apis.pop(configuration, None)

    def _collect_evidence(self) -> None:
        for configuration in list(self.apis):
            self._collect_evidence_of(configuration)

    def _collect_evidence_of(self, configuration: _Configuration) -> None:
        artifacts = self.state / "e2e-logs" / configuration.directory
        if artifacts.exists():
            return
        cluster = self.clusters[configuration]
        problems = evidence.collect(self.apis[configuration], cluster.state_dir / "logs", artifacts)
        print(f"onemachine e2e: logs of every part and pod in {artifacts}", file=sys.stderr)
        for problem in problems:
            print(f"  not collected: {problem}", file=sys.stderr)

    def _finish(self, seconds: float) -> None:
        """Every cluster stopped (last started first) or, with --keep-cluster, the last one
        left running; then JUnit and the summary."""
        for configuration, cluster in reversed(list(self.clusters.items())):
            if self.arguments.keep_cluster and cluster.process.poll() is None:
                print(
                    f"onemachine e2e: the cluster {configuration.name or 'without Keycloak'} "
                    f"keeps running (state {cluster.state_dir}); stop it with: "
                    f"kill {cluster.process.pid}",
                    flush=True,
                )
                continue
            began = time.monotonic()
            cluster.stop()
            self.stages["cluster stop"] = time.monotonic() - began
        junit = self.state / "junit.xml"
        self.report.write_junit(junit)
        stages = ", ".join(f"{name} {value:.1f} s" for name, value in self.stages.items())
        print(f"\nstages: {stages}" if stages else "")
        print(f"JUnit: {junit}")
        print(self.report.summary(seconds), flush=True)


def _fresh_state_dir(given: Path | None) -> Path:
    if given is None:
        return Path(tempfile.mkdtemp(prefix="onemachine-e2e-")).resolve()  # 0700
    if given.exists() and any(given.iterdir()):
        raise OSError(f"--state-dir {given} is not empty: give a new or empty directory")
    given.mkdir(mode=0o700, parents=True, exist_ok=True)
    return given.resolve()


def _container_image(documents: list[dict[str, Any]]) -> str:
    """The MCP Deployment's image; CheckoutError when the manifest has none."""
    try:
        deployment = next(d for d in documents if d.get("kind") == "Deployment")
        return deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    except (StopIteration, KeyError, IndexError, TypeError):
        raise CheckoutError(
            f"{MCP_MANIFEST}: no Deployment with a container image to run the MCP server"
        ) from None


def _absolute(value: str) -> Path:
    """A path argument made absolute: the cluster and the tests run in other directories."""
    return Path(value).expanduser().resolve()


def _base_env(endpoints: ClusterEndpoints) -> dict[str, str]:
    """The user's environment, with the cluster's admin kubeconfig for upstream's Go tests
    (they load it with client-go's default rules)."""
    return dict(os.environ) | {"KUBECONFIG": str(endpoints.admin_kubeconfig)}


def _timed_call(function: Callable[..., object], *arguments: Any) -> float:
    """How long `function(*arguments)` took, in seconds."""
    began = time.monotonic()
    function(*arguments)
    return time.monotonic() - began


def _terminated(*_: object) -> None:
    raise KeyboardInterrupt
