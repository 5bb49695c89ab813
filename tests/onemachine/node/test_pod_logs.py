"""Which instance's log a request means, from the container's status, in each state the
kubelet tells apart (kubelet_pods.go validateContainerLogStatus)."""

from __future__ import annotations

import pytest

from onemachine.node.pod_logs import LogUnavailable, chosen_instance
from onemachine.node.status import ContainerView

ENDED = {"terminated": {"exitCode": 1, "containerID": "id://0"}}


def view(state: dict, last: dict | None = None, container_id: str | None = None) -> ContainerView:
    return ContainerView(
        "main", "img", state=state, last_state=last or {}, container_id=container_id
    )


@pytest.mark.parametrize(
    ("status", "previous", "instance"),
    [
        (view({"running": {}}, ENDED, "id://1"), False, "id://1"),
        (view({"running": {}}, ENDED, "id://1"), True, "id://0"),
        (view(ENDED, container_id="id://0"), False, "id://0"),
        (view({"terminated": {"exitCode": 128}}, ENDED), False, "id://0"),
        (view({"waiting": {"reason": "CrashLoopBackOff"}}, ENDED), False, "id://0"),
    ],
    ids=["running", "previous", "ended", "ended unstarted", "backing off"],
)
def test_the_instance_chosen(status: ContainerView, previous: bool, instance: str) -> None:
    assert chosen_instance("pod", [status], "main", previous) == instance


@pytest.mark.parametrize(
    ("status", "container", "previous", "message"),
    [
        (
            view({"running": {}}, None, "id://0"),
            "other",
            False,
            'container "other" in pod "pod" is not available',
        ),
        (
            view({"running": {}}, None, "id://0"),
            "main",
            True,
            'previous terminated container "main" in pod "pod" not found',
        ),
        (
            view({"terminated": {"exitCode": 128}}),
            "main",
            False,
            'container "main" in pod "pod" is terminated',
        ),
        (
            view({"waiting": {"reason": "ErrImagePull"}}),
            "main",
            False,
            'container "main" in pod "pod" is waiting to start: image can\'t be pulled',
        ),
        (
            view({"waiting": {"reason": "ContainerCreating"}}),
            "main",
            False,
            'container "main" in pod "pod" is waiting to start: ContainerCreating',
        ),
        (
            view({}),
            "main",
            False,
            'container "main" in pod "pod" is waiting to start - no logs yet',
        ),
    ],
    ids=["unknown", "no previous", "terminated unstarted", "image", "creating", "no state"],
)
def test_no_instance_is_refused_in_the_kubelets_words(
    status: ContainerView, container: str, previous: bool, message: str
) -> None:
    with pytest.raises(LogUnavailable) as refused:
        chosen_instance("pod", [status], container, previous)
    assert str(refused.value) == message
