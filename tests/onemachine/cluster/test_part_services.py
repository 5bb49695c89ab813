"""The chart's Services of the Router and the WorkloadManager, as the launcher creates them on
the stand-in API server: the names and port pods use (the MCP server's deployment.yaml), no
selector, and an EndpointSlice each at the node's address and the part's own port, which the
node's Service proxy reads."""

from __future__ import annotations

from ipaddress import IPv4Network
from pathlib import Path

from kubernetes import config

from onemachine.cluster import bootstrap
from onemachine.node.api import NodeApi
from onemachine.node.service_proxy import ready_endpoints, service_ports
from tests.kubernetes.conftest import fake  # noqa: F401 (the stand-in API server, started)
from tests.kubernetes.fake_api import FakeKubernetes
from tests.onemachine.node.agent_fixtures import node_kubeconfig

SERVICES = "/api/v1/namespaces/agentcube/services"


def test_each_part_is_a_service_without_selector_with_a_slice_at_the_node(
    tmp_path: Path,
    fake: FakeKubernetes,  # noqa: F811
) -> None:
    kubeconfig = node_kubeconfig(tmp_path / "admin.yaml", fake.url)
    admin = config.new_client_from_config(config_file=str(kubeconfig))
    bootstrap.part_services(admin, router_port=8080, workload_manager_port=8090)
    # the API server allocates ClusterIPs; the stand-in does not, so the test gives them
    for name, address in (("agentcube-router", "198.19.0.10"), ("workloadmanager", "198.19.0.11")):
        stored = fake.get(SERVICES, name)
        assert "selector" not in stored["spec"]
        assert stored["spec"]["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
        stored["spec"]["clusterIP"] = address
    api = NodeApi(config.new_client_from_config(config_file=str(kubeconfig)))
    try:
        ports = service_ports(api.list_services(), IPv4Network("198.19.0.0/24"))
        assert sorted(ports) == [("198.19.0.10", 8080), ("198.19.0.11", 8080)]
        assert ready_endpoints(api, ports[("198.19.0.10", 8080)]) == [("198.18.0.1", 8080)]
        assert ready_endpoints(api, ports[("198.19.0.11", 8080)]) == [("198.18.0.1", 8090)]
    finally:
        api.close()
        admin.close()
