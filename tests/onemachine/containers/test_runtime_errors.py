"""Each way the runtime's start can fail says what failed and leaves nothing: no holder,
no cgroup root, no containerd. A start expected to fail is stopped should it succeed, so
that a broken refusal fails its test without leaving a runtime running."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from onemachine.containers import image_builds
from onemachine.containers.cgroups import hierarchies
from onemachine.containers.containerd import ContainerdFailed, program
from onemachine.containers.image_builds import ImageBuildFailed, pause_image
from onemachine.containers.image_cache import ImageCache
from onemachine.containers.namespace import NamespaceFailed, RuntimeNamespace
from onemachine.containers.runtime import ContainerRuntime, RuntimeSettings, cgroup_root_name
from tests.onemachine.containers.conftest import needs_runtime
from tests.processes import alive


def _cgroups_of(state_dir: Path) -> list[str]:
    name = cgroup_root_name(state_dir)
    return [h.mount_point for h in hierarchies() if os.path.exists(f"{h.mount_point}/{name}")]


def _children_alive() -> list[int]:
    children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()
    return [int(pid) for pid in children if alive(int(pid))]


@needs_runtime
def test_a_directory_the_holder_cannot_make_private_is_named() -> None:
    with pytest.raises(NamespaceFailed) as refused:
        RuntimeNamespace.start(private=("/proc/onemachine-nowhere",))
    assert str(refused.value).startswith(
        "holder: mkdir -p /proc/onemachine-nowhere failed: mkdir: cannot create directory"
    ), refused.value


@needs_runtime
def test_a_state_directory_too_long_for_the_socket_is_refused_and_undone(
    state_dir: Path, image_cache: ImageCache
) -> None:
    deep = state_dir / ("d" * 90)
    before = _children_alive()
    with pytest.raises(ContainerdFailed) as refused:
        ContainerRuntime.start(RuntimeSettings(deep, images=image_cache)).stop()
    assert str(refused.value) == (
        f"the socket path {deep}/containerd/containerd.sock is longer than 100 characters: "
        "use a shorter state directory"
    )
    assert _cgroups_of(deep) == []
    assert _children_alive() == before, "the holder is ended"


@needs_runtime
def test_a_containerd_that_exits_is_named_with_its_log(
    state_dir: Path, image_cache: ImageCache
) -> None:
    bin_dir = state_dir / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "containerd"
    fake.write_text("#!/bin/sh\necho 'containerd: this one cannot start' >&2\nexit 3\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(ContainerdFailed) as refused:
        ContainerRuntime.start(RuntimeSettings(state_dir / "s", bin_dir, images=image_cache)).stop()
    assert str(refused.value) == "containerd exited (3):\ncontainerd: this one cannot start"
    assert _cgroups_of(state_dir / "s") == []


def test_a_program_missing_names_its_debian_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(FileNotFoundError) as missing:
        program("containerd", None)
    assert str(missing.value) == (
        "containerd is not in PATH: install Debian's containerd and runc "
        "(apt-get install containerd runc containernetworking-plugins)"
    )


@needs_runtime
def test_an_archive_containerd_cannot_read_is_refused_with_ctrs_message(
    runtime: ContainerRuntime, state_dir: Path
) -> None:
    junk = state_dir / "junk.tar"
    junk.write_text("not an image")
    with pytest.raises(ContainerdFailed) as refused:
        runtime.import_images(junk)
    assert str(refused.value).startswith(f"ctr images import {junk} failed: ctr: "), refused.value


def test_a_pause_program_that_does_not_compile_fails_with_gccs_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "broken.c"
    broken.write_text("int main(void) { return missing; }\n")
    monkeypatch.setattr(image_builds, "PAUSE_SOURCE", broken)
    with pytest.raises(ImageBuildFailed) as failed:
        pause_image(ImageCache(tmp_path / "cache"), "pause:broken")
    assert str(failed.value).startswith("the pause image: gcc -Os -static -o "), failed.value
    assert "missing" in str(failed.value) and "undeclared" in str(failed.value), failed.value
