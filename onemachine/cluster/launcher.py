"""The launch, from checks to stop: what starts in which order, and what is written for the
user (kubeconfigs, the suite's command line).

Order: everything that can fail without starting a process is checked first (the OIDC
clients file, programs, CRD files, PKI); the host ports are opened; the process enters its
private namespace; then etcd, kube-apiserver, the namespaces, CRDs and RBAC (bootstrap),
kube-controller-manager and the service-account tokens, redis, the agent-sandbox
controller, the WorkloadManager, the issuer, the Router and the node, each waited for until
ready. It stops every part on the way out,
whatever the way.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client as kube
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oidc_issuer.clients import ClientsFileError, load_clients
from onemachine import netns
from onemachine.cluster import bootstrap, part_pods, parts, real_node, service_forwards
from onemachine.cluster.binaries import MissingBinaries, choose_node, locate
from onemachine.cluster.credentials import (
    ADMIN,
    CONTROLLER_MANAGER,
    KUBE_PROXY,
    KUBELET,
    SCHEDULER,
    SUITE_USER,
    new_users,
    write_kubeconfig,
    write_private,
    write_token_file,
)
from onemachine.cluster.interrupts import Interrupts, Stop
from onemachine.cluster.layout import LOOPBACK, SYSTEM_NAMESPACE, StateDir
from onemachine.cluster.network import enter_private_network
from onemachine.cluster.pki import make_pki
from onemachine.cluster.readiness import wait_until
from onemachine.cluster.relay import Relay, listen
from onemachine.cluster.suite_command import suite_command
from onemachine.cluster.supervisor import PartFailed, Supervisor

LOG = logging.getLogger("onemachine.cluster")
STOP_GRACE = 10.0  # for each part in turn


@dataclass(frozen=True)
class Options:
    bin_dir: Path
    state_dir: Path
    sources: dict[str, Path | None]
    images: tuple[str, ...] = ()
    dockerfile_images: tuple[tuple[str, str], ...] = ()  # (name, Dockerfile in the checkout)
    forwards: tuple[service_forwards.ServiceForward, ...] = ()
    ready_timeout: float = 120.0
    ports: parts.Ports = field(default_factory=parts.Ports)
    oidc_clients: Path | None = None
    router_oidc: bool = True
    node: str = "auto"  # binaries.NODE_KINDS


def launch(options: Options) -> int:
    """Run the cluster until a signal or a part's exit; the exit code of the command."""
    state = StateDir(options.state_dir)
    try:
        if options.oidc_clients is not None:
            load_clients(options.oidc_clients)  # the issuer reads it again; refused here first
        choice = choose_node(options.node, options.bin_dir)
        binaries = locate(options.bin_dir, real_node=choice.real)
        crds = bootstrap.crd_files(options.sources)
        _fresh(state)
        pki = make_pki(state.pki)
        host_ports = {
            name: listen() for name in ("api", "router", "workload-manager", "oidc-issuer")
        }
        forward_ports = {forward: listen() for forward in options.forwards}
        issuer_port = host_ports["oidc-issuer"].getsockname()[1]
        ports = replace(options.ports, oidc_issuer=issuer_port)
        cluster = parts.Cluster(
            binaries,
            state,
            pki,
            ports,
            options.images,
            oidc_clients=options.oidc_clients,
            router_oidc=options.router_oidc,
            real_node=choice.real,
        )
        suite_token = _write_credentials(cluster)
    except (MissingBinaries, bootstrap.BootstrapError, OSError) as error:
        print(f"onemachine cluster: {error}", file=sys.stderr)
        return 2
    except ClientsFileError as error:
        print(f"onemachine cluster: --oidc-clients {error}", file=sys.stderr)
        return 2
    LOG.info("pods run on %s", choice.why)
    images: list[Path] = []
    if choice.real:  # before leaving the machine's network: debootstrap reaches Debian
        LOG.info("making the node's images (cached after the first time)")
        try:
            checkout = options.sources["--agentcube-src"]
            assert checkout is not None  # crd_files refused a launch without it
            images = real_node.make_images(cluster, checkout, options.dockerfile_images)
        except real_node.NodeFailed as error:
            print(f"onemachine cluster: {error}", file=sys.stderr)
            return 1
    started = time.monotonic()
    try:
        enter_private_network()
    except (netns.NamespaceUnavailable, netns.NotPrivateNamespace) as error:
        print(f"onemachine cluster: {error}", file=sys.stderr)
        return 2
    inner = options.ports
    relay = Relay(
        [
            (host_ports["api"], inner.api_server),
            (host_ports["router"], inner.router),
            (host_ports["workload-manager"], inner.workload_manager),
            # The same port inside: the issuer's URL is the same on both sides.
            (host_ports["oidc-issuer"], issuer_port),
            *(
                (listener, service_forwards.resolver(_admin_client(state), forward))
                for forward, listener in forward_ports.items()
            ),
        ]
    ).start()
    interrupts = Interrupts()
    supervisor = Supervisor(state.logs, _base_env(), state.root, interrupts)
    interrupts.install()  # a signal from here on stops every part
    node_stack = ExitStack()  # the real node's runtime and its containers
    try:
        with interrupts.raising():
            _start(cluster, supervisor, crds, options.ready_timeout, node_stack, images)
            command = suite_command(
                state.suite_kubeconfig,
                host_ports["router"].getsockname()[1],
                host_ports["workload-manager"].getsockname()[1],
                state.oidc_tokens,
                port_forward=cluster.real_node,
            )
            forwarded = {f: listener.getsockname()[1] for f, listener in forward_ports.items()}
            _announce(cluster, host_ports["api"].getsockname()[1], suite_token, command, forwarded)
            _write_cluster_info(cluster, host_ports)
            LOG.info("every part ready in %.1f s", time.monotonic() - started)
            ended = supervisor.wait_any_exit()
            print(f"onemachine cluster: {supervisor.describe_exit(ended)}", file=sys.stderr)
            return 1
    except Stop:
        return 0
    except (PartFailed, bootstrap.BootstrapError, real_node.NodeFailed) as error:
        print(f"onemachine cluster: {error}", file=sys.stderr)
        return 1
    except (ApiException, urllib3.exceptions.HTTPError) as error:
        print(f"onemachine cluster: the API server, as the admin: {error}", file=sys.stderr)
        return 1
    finally:
        LOG.info("stopping every part")
        state.cluster_info.unlink(missing_ok=True)
        # The real node's containers first (the Router's and the WorkloadManager's pods
        # among them, whose watches would hold the API server's stop), then every part.
        node_stack.close()
        supervisor.stop_all(STOP_GRACE)
        relay.stop()
        LOG.info("stopped; state and logs kept in %s", state.root)


