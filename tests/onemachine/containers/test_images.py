"""Images onemachine writes: docker-archives, the cache that keeps them by content, and an
image laid out as a Dockerfile's final stage (a Dockerfile written here, in the shape of
upstream's docker/Dockerfile.picod, which is read only from a user's checkout)."""

from __future__ import annotations

import json
import tarfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from onemachine.containers.dockerfile import (
    Copy,
    UnsupportedDockerfile,
    final_stage,
    image_from_stage,
    kept_copies,
)
from onemachine.containers.image_archive import (
    Entry,
    ImageSpec,
    Layer,
    full_name,
    layer_of_entries,
    read_file,
    write_docker_archive,
)
from onemachine.containers.image_builds import ImageBuildFailed, python_version_of, tree_digest
from onemachine.containers.image_cache import ImageCache

TWO_STAGES = """\
# Build stage
FROM --platform=$BUILDPLATFORM golang:1.26 AS builder
WORKDIR /app
RUN go build -o tool ./cmd/tool

# Run stage
FROM ubuntu:26.04
RUN apt-get update && apt-get install -y python3 \\
    && rm -rf /var/lib/apt/lists/*
WORKDIR /root/
ENV MODE=test OTHER="two words"
COPY --from=builder /app/tool /usr/local/bin/tool
COPY settings.conf .
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/tool", "--serve"]
"""


@pytest.mark.parametrize(
    ("name", "full"),
    [
        ("picod:latest", "docker.io/library/picod:latest"),
        ("python:3.12-slim", "docker.io/library/python:3.12-slim"),
        ("python", "docker.io/library/python:latest"),
        ("volcano/agent:1", "docker.io/volcano/agent:1"),
        ("ghcr.io/volcano-sh/picod:latest", "ghcr.io/volcano-sh/picod:latest"),
        ("localhost:5000/x", "localhost:5000/x:latest"),
        ("registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10"),
    ],
)
def test_names_are_made_full_as_containerd_makes_them(name: str, full: str) -> None:
    assert full_name(name) == full


def test_a_docker_archive_names_its_image_config_and_layers(tmp_path: Path) -> None:
    tool = tmp_path / "tool"
    tool.write_bytes(b"#!/bin/sh\necho hi\n")
    layer = layer_of_entries([Entry("/usr/local/bin/tool", source=tool)], tmp_path / "l.tar")
    spec = ImageSpec(
        "tool:1", [layer], entrypoint=["/usr/local/bin/tool"], cmd=["--x"], working_dir="/w"
    )
    archive = write_docker_archive(spec, tmp_path / "image.tar")

    with tarfile.open(archive) as opened:
        manifest = json.load(opened.extractfile("manifest.json"))  # type: ignore[arg-type]
        config = json.load(opened.extractfile(manifest[0]["Config"]))  # type: ignore[arg-type]
        assert opened.getnames() == [
            manifest[0]["Config"],
            "manifest.json",
            layer.digest.removeprefix("sha256:"),
            manifest[0]["Layers"][0],
        ]
    assert manifest[0]["RepoTags"] == ["docker.io/library/tool:1"]
    assert config["rootfs"] == {"type": "layers", "diff_ids": [layer.digest]}
    assert config["config"]["Entrypoint"] == ["/usr/local/bin/tool"]
    assert config["config"]["Cmd"] == ["--x"]
    assert config["config"]["WorkingDir"] == "/w"
    assert config["os"] == "linux"
    with tarfile.open(layer.path) as opened:
        assert opened.getnames() == ["usr", "usr/local", "usr/local/bin", "usr/local/bin/tool"]
    assert read_file(layer, "/usr/local/bin/tool") == b"#!/bin/sh\necho hi\n"


def test_the_cache_builds_once_per_content_of_the_inputs(tmp_path: Path) -> None:
    cache = ImageCache(tmp_path / "cache")
    builds: list[Path] = []

    def build(out: Path) -> None:
        builds.append(out)
        out.write_text("built")

    first = cache.get("thing", ["source v1"], build)
    assert cache.get("thing", ["source v1"], build) == first
    assert len(builds) == 1 and first.read_text() == "built"
    assert cache.get("thing", ["source v2"], build) != first
    assert len(builds) == 2


