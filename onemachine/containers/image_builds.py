"""The images onemachine makes, from Debian's packages and the user's builds.

- The pause image (the pod sandbox's process): `sandbox_pause.c`, this project's own
  program, compiled with `gcc -static`; one file, `/pause`.
- A Debian root file system: `debootstrap --variant=minbase` of bookworm with the packages
  an image needs (docs, man pages, locales and apt's lists trimmed), one layer, shared by
  every image made on it.
- An image as a Dockerfile's final stage lays it out (dockerfile.py), read from the
  user's checkout: PicoD's from `docker/Dockerfile.picod` with the user's `picod` build,
  named `picod:latest` as upstream's Makefile names it (`PICOD_IMAGE`); the kubelet's
  WorkloadManager, Router and MCP server images the same way (`dockerfile_image`); a stage
  that pip-installs projects gets a layer of them, installed for the base's Python from
  wheels (`pip_layer`).
- The agents' base image under the name manifests use, `python:3.12-slim`: that root file
  system with Debian's `python3` and `python-is-python3`. It is Debian bookworm's Python
  3.11, not the Python 3.12 of the image it is named after: there is no registry to pull
  that one from.

Each is built once and kept by the content of its inputs (image_cache.py).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from onemachine.containers.dockerfile import final_stage, image_from_stage, pip_projects
from onemachine.containers.image_archive import (
    Entry,
    ImageSpec,
    Layer,
    layer_names,
    layer_of_entries,
    layer_of_tree,
    write_docker_archive,
)
from onemachine.containers.image_cache import ImageCache, file_digest

PAUSE_SOURCE = Path(__file__).with_name("sandbox_pause.c")
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
PYTHON_IMAGE = "docker.io/library/python:3.12-slim"
PYTHON_PACKAGES = ("python3", "python-is-python3")
PICOD_IMAGE = "picod:latest"  # upstream's Makefile: PICOD_IMAGE ?= picod:latest
PICOD_DOCKERFILE = "docker/Dockerfile.picod"
# What a slim image leaves out: kept empty in the layer.
_TRIMMED = (
    "dev",
    "proc",
    "sys",
    "run",
    "tmp",
    "var/cache/apt",
    "var/lib/apt/lists",
    "var/log",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
)


class ImageBuildFailed(RuntimeError):
    """A tool an image is made with failed; the message ends with its output."""


def _run(argv: Sequence[str], doing: str) -> None:
    try:
        result = subprocess.run(argv, capture_output=True, text=True, check=False)
    except FileNotFoundError as missing:
        raise ImageBuildFailed(f"{doing}: {argv[0]} is not installed") from missing
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip().splitlines()[-15:]
        raise ImageBuildFailed(f"{doing}: {' '.join(argv)} failed:\n" + "\n".join(output))


def _tool_version(argv: Sequence[str]) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    return (result.stdout or result.stderr).splitlines()[0] if result.returncode == 0 else ""


def pause_image(cache: ImageCache, name: str) -> Path:
    """The docker-archive of the pause image named `name`."""
    source = PAUSE_SOURCE.read_text()

    def build(out: Path) -> None:
        binary = out.with_name("pause")
        _run(["gcc", "-Os", "-static", "-o", str(binary), str(PAUSE_SOURCE)], "the pause image")
        _run(["strip", str(binary)], "the pause image")
        layer = layer_of_entries([Entry("/pause", source=binary)], out.with_name("layer.tar"))
        write_docker_archive(ImageSpec(name, [layer], entrypoint=["/pause"]), out)

    return cache.get(f"pause-{name}", [name, source, _tool_version(["gcc", "--version"])], build)


def _trim(root: Path) -> None:
    """Docs (bar the copyright files), man pages, locales, apt's lists and caches, logs."""
    for directory in _TRIMMED:
        path = root / directory
        if path.is_dir() and not path.is_symlink():
            for child in path.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
    docs = root / "usr/share/doc"
    for package in docs.iterdir() if docs.is_dir() else ():
        for child in package.iterdir() if package.is_dir() and not package.is_symlink() else ():
            if child.name == "copyright":
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()