def _fresh(state: StateDir) -> None:
    if state.root.exists() and any(state.root.iterdir()):
        raise OSError(f"--state-dir {state.root} is not empty: give a new or empty directory")
    state.make()


def _write_credentials(cluster: parts.Cluster) -> str:
    """The token file, and a kubeconfig inside the namespace for the admin and the
    controller-manager; returns the suite user's token (its kubeconfig names the host port,
    written once the cluster is ready)."""
    state, users = cluster.state, new_users()
    write_token_file(state.token_file, users)
    write_private(state.admin_token, users[ADMIN].token)
    server = cluster.ports.api_server_url
    write_kubeconfig(
        state.kubeconfig("admin"), server, cluster.pki.ca_cert, ADMIN, users[ADMIN].token
    )
    for file_name, user in (
        ("kube-controller-manager", CONTROLLER_MANAGER),
        ("kube-scheduler", SCHEDULER),
        ("kube-proxy", KUBE_PROXY),
        ("kubelet", KUBELET),
    ):
        write_kubeconfig(
            state.kubeconfig(file_name), server, cluster.pki.ca_cert, user, users[user].token
        )
    return users[SUITE_USER].token


def _start(
    cluster: parts.Cluster,
    supervisor: Supervisor,
    crds: list[Path],
    timeout: float,
    node_stack: ExitStack,
    images: list[Path],
) -> None:
    state = cluster.state
    for directory in (
        state.etcd_data,
        state.redis_data,
        state.node_root,
        state.controller_manager_certs,
    ):
        directory.mkdir(mode=0o700, exist_ok=True)
    supervisor.start_ready(parts.etcd(cluster), timeout)
    supervisor.start_ready(parts.api_server(cluster), timeout)
    api = bootstrap.connect(state.kubeconfig("admin"))
    bootstrap.install(api, crds, timeout)
    if cluster.real_node:
        for name, port in (
            ("agentcube-router", cluster.ports.router),
            ("workloadmanager", cluster.ports.workload_manager),
        ):
            bootstrap.create(api, part_pods.service(name, port))
    else:
        bootstrap.part_services(api, cluster.ports.router, cluster.ports.workload_manager)
    supervisor.start_ready(parts.controller_manager(cluster), timeout)
    _service_account_files(cluster, api, timeout)
    bootstrap.wait_default_service_account(api, timeout)
    if cluster.real_node:
        bootstrap.kubelet_api_access(api)
        supervisor.start_ready(real_node.scheduler(cluster), timeout)
        real_node.start(cluster, supervisor, node_stack, timeout, images)
        for part in real_node.service_network(cluster):
            supervisor.start_ready(part, timeout)
    supervisor.start_ready(parts.redis(cluster), timeout)
    supervisor.start_ready(parts.agent_sandbox(cluster), timeout)
    if cluster.real_node:
        _deploy(api, part_pods.workload_manager(cluster), parts.workload_manager(cluster), timeout)
    else:
        supervisor.start_ready(parts.workload_manager(cluster), timeout)
    supervisor.start_ready(parts.oidc_issuer(cluster), timeout)  # the Router reads it at start
    if cluster.real_node:
        _deploy(api, part_pods.router(cluster), parts.router(cluster), timeout)
    else:
        supervisor.start_ready(parts.router(cluster), timeout)
        supervisor.start_ready(parts.node(cluster), timeout)


