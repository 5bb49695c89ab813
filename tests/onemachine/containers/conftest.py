"""Fixtures of the container runtime's tests: a runtime started for a test (in a short
state directory of its own: containerd's socket path must fit a unix socket's 108 bytes)
with the pause image and a small test image imported, and crictl against it."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from onemachine.containers.cni import CNI_BIN_DIR
from onemachine.containers.image_archive import (
    Entry,
    ImageSpec,
    layer_of_entries,
    write_docker_archive,
)
from onemachine.containers.image_cache import ImageCache
from onemachine.containers.runtime import ContainerRuntime, RuntimeSettings
from tests.onemachine.containers.cri import Crictl, crictl_binary

BUSYBOX = Path("/bin/busybox")  # Debian's busybox-static: one static binary, a whole toolbox
TOOLBOX_IMAGE = "onemachine.test/toolbox:1"
_PROGRAMS = ("containerd", "containerd-shim-runc-v2", "runc", "ctr", "nsenter", "ip", "gcc")


def runtime_missing() -> str | None:
    """Why the runtime cannot run here (./dev test installs what it needs as root), or None."""
    if os.geteuid() != 0:
        return "needs root for containerd's namespaces and cgroups (CI runs as root)"
    missing = [name for name in _PROGRAMS if shutil.which(name) is None]
    if not (CNI_BIN_DIR / "bridge").exists():
        missing.append(f"{CNI_BIN_DIR}/bridge")
    if not BUSYBOX.exists():
        missing.append(str(BUSYBOX))
    if missing:
        return (
            f"needs {', '.join(missing)} (Debian: containerd runc containernetworking-plugins "
            "busybox-static gcc; ./dev test installs them as root)"
        )
    return None


needs_runtime = pytest.mark.skipif(runtime_missing() is not None, reason=str(runtime_missing()))


@pytest.fixture(scope="session")
def image_cache() -> ImageCache:
    return ImageCache()


@pytest.fixture(scope="session")
def toolbox_image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smallest image that proves the path: busybox alone, run as `/bin/busybox APPLET`."""
    directory = tmp_path_factory.mktemp("toolbox")
    layer = layer_of_entries([Entry(str(BUSYBOX), source=BUSYBOX)], directory / "layer.tar")
    spec = ImageSpec(TOOLBOX_IMAGE, [layer], entrypoint=[str(BUSYBOX)])
    return write_docker_archive(spec, directory / "toolbox.tar")


@pytest.fixture
def state_dir() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="omrt-"))
    yield directory
    shutil.rmtree(directory)


@pytest.fixture
def runtime(
    state_dir: Path, image_cache: ImageCache, toolbox_image: Path
) -> Iterator[ContainerRuntime]:
    """A runtime with the pause and toolbox images imported, stopped after the test."""
    started = ContainerRuntime.start(RuntimeSettings(state_dir, images=image_cache))
    try:
        started.import_images(toolbox_image)
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="session")
def crictl_path() -> Path:
    return crictl_binary()


@pytest.fixture
def crictl(crictl_path: Path, runtime: ContainerRuntime, state_dir: Path) -> Crictl:
    scratch = state_dir / "crictl"
    scratch.mkdir()
    return Crictl(crictl_path, runtime, scratch)
