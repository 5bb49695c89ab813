"""The agents' base image, `python:3.12-slim` made from Debian's packages (debootstrap,
about a minute the first time, then cached), running Python in a real container."""

from __future__ import annotations

import shutil

import pytest

from onemachine.containers.image_builds import PYTHON_IMAGE, python_image
from onemachine.containers.image_cache import ImageCache
from onemachine.containers.runtime import ContainerRuntime
from tests.onemachine.containers.conftest import needs_runtime
from tests.onemachine.containers.cri import Crictl
from tests.waiting import wait_until

pytestmark = [
    needs_runtime,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("debootstrap") is None, reason="needs Debian's debootstrap"),
]

VERSION = "import sys; print('%d.%d' % sys.version_info[:2])"


def test_the_python_image_runs_debians_python_under_the_manifests_name(
    runtime: ContainerRuntime, crictl: Crictl, image_cache: ImageCache
) -> None:
    archive = python_image(image_cache)
    built = archive.stat().st_mtime_ns
    assert python_image(image_cache) == archive, "a second start reuses the cached image"
    assert archive.stat().st_mtime_ns == built
    runtime.import_images(archive)

    pod = crictl.run_pod("agent")
    container = crictl.start_container(pod, "python", PYTHON_IMAGE, ["python", "-c", VERSION])
    logs = wait_until(lambda: crictl("logs", container), "the container's Python version")
    assert logs == "3.11", f"Debian bookworm's Python under {PYTHON_IMAGE}: {logs}"
    idle = crictl.start_container(pod, "idle", PYTHON_IMAGE, ["sleep", "600"])
    answer = crictl("exec", idle, "python3", "-c", "import json; print(json.dumps([1 + 1]))")
    assert answer == "[2]", answer