def test_a_failed_build_leaves_nothing_in_the_cache(tmp_path: Path) -> None:
    cache = ImageCache(tmp_path / "cache")

    def fail(out: Path) -> None:
        out.write_text("half")
        raise RuntimeError("the tool failed")

    with pytest.raises(RuntimeError, match="the tool failed"):
        cache.get("thing", [1], fail)
    assert not cache.path("thing", [1]).exists()
    assert [path.name for path in (tmp_path / "cache").iterdir() if path.suffix != ".lock"] == []


def test_the_final_stage_is_read_as_it_lays_out_the_image() -> None:
    stage = final_stage(TWO_STAGES)
    assert stage.base == "ubuntu:26.04"
    assert stage.packages == ["python3"]
    assert stage.working_dir == "/root"
    assert stage.env == {"MODE": "test", "OTHER": "two words"}
    assert stage.copies == [
        Copy("/app/tool", "/usr/local/bin/tool", "builder"),
        Copy("settings.conf", "/root/settings.conf", None),
    ]
    assert stage.entrypoint == ["/usr/local/bin/tool", "--serve"]
    assert stage.cmd == []


def test_an_alpine_stage_gets_its_packages_and_user_from_debian() -> None:
    stage = final_stage(
        "FROM alpine:3.24\nRUN apk --no-cache add ca-certificates\nWORKDIR /app\n"
        "COPY --from=builder /workspace/manager .\nRUN adduser -D -u 1000 manager\n"
        'USER manager\nENTRYPOINT ["/app/manager"]\nCMD ["--port=8080"]\n'
    )
    assert (stage.packages, stage.users, stage.user) == (
        ["ca-certificates"],
        [("manager", 1000)],
        "manager",
    )
    assert stage.copies == [Copy("/workspace/manager", "/app/manager", "builder")]
    assert stage.cmd == ["--port=8080"]


@pytest.mark.parametrize(
    ("dockerfile", "message"),
    [
        (
            "FROM ubuntu\nRUN make install\n",
            "RUN make install: onemachine lays out images from Debian packages, "
            "added users, copied files and pip-installed copies only; it cannot run this",
        ),
        ("FROM ubuntu\nVOLUME /data\n", "VOLUME /data: not understood here"),
        ("RUN apt-get install -y python3\n", "no FROM: this is not a Dockerfile"),
    ],
)
def test_a_stage_onemachine_cannot_lay_out_is_refused(dockerfile: str, message: str) -> None:
    with pytest.raises(UnsupportedDockerfile) as refused:
        final_stage(dockerfile)
    assert str(refused.value) == message


def _base_with_passwd(tmp_path: Path) -> Layer:
    entries = [Entry("/etc/passwd", content=b"root:x:0:0:root:/root:/bin/sh\n", mode=0o644)]
    entries += [Entry("/etc/group", content=b"root:x:0:\n", mode=0o644), Entry("/root", mode=0o700)]
    return layer_of_entries(entries, tmp_path / "base.tar")


def test_the_image_holds_the_users_build_the_contexts_files_and_the_stages_settings(
    tmp_path: Path,
) -> None:
    tool = tmp_path / "tool-build"
    tool.write_bytes(b"\x7fELF the user's build")
    context = tmp_path / "checkout"
    context.mkdir()
    (context / "settings.conf").write_text("a=1\n")
    asked: list[list[str]] = []

    def base(packages: Sequence[str]) -> Layer:
        asked.append(list(packages))
        return _base_with_passwd(tmp_path)

    spec = image_from_stage(
        final_stage(TWO_STAGES + "RUN adduser -D -u 1000 worker\n"),
        "tool:latest",
        {"tool": tool},
        context,
        base,
        tmp_path / "top.tar",
    )
    assert asked == [["python3"]]
    top = spec.layers[1]
    assert read_file(top, "/usr/local/bin/tool") == tool.read_bytes()
    assert read_file(top, "/root/settings.conf") == b"a=1\n"
    assert read_file(top, "/etc/passwd") == (
        b"root:x:0:0:root:/root:/bin/sh\nworker:x:1000:1000::/home/worker:/bin/sh\n"
    )
    with tarfile.open(top.path) as opened:
        assert opened.getmember("root").mode == 0o700, "the base's /root is kept as it is"
        assert opened.getmember("home/worker").uid == 1000
    assert (spec.entrypoint, spec.working_dir, spec.env["MODE"]) == (
        ["/usr/local/bin/tool", "--serve"],
        "/root",
        "test",
    )


