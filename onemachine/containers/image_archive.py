"""Images as files: layers (uncompressed tars) and the docker-archive that holds an image.

A docker-archive (`docker save`'s format, which `ctr images import` reads) is a tar of
`manifest.json` (the image's names, its config and its layers), the config (an OCI image
configuration: entrypoint, command, environment, working directory, user, and the layers'
`diff_ids`) and each layer as `DIGEST/layer.tar`. Written here directly: the format is
small, and it needs no tool beyond Python's tarfile.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import tarfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

_CHUNK = 1 << 20


@dataclass(frozen=True)
class Layer:
    """An uncompressed layer tar and its digest (`sha256:HEX`, its diff_id)."""

    path: Path
    digest: str

    @classmethod
    def of(cls, path: Path) -> Layer:
        return cls(path, _sha256(path))


@dataclass(frozen=True)
class ImageSpec:
    """An image: its full name (`docker.io/library/python:3.12-slim`), layers bottom
    first, and the configuration a container starts from."""

    name: str
    layers: Sequence[Layer]
    entrypoint: Sequence[str] = ()
    cmd: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    working_dir: str = ""
    user: str = ""


DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def full_name(name: str) -> str:
    """A reference as containerd names it: `picod:latest` is
    `docker.io/library/picod:latest`, `python` is `docker.io/library/python:latest`."""
    first, _, rest = name.partition("/")
    if not rest or ("." not in first and ":" not in first and first != "localhost"):
        name = f"docker.io/{name if rest else 'library/' + name}"
    last = name.rsplit("/", 1)[1]
    return name if ":" in last or "@" in last else f"{name}:latest"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


def _directory_entry(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    return info


@dataclass(frozen=True)
class Entry:
    """One entry of a layer made from parts: a file from the machine (`source`), a file of
    `content`, or a directory (neither); owned by `owner` (uid, gid)."""

    path: str
    source: Path | None = None
    content: bytes | None = None
    mode: int = 0o755
    owner: tuple[int, int] = (0, 0)


def layer_of_entries(entries: Sequence[Entry], out: Path, over: Layer | None = None) -> Layer:
    """A layer of `entries` (image paths, absolute), with every directory above them that
    no entry names: as the layer it goes `over` has it (so a 0700 /root stays so), else
    root's, 0755."""
    below = _members(over) if over is not None else {}
    named = {entry.path.strip("/") for entry in entries}
    parents = {
        str(parent)
        for entry in entries
        for parent in PurePosixPath(entry.path.strip("/")).parents
        if str(parent) not in (".", "") and str(parent) not in named
    }
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as archive:
        for directory in sorted(parents):
            archive.addfile(below.get(directory) or _directory_entry(directory))
        for entry in sorted(entries, key=lambda entry: entry.path):
            info = tarfile.TarInfo(entry.path.strip("/"))
            info.mode = entry.mode
            info.uid, info.gid = entry.owner
            if entry.source is None and entry.content is None:
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            elif entry.content is not None:
                info.size = len(entry.content)
                archive.addfile(info, io.BytesIO(entry.content))
            else:
                assert entry.source is not None
                info.size = entry.source.stat().st_size
                with entry.source.open("rb") as data:
                    archive.addfile(info, data)
    return Layer.of(out)


def _members(layer: Layer) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(layer.path) as archive:
        return {member.name.strip("/"): member for member in archive.getmembers()}


def layer_names(layer: Layer) -> list[str]:
    """The image paths `layer` holds, without their leading slash."""
    return list(_members(layer))


def contains(layer: Layer, path: str) -> bool:
    """Whether `layer` holds an entry at image path `path`."""
    return path.strip("/") in _members(layer)


def read_file(layer: Layer, path: str) -> bytes | None:
    """The content of the regular file at image path `path` in `layer` (None if absent)."""
    with tarfile.open(layer.path) as archive:
        try:
            member = archive.getmember(path.strip("/"))
        except KeyError:
            return None
        data = archive.extractfile(member)
        return data.read() if data is not None else None


def layer_of_tree(root: Path, out: Path, emptied: Iterable[str] = ()) -> Layer:
    """A layer of the directory tree at `root` (a root file system), owners, modes, links
    and device nodes kept; the directories `emptied` (image paths) are kept empty."""
    skipped = {str(PurePosixPath(path)).lstrip("/") for path in emptied}
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as archive:
        for directory, subdirectories, files in os.walk(root):
            relative = os.path.relpath(directory, root)
            if relative in skipped:
                subdirectories.clear()
                files = []
            subdirectories.sort()
            for name in [*sorted(subdirectories), *sorted(files)]:
                path = os.path.join(directory, name)
                arcname = os.path.normpath(os.path.join(relative, name))
                info = archive.gettarinfo(path, arcname)
                if info is None:  # a socket: nothing an image can hold
                    continue
                if stat.S_ISDIR(os.lstat(path).st_mode) or not info.isreg():
                    archive.addfile(info)
                else:
                    with open(path, "rb") as data:
                        archive.addfile(info, data)
    return Layer.of(out)


def _config(spec: ImageSpec) -> bytes:
    env = {"PATH": DEFAULT_PATH, **spec.env}
    container_config: dict[str, object] = {"Env": [f"{key}={value}" for key, value in env.items()]}
    if spec.entrypoint:
        container_config["Entrypoint"] = list(spec.entrypoint)
    if spec.cmd:
        container_config["Cmd"] = list(spec.cmd)
    if spec.working_dir:
        container_config["WorkingDir"] = spec.working_dir
    if spec.user:
        container_config["User"] = spec.user
    return json.dumps(
        {
            "architecture": "amd64" if os.uname().machine == "x86_64" else os.uname().machine,
            "os": "linux",
            "config": container_config,
            "rootfs": {"type": "layers", "diff_ids": [layer.digest for layer in spec.layers]},
            "history": [{"created_by": "onemachine"} for _ in spec.layers],
        },
        sort_keys=True,
    ).encode()


def write_docker_archive(spec: ImageSpec, out: Path) -> Path:
    """`out`: the docker-archive of `spec`, named `spec.name` (made full)."""
    config = _config(spec)
    config_name = f"{hashlib.sha256(config).hexdigest()}.json"
    layer_names = [f"{layer.digest.removeprefix('sha256:')}/layer.tar" for layer in spec.layers]
    manifest = json.dumps(
        [{"Config": config_name, "RepoTags": [full_name(spec.name)], "Layers": layer_names}]
    ).encode()
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as archive:
        for name, data in ((config_name, config), ("manifest.json", manifest)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(data))
        for name, layer in zip(layer_names, spec.layers, strict=True):
            archive.addfile(_directory_entry(name.split("/")[0]))
            info = tarfile.TarInfo(name)
            info.size = layer.path.stat().st_size
            info.mode = 0o644
            with layer.path.open("rb") as layer_data:
                archive.addfile(info, layer_data)
    return out
