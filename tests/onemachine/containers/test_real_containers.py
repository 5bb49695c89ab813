"""Real containers through containerd's CRI: a pod sandbox (the pause image onemachine
made) on the CNI bridge in the runtime's private namespace, a container of an image
onemachine wrote, its logs, exec through the streaming server, pod to pod traffic, and
nothing of it on the machine's own network."""

from __future__ import annotations

import subprocess
from ipaddress import IPv4Address

import pytest

from onemachine import netns
from onemachine.containers import cni
from onemachine.containers.runtime import PAUSE_IMAGE, ContainerRuntime
from tests.onemachine.containers.conftest import BUSYBOX, TOOLBOX_IMAGE, needs_runtime
from tests.onemachine.containers.cri import Crictl
from tests.waiting import wait_until

pytestmark = needs_runtime

HTTPD = [str(BUSYBOX), "httpd", "-f", "-p", "8080", "-h", "/etc"]


def _pod_address(crictl: Crictl, pod: str) -> IPv4Address:
    return IPv4Address(crictl.json("inspectp", pod)["status"]["network"]["ip"])


def test_the_images_onemachine_made_are_in_the_cri_namespace(
    runtime: ContainerRuntime, crictl: Crictl
) -> None:
    listed = crictl("images", "-o", "json")
    tags = {
        tag for image in __import__("json").loads(listed)["images"] for tag in image["repoTags"]
    }
    assert {PAUSE_IMAGE, f"{TOOLBOX_IMAGE}"} <= tags, f"images in k8s.io: {sorted(tags)}"


def test_a_container_runs_in_a_pod_on_the_bridge_with_its_logs_and_exec(
    runtime: ContainerRuntime, crictl: Crictl
) -> None:
    pod = crictl.run_pod("echo")
    command = f"echo hello from the container; exec {' '.join(HTTPD)}"
    container = crictl.start_container(
        pod, "web", TOOLBOX_IMAGE, [str(BUSYBOX), "sh", "-c", command]
    )

    address = _pod_address(crictl, pod[0])
    assert address in cni.POD_SUBNET and address != cni.gateway(cni.POD_SUBNET), address
    logs = wait_until(lambda: crictl("logs", container), "the container's first line in its log")
    assert logs == "hello from the container", logs
    assert crictl("exec", container, str(BUSYBOX), "cat", "/etc/hostname") == "echo"
    served = wait_until(
        lambda: (
            subprocess.run(
                runtime.command(["curl", "-s", "-m", "5", f"http://{address}:8080/hostname"], True),
                capture_output=True,
                text=True,
            ).stdout
        ),
        "the pod's web server answering from the runtime's namespace",
    )
    assert served == "echo\n", served


def test_pods_reach_each_other_through_the_bridge(
    runtime: ContainerRuntime, crictl: Crictl
) -> None:
    server = crictl.run_pod("server")
    crictl.start_container(server, "web", TOOLBOX_IMAGE, HTTPD)
    client = crictl.run_pod("client")
    idle = crictl.start_container(client, "idle", TOOLBOX_IMAGE, [str(BUSYBOX), "sleep", "600"])
    address = _pod_address(crictl, server[0])

    request = f"printf 'GET /hostname HTTP/1.0\\r\\n\\r\\n' | {BUSYBOX} nc {address} 8080"

    def fetched() -> str:  # busybox's static wget crashes without glibc's NSS: nc instead
        return crictl.completed("exec", idle, str(BUSYBOX), "sh", "-c", request).stdout

    page = wait_until(fetched, "the server pod's page fetched from the client pod")
    assert page.startswith("HTTP/1.1 200 OK") and page.endswith("\n\nserver\n"), page


def test_pod_addresses_and_the_bridge_exist_only_inside_the_runtime_namespace(
    runtime: ContainerRuntime, crictl: Crictl
) -> None:
    crictl.run_pod("lonely")
    inside = subprocess.run(
        runtime.command(["ip", "-o", "-4", "addr", "show"], network_only=True),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"{cni.BRIDGE}    inet {cni.gateway(cni.POD_SUBNET)}/16" in inside, inside
    assert cni.BRIDGE not in netns.interfaces(), netns.interfaces()
    on_machine = subprocess.run(
        ["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True, check=True
    ).stdout
    assert "198.18." not in on_machine, on_machine


@pytest.mark.parametrize("image", ["onemachine.test/missing:1"])
def test_a_container_of_an_image_never_made_is_refused(
    runtime: ContainerRuntime, crictl: Crictl, image: str
) -> None:
    pod = crictl.run_pod("nothing")
    config = crictl._file("missing.json", {"metadata": {"name": "m"}, "image": {"image": image}})
    refused = crictl.completed("create", pod[0], config, pod[1])
    assert refused.returncode != 0 and "not found" in refused.stderr, refused.stderr