def test_a_copy_from_a_build_stage_needs_the_users_build(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedDockerfile, match="no build of tool was given"):
        image_from_stage(
            final_stage(TWO_STAGES),
            "tool:latest",
            {},
            tmp_path,
            lambda packages: _base_with_passwd(tmp_path),
            tmp_path / "top.tar",
        )


PIP_STAGE = """\
FROM python:3.12-slim
WORKDIR /app
COPY client /build/client
COPY server /build/server
RUN pip install --no-cache-dir /build/client && pip install /build/server && rm -rf /build
ENTRYPOINT ["python", "-m", "server"]
"""


def test_a_pip_installed_copy_becomes_a_layer_of_its_installation(tmp_path: Path) -> None:
    context = tmp_path / "checkout"
    for project in ("client", "server"):
        (context / project).mkdir(parents=True)
    stage = final_stage(PIP_STAGE)
    assert stage.pip_installs == ["/build/client", "/build/server"]
    assert kept_copies(stage) == [], "what rm -rf removes is not in the image"
    installed_with: list[tuple[Layer, list[Path]]] = []

    def installed(base: Layer, projects: Sequence[Path]) -> Layer:
        installed_with.append((base, list(projects)))
        return layer_of_entries([Entry("/usr/local/lib/x")], tmp_path / "pip.tar")

    base = _base_with_passwd(tmp_path)
    spec = image_from_stage(
        stage, "server:latest", {}, context, lambda packages: base, tmp_path / "top.tar", installed
    )
    assert installed_with == [(base, [context / "client", context / "server"])]
    assert [layer.path.name for layer in spec.layers] == ["base.tar", "pip.tar", "top.tar"]
    assert read_file(spec.layers[2], "/build/client/x") is None


@pytest.mark.parametrize(
    ("dockerfile", "message"),
    [
        (
            "FROM python:3.12-slim\nRUN pip install /build/absent\n",
            "RUN pip install /build/absent: not a directory the stage copies from",
        ),
        (
            "FROM python:3.12-slim\nCOPY client /build/client\nRUN pip install /build/client\n",
            "RUN pip install: no way to install Python projects",
        ),
    ],
)
def test_a_pip_install_onemachine_cannot_lay_out_is_refused(
    tmp_path: Path, dockerfile: str, message: str
) -> None:
    (tmp_path / "client").mkdir()
    with pytest.raises(UnsupportedDockerfile, match=message):
        image_from_stage(
            final_stage(dockerfile),
            "client:latest",
            {},
            tmp_path,
            lambda packages: _base_with_passwd(tmp_path),
            tmp_path / "top.tar",
        )


def test_the_python_a_pip_layer_is_made_for_is_the_bases(tmp_path: Path) -> None:
    entries = [Entry("/usr/bin/python3", content=b"link"), Entry("/usr/bin/python3.11")]
    assert python_version_of(layer_of_entries(entries, tmp_path / "python.tar")) == "3.11"
    with pytest.raises(ImageBuildFailed, match=r"the base image has no /usr/bin/python3\.N"):
        python_version_of(_base_with_passwd(tmp_path))


def test_a_projects_digest_follows_its_files_not_its_compiled_caches(tmp_path: Path) -> None:
    (tmp_path / "module.py").write_text("A = 1\n")
    before = tree_digest(tmp_path)
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "module.pyc").write_bytes(b"compiled")
    assert tree_digest(tmp_path) == before
    (tmp_path / "module.py").write_text("A = 2\n")
    assert tree_digest(tmp_path) != before
