"""The node agent against the stand-in API server, with real pods (local processes in their
own namespaces): the Node registered and Ready, an unbound pod bound and run with its
environment, its status as a kubelet patches it, images that map to nothing, restarts."""

from __future__ import annotations

import base64
import ipaddress
from pathlib import Path

from onemachine.node.pod_network import GATEWAY, POD_NETWORK, PodNetwork
from onemachine.node.pod_runtime import PodRuntime
from tests.kubernetes.fake_api import FakeKubernetes, Recorded
from tests.onemachine.node.agent_fixtures import (
    ENV_SERVER,
    NODE,
    NS,
    PYTHON_IMAGE,
    cluster,
    condition,
    container_status,
    get_json,
    phase,
    python,
)
from tests.waiting import wait_until


def test_the_node_registers_ready_with_its_address_and_generous_capacity(
    tmp_path: Path, runtime: PodRuntime
) -> None:
    with cluster(tmp_path, runtime) as running:
        node = running.fake.get("/api/v1/nodes", NODE)
        assert node is not None
        status = node["status"]
        ready = next(c for c in status["conditions"] if c["type"] == "Ready")
        assert (ready["status"], ready["reason"]) == ("True", "KubeletReady")
        assert {"type": "InternalIP", "address": str(GATEWAY)} in status["addresses"]
        assert int(status["allocatable"]["pods"]) >= 100
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == NODE


def test_an_unbound_pod_is_bound_run_and_reported_as_a_kubelet_reports_it(
    tmp_path: Path, runtime: PodRuntime
) -> None:
    with cluster(tmp_path, runtime) as running:
        running.fake.put(
            f"/api/v1/namespaces/{NS}/secrets",
            {"metadata": {"name": "keys"}, "data": {"token": base64.b64encode(b"s3cret").decode()}},
        )
        running.fake.put(
            f"/api/v1/namespaces/{NS}/configmaps",
            {"metadata": {"name": "settings"}, "data": {"MODE": "fast", "LEVEL": "3"}},
        )
        env = [
            {"name": "GREETING", "value": "hello"},
            {"name": "ECHO", "value": "$(GREETING) world"},
            {"name": "MY_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "MY_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
            {"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "MY_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {
                "name": "TOKEN",
                "valueFrom": {"secretKeyRef": {"name": "keys", "key": "token"}},
            },
        ]
        container = python(
            "agent",
            ENV_SERVER,
            ports=[{"containerPort": 8080}],
            readinessProbe={"tcpSocket": {"port": 8080}, "periodSeconds": 1},
            env=env,
            envFrom=[{"configMapRef": {"name": "settings"}, "prefix": "CM_"}],
        )
        created = running.create("echo-pod", container)
        pod = running.wait_pod(
            "echo-pod", "Ready", lambda p: condition(p, "Ready") == "True", timeout=15
        )
        status = pod["status"]
        assert pod["spec"]["nodeName"] == NODE
        assert status["phase"] == "Running"
        address = status["podIP"]
        assert ipaddress.ip_address(address) in POD_NETWORK
        assert status["podIPs"] == [{"ip": address}]
        assert status["hostIP"] == str(GATEWAY)
        assert status["observedGeneration"] == pod["metadata"]["generation"] == 1
        assert {c["type"]: c["status"] for c in status["conditions"]} == {
            "PodScheduled": "True",
            "PodReadyToStartContainers": "True",
            "Initialized": "True",
            "ContainersReady": "True",
            "Ready": "True",
        }
        container_state = container_status(pod)
        assert container_state["name"] == "agent"
        assert container_state["image"] == PYTHON_IMAGE
        assert container_state["imageID"]
        assert container_state["containerID"]
        assert "startedAt" in container_state["state"]["running"]
        assert (container_state["ready"], container_state["started"]) == (True, True)
        assert container_state["restartCount"] == 0
        served = get_json(f"http://{address}:8080/")
        assert served["hostname"] == "echo-pod"
        seen = served["env"]
        assert {key: seen.get(key) for key in ("POD_IP", "HOST", "PORT", "MY_IP")} == {
            "POD_IP": address,
            "HOST": address,
            "PORT": "8080",
            "MY_IP": address,
        }
        assert seen["ECHO"] == "hello world"
        assert (seen["MY_NAME"], seen["MY_NODE"]) == ("echo-pod", NODE)
        assert seen["MY_UID"] == created["metadata"]["uid"]
        assert seen["TOKEN"] == "s3cret"
        assert (seen["CM_MODE"], seen["CM_LEVEL"]) == ("fast", "3")


def test_a_pod_of_another_scheduler_is_left_unbound(tmp_path: Path, runtime: PodRuntime) -> None:
    with cluster(tmp_path, runtime) as running:
        running.create("other", python("c", "pass"), schedulerName="volcano")
        running.create("mine", python("c", "import time; time.sleep(60)"))
        running.running("mine")
        assert "nodeName" not in running.pod("other")["spec"]


def test_an_image_that_maps_to_no_command_leaves_the_pod_waiting_with_the_reason(
    tmp_path: Path, runtime: PodRuntime
) -> None:
    with cluster(tmp_path, runtime) as running:
        running.create("unmapped", {"name": "c", "image": "ghcr.io/example/agent:1.0"})
        pod = running.wait_pod(
            "unmapped",
            "waiting",
            lambda p: (
                "waiting" in container_status(p).get("state", {})
                and container_status(p)["state"]["waiting"]["reason"] == "ErrImagePull"
            ),
        )
        waiting = container_status(pod)["state"]["waiting"]
        assert "ghcr.io/example/agent:1.0" in waiting["message"]
        assert "--image" in waiting["message"]
        assert phase(pod) == "Pending"
        assert condition(pod, "Ready") == "False"


def test_a_missing_secret_is_a_config_error_until_it_exists(
    tmp_path: Path, runtime: PodRuntime
) -> None:
    with cluster(tmp_path, runtime) as running:
        env = [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "later", "key": "k"}}}]
        running.create("needs-secret", python("c", "import time; time.sleep(60)", env=env))
        pod = running.wait_pod(
            "needs-secret",
            "waiting for its secret",
            lambda p: (
                container_status(p).get("state", {}).get("waiting", {}).get("reason")
                == "CreateContainerConfigError"
            ),
        )
        assert container_status(pod)["state"]["waiting"]["message"] == 'secret "later" not found'
        running.fake.put(
            f"/api/v1/namespaces/{NS}/secrets",
            {"metadata": {"name": "later"}, "data": {"k": base64.b64encode(b"v").decode()}},
        )
        running.running("needs-secret")