def debian_root(cache: ImageCache, packages: Sequence[str]) -> Layer:
    """A layer: Debian bookworm's minimal root file system with `packages`, trimmed.
    Made by debootstrap in a mount namespace of its own (whatever it mounts in the new
    root goes with it); it downloads from Debian's archive."""
    wanted = sorted(set(packages))

    def build(out: Path) -> None:
        root = out.with_name("root")
        include = [f"--include={','.join(wanted)}"] if wanted else []
        argv = ["unshare", "--mount", "--propagation", "private", "debootstrap"]
        argv += ["--variant=minbase", *include, DEBIAN_SUITE, str(root), DEBIAN_MIRROR]
        _run(argv, "a Debian root file system")
        _trim(root)
        layer_of_tree(root, out, emptied=_TRIMMED)

    inputs = [DEBIAN_SUITE, DEBIAN_MIRROR, wanted, sorted(_TRIMMED)]
    return Layer.of(cache.get("debian-root", inputs, build))


def python_image(cache: ImageCache, name: str = PYTHON_IMAGE) -> Path:
    """The docker-archive of the agents' base image (the module docstring says what it
    holds), named `name`."""
    root = debian_root(cache, PYTHON_PACKAGES)
    spec = ImageSpec(name, [root], cmd=["python3"], env={"LANG": "C.UTF-8"})
    inputs = [name, root.digest]
    return cache.get(f"image-{name}", inputs, lambda out: write_docker_archive(spec, out))


def tree_digest(root: Path) -> str:
    """A digest of a directory's files (paths and contents), compiled caches left out."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(f"{path.relative_to(root)}\0{file_digest(path)}\0".encode())
    return digest.hexdigest()


_PYTHON_BINARY = re.compile(r"^usr/bin/python(3\.\d+)$")


def python_version_of(base: Layer) -> str:
    """The `3.N` of the Python in `base` (its /usr/bin/python3.N)."""
    versions = sorted(
        match.group(1) for name in layer_names(base) if (match := _PYTHON_BINARY.match(name))
    )
    if not versions:
        raise ImageBuildFailed("RUN pip install: the base image has no /usr/bin/python3.N")
    return versions[-1]


def pip_layer(cache: ImageCache, base: Layer, projects: Sequence[Path]) -> Layer:
    """A layer of `projects` and their dependencies installed where the base's Python
    finds them (/usr/local/lib/python3.N/dist-packages, Debian's place for them): the
    projects made into wheels, then pip of this Python installs those wheels and their
    dependencies' wheels from PyPI for the base's Python version and the manylinux
    platform, so nothing is compiled for the wrong interpreter."""
    version = python_version_of(base)

    def build(out: Path) -> None:
        wheels, root = out.with_name("wheels"), out.with_name("root")
        target = root / f"usr/local/lib/python{version}/dist-packages"
        pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
        doing = "a pip-install layer"
        _run([*pip, "wheel", "--no-deps", "-w", str(wheels), *map(str, projects)], doing)
        platform = ["--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_28_x86_64"]
        install = [*pip, "install", "--no-cache-dir", "--target", str(target)]
        install += ["--python-version", version, "--only-binary=:all:", *platform]
        _run([*install, *map(str, sorted(wheels.iterdir()))], doing)
        layer_of_tree(root, out)

    inputs = [version, base.digest, [tree_digest(project) for project in projects]]
    return Layer.of(cache.get("pip-layer", inputs, build))


def dockerfile_image(
    cache: ImageCache,
    dockerfile: Path,
    name: str,
    builds: Mapping[str, Path],
    context: Path,
) -> Path:
    """The docker-archive of the image `name` laid out as `dockerfile`'s final stage
    (dockerfile.py): `builds` maps a file a stage builds (`picod`) to the user's build of
    it, `context` is the checkout the Dockerfile's other COPYs read from."""
    text = dockerfile.read_text()
    stage = final_stage(text)
    packages = PYTHON_PACKAGES if stage.base.startswith("python:") else ()
    inputs = [
        name,
        text,
        {file: file_digest(path) for file, path in sorted(builds.items())},
        {
            copy.source: file_digest(context / copy.source)
            for copy in stage.copies
            if copy.stage is None and (context / copy.source).is_file()
        },
        [tree_digest(project) for project in pip_projects(stage, context)],
    ]

    def build(out: Path) -> None:
        spec = image_from_stage(
            stage,
            name,
            builds,
            context,
            lambda stage_packages: debian_root(cache, [*packages, *stage_packages]),
            out.with_name("layer.tar"),
            lambda base, projects: pip_layer(cache, base, projects),
        )
        write_docker_archive(spec, out)

    return cache.get(f"image-{name}", inputs, build)


def picod_image(cache: ImageCache, checkout: Path, picod: Path, name: str = PICOD_IMAGE) -> Path:
    """PicoD's image from the user's checkout's Dockerfile and their `picod` build."""
    return dockerfile_image(cache, checkout / PICOD_DOCKERFILE, name, {"picod": picod}, checkout)