def _deploy(
    api: ApiClient, deployment: dict[str, Any], process: parts.Part, timeout: float
) -> None:
    """A part as the chart's Deployment on the real node, ready when its pod is Ready (a
    port forward picks Ready pods) and the probe of its process form passes (the pod is
    on the host network: the same port)."""
    started = time.monotonic()
    bootstrap.create(api, deployment)
    name = deployment["metadata"]["name"]
    apps = kube.AppsV1Api(api)

    def ready() -> bool:
        status = apps.read_namespaced_deployment_status(name, SYSTEM_NAMESPACE).status
        return status is not None and bool(status.ready_replicas) and process.ready()

    if not wait_until(ready, timeout=timeout, interval=0.2):
        raise PartFailed(
            f"the Deployment {name} in {SYSTEM_NAMESPACE} was not ready within {timeout:g} s "
            f"(waiting for {process.ready}); its pod's log: kubectl logs -n {SYSTEM_NAMESPACE} "
            f"deployment/{name}"
        )
    LOG.info("%s ready as a pod (%.1f s)", name, time.monotonic() - started)


def _service_account_files(cluster: parts.Cluster, api: ApiClient, timeout: float) -> None:
    """The WorkloadManager's kubeconfig and the Router's in-cluster files, from the tokens
    of their service accounts."""
    state, ca = cluster.state, cluster.pki.ca_cert
    token = bootstrap.service_account_token(api, "workloadmanager", timeout)
    write_kubeconfig(
        state.kubeconfig("workloadmanager"),
        cluster.ports.api_server_url,
        ca,
        f"system:serviceaccount:{SYSTEM_NAMESPACE}:workloadmanager",
        token,
    )
    files = state.router_service_account
    files.mkdir(mode=0o700, exist_ok=True)
    write_private(
        files / "token", bootstrap.service_account_token(api, "agentcube-router", timeout)
    )
    write_private(files / "ca.crt", ca.read_text(encoding="utf-8"))
    write_private(files / "namespace", SYSTEM_NAMESPACE)


def _admin_client(state: StateDir) -> Callable[[], ApiClient]:
    """A maker of the admin's API client, for a forward's look-up of its Service."""
    return lambda: bootstrap.connect(state.kubeconfig("admin"))


def _announce(
    cluster: parts.Cluster,
    api_port: int,
    token: str,
    command: str,
    forwarded: dict[service_forwards.ServiceForward, int],
) -> None:
    state = cluster.state
    write_kubeconfig(
        state.suite_kubeconfig,
        f"https://{LOOPBACK}:{api_port}",
        cluster.pki.ca_cert,
        SUITE_USER,
        token,
    )
    write_private(state.suite_command, command + "\n")
    print(f"onemachine cluster ready: API server https://{LOOPBACK}:{api_port}", flush=True)
    print(f"admin kubeconfig (inside the namespace only): {state.kubeconfig('admin')}")
    if forwarded:
        service_forwards.write(state.service_forwards, forwarded)
        print(f"Service forwards (also in {state.service_forwards}):")
        for forward, port in forwarded.items():
            print(f"  {forward} at {LOOPBACK}:{port}")
    print(f"run the suite (also in {state.suite_command}):")
    print(command, flush=True)


def _write_cluster_info(cluster: parts.Cluster, host_ports: dict[str, socket.socket]) -> None:
    """The admin's host kubeconfig, then cluster.json (docs/one-machine-cluster.md), renamed
    into place so that a reader never sees half of it."""
    state = cluster.state
    urls = {
        name: f"{'https' if name == 'api' else 'http'}://{LOOPBACK}:{listener.getsockname()[1]}"
        for name, listener in host_ports.items()
    }
    admin_token = state.admin_token.read_text(encoding="utf-8")
    write_kubeconfig(
        state.admin_host_kubeconfig, urls["api"], cluster.pki.ca_cert, ADMIN, admin_token
    )
    info = {
        "api_server": urls["api"],
        "router": urls["router"],
        "workload_manager": urls["workload-manager"],
        "oidc_issuer": cluster.ports.oidc_issuer_url,  # the same port on the host
        "admin_kubeconfig": str(state.admin_host_kubeconfig),
        "suite_kubeconfig": str(state.suite_kubeconfig),
        "token_dir": str(state.oidc_tokens),
        "logs": str(state.logs),
    }
    partial = state.cluster_info.with_suffix(".json.partial")
    write_private(partial, json.dumps(info, indent=2) + "\n")
    partial.rename(state.cluster_info)
    print(f"admin kubeconfig on the host: {state.admin_host_kubeconfig}")
    print(f"the cluster's URLs and files: {state.cluster_info}", flush=True)


def _base_env() -> dict[str, str]:
    """What every part inherits: no kubeconfig or in-cluster settings of the user's."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TZ")
    return {name: os.environ[name] for name in keep if name in os.environ}