def test_restart_policy_always_restarts_with_back_off_and_counts_restarts(
    tmp_path: Path, runtime: PodRuntime
) -> None:
    with cluster(tmp_path, runtime) as running:
        running.create("crashing", python("c", "import sys; sys.exit(3)"))
        pod = running.wait_pod(
            "crashing", "restarted twice", lambda p: container_status(p).get("restartCount", 0) >= 2
        )
        state = container_status(pod)
        assert state["lastState"]["terminated"]["exitCode"] == 3
        assert state["lastState"]["terminated"]["reason"] == "Error"
        pod = running.wait_pod(
            "crashing",
            "in back-off",
            lambda p: (
                container_status(p).get("state", {}).get("waiting", {}).get("reason")
                == "CrashLoopBackOff"
            ),
        )
        assert "back-off" in container_status(pod)["state"]["waiting"]["message"]
        assert phase(pod) == "Running"  # restarting, as getPhase says for Always


def test_restart_policy_on_failure_does_not_restart_a_success(
    tmp_path: Path, runtime: PodRuntime
) -> None:
    with cluster(tmp_path, runtime) as running:
        running.create("job", python("c", "print('done')"), restartPolicy="OnFailure")
        pod = running.wait_pod("job", "Succeeded", lambda p: phase(p) == "Succeeded")
        state = container_status(pod)
        assert state["restartCount"] == 0
        assert state["state"]["terminated"]["exitCode"] == 0
        assert state["state"]["terminated"]["reason"] == "Completed"
        assert condition(pod, "Ready") == "False"


def test_restart_policy_on_failure_restarts_a_failure(tmp_path: Path, runtime: PodRuntime) -> None:
    with cluster(tmp_path, runtime) as running:
        running.create("flaky", python("c", "raise SystemExit(1)"), restartPolicy="OnFailure")
        pod = running.wait_pod(
            "flaky", "restarted", lambda p: container_status(p).get("restartCount", 0) >= 1
        )
        assert phase(pod) == "Running"


def test_restart_policy_never_fails_the_pod(tmp_path: Path, runtime: PodRuntime) -> None:
    with cluster(tmp_path, runtime) as running:
        running.create("once", python("c", "raise SystemExit(7)"), restartPolicy="Never")
        pod = running.wait_pod("once", "Failed", lambda p: phase(p) == "Failed")
        state = container_status(pod)
        assert (state["restartCount"], state["state"]["terminated"]["exitCode"]) == (0, 7)


def test_after_a_compaction_the_node_lists_again_and_keeps_binding(
    tmp_path: Path, runtime: PodRuntime
) -> None:
    with cluster(tmp_path, runtime) as running:
        wait_until(lambda: len(watches_of_pods(running.fake)) >= 2, "the node's two pod watches")
        lists = len(lists_of_pods(running.fake))
        running.fake.put(f"/api/v1/namespaces/{NS}/configmaps", {"metadata": {"name": "any"}})
        running.fake.compact()  # open watches end; their resourceVersion is gone (410)
        running.create("after", python("c", "import time; time.sleep(60)"))
        running.running("after")
        wait_until(
            lambda: len(lists_of_pods(running.fake)) >= lists + 2, "both watches to list again"
        )


def lists_of_pods(fake: FakeKubernetes) -> list[Recorded]:
    return [r for r in fake.requests if r.path == "/api/v1/pods" and "watch" not in r.query]


def watches_of_pods(fake: FakeKubernetes) -> list[Recorded]:
    return [r for r in fake.requests if r.path == "/api/v1/pods" and "watch" in r.query]


def test_a_command_that_cannot_start_is_a_start_error(tmp_path: Path, runtime: PodRuntime) -> None:
    container = {"name": "c", "image": PYTHON_IMAGE, "command": ["no-such-program"]}
    with cluster(tmp_path, runtime) as running:
        running.create("unstartable", container, restartPolicy="Never")
        pod = running.wait_pod("unstartable", "Failed", lambda p: phase(p) == "Failed")
        terminated = container_status(pod)["state"]["terminated"]
        assert (terminated["exitCode"], terminated["reason"]) == (128, "StartError")
        assert '"no-such-program": executable file not found' in terminated["message"]


def test_a_sandbox_that_cannot_be_made_is_reported(tmp_path: Path, network: PodNetwork) -> None:
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    broken = PodRuntime(not_a_directory, network)
    with cluster(tmp_path, broken) as running:
        running.create("nowhere", python("c", "pass"))
        pod = running.wait_pod(
            "nowhere",
            "without a sandbox",
            lambda p: (
                container_status(p).get("state", {}).get("waiting", {}).get("reason")
                == "CreatePodSandboxError"
            ),
        )
        assert str(not_a_directory) in container_status(pod)["state"]["waiting"]["message"]
        assert phase(pod) == "Pending"


def test_a_failed_list_is_tried_again(tmp_path: Path, runtime: PodRuntime) -> None:
    fake = FakeKubernetes()
    fake.fail("GET", "/api/v1/pods", 500, "etcdserver: request timed out", times=2)
    with cluster(tmp_path, runtime, fake=fake) as running:
        running.create("patient", python("c", "import time; time.sleep(60)"))
        running.running("patient")


def test_a_pod_with_init_containers_is_refused_with_the_reason(
    tmp_path: Path, runtime: PodRuntime
) -> None:
    with cluster(tmp_path, runtime) as running:
        running.create("initialising", python("c", "pass"), initContainers=[python("i", "pass")])
        pod = running.wait_pod(
            "initialising", "reported", lambda p: bool(container_status(p).get("state"))
        )
        waiting = container_status(pod)["state"]["waiting"]
        assert waiting == {
            "reason": "CreateContainerConfigError",
            "message": "init containers are not supported by the onemachine node",
        }
        assert phase(pod) == "Pending"
