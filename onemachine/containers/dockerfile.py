"""An image laid out as a Dockerfile's final stage lays it out, without building anything.

Upstream's Dockerfiles build a Go binary in a first stage and copy it into a small final
stage (`docker/Dockerfile.picod`: `FROM ubuntu`, `apt-get install python3`, `WORKDIR`,
`COPY --from=builder .../picod`, `ENTRYPOINT`). onemachine reads the final stage from the
user's checkout at run time (nothing of it is copied here) and makes the same layout: the
base is a Debian root file system with the packages the stage installs (whatever
distribution it names: there is no registry to pull it from), the user's build where the
stage copies a built file, the Python projects it `pip install`s (a layer of their
installation, image_builds.pip_layer), and the stage's working directory, environment, user,
entrypoint and command. A stage that runs anything else is refused, naming the instruction.

Understood in the final stage: FROM, RUN of `apt-get update`, `apt-get install`,
`apk add`, `adduser -D -u UID NAME`, `pip install [--no-cache-dir] DIRECTORY` of a copied
directory and `rm -rf` (a copy under a removed path is left out: it was a build input)
(joined by `&&` or `;`),
COPY (`--from=STAGE` of a built file, or a file of the build context), WORKDIR, ENV, USER,
ENTRYPOINT and CMD; ARG, LABEL, EXPOSE and HEALTHCHECK change nothing here.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from onemachine.containers.image_archive import (
    Entry,
    ImageSpec,
    Layer,
    contains,
    layer_of_entries,
    read_file,
)

_IGNORED = {"ARG", "LABEL", "EXPOSE", "HEALTHCHECK", "STOPSIGNAL", "MAINTAINER"}


class UnsupportedDockerfile(ValueError):
    """An instruction of the final stage that onemachine cannot lay out."""


@dataclass(frozen=True)
class Copy:
    """`COPY [--from=STAGE] SOURCE DESTINATION`, the destination made absolute."""

    source: str
    destination: str
    stage: str | None


@dataclass
class FinalStage:
    """What the final stage makes: its base's name, the packages it installs, the users it
    adds (name, uid), its copies, and the container's configuration."""

    base: str = ""
    packages: list[str] = field(default_factory=list)
    users: list[tuple[str, int]] = field(default_factory=list)
    copies: list[Copy] = field(default_factory=list)
    pip_installs: list[str] = field(default_factory=list)  # image paths of copied projects
    removed: list[str] = field(default_factory=list)  # `rm -rf` paths
    working_dir: str = ""
    env: dict[str, str] = field(default_factory=dict)
    user: str = ""
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    joined: list[str] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        joined.append(pending + stripped)
        pending = ""
    if pending.strip():
        joined.append(pending)
    found = []
    for line in joined:
        word, _, rest = line.partition(" ")
        found.append((word.upper(), rest.strip()))
    return found


def _exec_form(arguments: str) -> list[str]:
    """ENTRYPOINT/CMD: the JSON form as it is, the shell form through /bin/sh -c."""
    if arguments.startswith("["):
        return [str(word) for word in json.loads(arguments)]
    return ["/bin/sh", "-c", arguments]


def _run(stage: FinalStage, line: str) -> None:
    for command in re.split(r"&&|;", line):
        words = shlex.split(command)
        if not words:
            continue
        if words[:2] == ["apt-get", "update"]:
            continue
        if words[:2] == ["rm", "-rf"]:
            stage.removed += words[2:]
        elif words[:2] == ["pip", "install"] and words[2:]:
            stage.pip_installs += [word for word in words[2:] if word != "--no-cache-dir"]
        elif words[:2] == ["apt-get", "install"]:
            stage.packages += [word for word in words[2:] if not word.startswith("-")]
        elif words[0] == "apk" and "add" in words:
            after = words[words.index("add") + 1 :]
            stage.packages += [word for word in after if not word.startswith("-")]
        elif words[0] == "adduser" and "-u" in words:
            uid = int(words[words.index("-u") + 1])
            stage.users.append((words[-1], uid))
        else:
            raise UnsupportedDockerfile(
                f"RUN {command.strip()}: onemachine lays out images from Debian packages, "
                "added users, copied files and pip-installed copies only; it cannot run this"
            )


def _copy(stage: FinalStage, arguments: str) -> None:
    words = shlex.split(arguments)
    source_stage = None
    while words and words[0].startswith("--"):
        option = words.pop(0)
        if option.startswith("--from="):
            source_stage = option.removeprefix("--from=")
    *sources, destination = words
    base = PurePosixPath(stage.working_dir or "/")
    target = base / destination
    for source in sources:
        into = destination.endswith("/") or destination == "." or len(sources) > 1
        path = target / PurePosixPath(source).name if into else target
        stage.copies.append(Copy(source, str(path), source_stage))


def final_stage(text: str) -> FinalStage:
    """The final stage of the Dockerfile `text`; UnsupportedDockerfile for an instruction
    it cannot lay out (the module docstring lists what it reads)."""
    instructions = _instructions(text)
    starts = [index for index, (instruction, _) in enumerate(instructions) if instruction == "FROM"]
    stage = FinalStage()
    for instruction, arguments in instructions[starts[-1] if starts else 0 :]:  # the last stage
        if instruction == "FROM":
            words = [word for word in arguments.split() if not word.startswith("--")]
            stage = FinalStage(base=words[0])
        elif instruction == "RUN":
            _run(stage, arguments)
        elif instruction == "COPY" or instruction == "ADD":
            _copy(stage, arguments)
        elif instruction == "WORKDIR":
            stage.working_dir = str(PurePosixPath(stage.working_dir or "/") / arguments)
        elif instruction == "ENV":
            if "=" in arguments.split()[0]:
                for pair in shlex.split(arguments):
                    key, _, value = pair.partition("=")
                    stage.env[key] = value
            else:
                key, _, value = arguments.partition(" ")
                stage.env[key] = value.strip()
        elif instruction == "USER":
            stage.user = arguments
        elif instruction == "ENTRYPOINT":
            stage.entrypoint = _exec_form(arguments)
            stage.cmd = []
        elif instruction == "CMD":
            stage.cmd = _exec_form(arguments)
        elif instruction not in _IGNORED:
            raise UnsupportedDockerfile(f"{instruction} {arguments}: not understood here")
    if not stage.base:
        raise UnsupportedDockerfile("no FROM: this is not a Dockerfile")
    return stage


def _users_entries(stage: FinalStage, base: Layer) -> list[Entry]:
    """/etc/passwd and /etc/group with the stage's users added, and their homes."""
    if not stage.users:
        return []
    passwd = (read_file(base, "/etc/passwd") or b"").decode()
    group = (read_file(base, "/etc/group") or b"").decode()
    entries = []
    for name, uid in stage.users:
        passwd += f"{name}:x:{uid}:{uid}::/home/{name}:/bin/sh\n"
        group += f"{name}:x:{uid}:\n"
        entries.append(Entry(f"/home/{name}", owner=(uid, uid)))
    entries.append(Entry("/etc/passwd", content=passwd.encode(), mode=0o644))
    entries.append(Entry("/etc/group", content=group.encode(), mode=0o644))
    return entries


def _under(path: str, directory: str) -> bool:
    return PurePosixPath(path).is_relative_to(PurePosixPath(directory))


def kept_copies(stage: FinalStage) -> list[Copy]:
    """The copies still in the image: none under a path the stage removes."""
    return [
        copy
        for copy in stage.copies
        if not any(_under(copy.destination, removed) for removed in stage.removed)
    ]


def pip_projects(stage: FinalStage, context: Path) -> list[Path]:
    """The directories of `context` the stage pip-installs, in order; UnsupportedDockerfile
    for a path that is not a copied directory of the context."""
    projects = []
    for path in stage.pip_installs:
        target = PurePosixPath(stage.working_dir or "/") / path
        sources = [
            copy.source
            for copy in stage.copies
            if copy.stage is None and PurePosixPath(copy.destination) == target
        ]
        source = context / sources[-1] if sources else None
        if source is None or not source.is_dir():
            raise UnsupportedDockerfile(
                f"RUN pip install {path}: not a directory the stage copies from {context}"
            )
        projects.append(source)
    return projects


def image_from_stage(
    stage: FinalStage,
    name: str,
    builds: Mapping[str, Path],
    context: Path,
    base: Callable[[Sequence[str]], Layer],
    layer_path: Path,
    installed: Callable[[Layer, Sequence[Path]], Layer] | None = None,
) -> ImageSpec:
    """The image `name` of `stage`: `base(packages)`, then `installed(base, projects)`
    when the stage pip-installs copied projects (directories of `context`), then one layer
    of its users and remaining copies (a copy from another stage is `builds[file name]`,
    the user's build of that file; any other is a file of `context`), written at
    `layer_path`."""
    root = base(stage.packages)
    layers = [root]
    projects = pip_projects(stage, context)
    if projects:
        if installed is None:
            raise UnsupportedDockerfile("RUN pip install: no way to install Python projects")
        layers.append(installed(root, projects))
    entries = _users_entries(stage, root)
    for copy in kept_copies(stage):
        file_name = PurePosixPath(copy.source).name
        if copy.stage is not None:
            if file_name not in builds:
                raise UnsupportedDockerfile(
                    f"COPY --from={copy.stage} {copy.source}: no build of {file_name} was given"
                )
            entries.append(Entry(copy.destination, source=builds[file_name]))
        else:
            source = context / copy.source
            if not source.is_file():
                raise UnsupportedDockerfile(
                    f"COPY {copy.source}: not a file of {context} (directories are not laid out)"
                )
            mode = source.stat().st_mode & 0o777
            entries.append(Entry(copy.destination, source=source, mode=mode))
    if stage.working_dir and not contains(root, stage.working_dir):
        entries.append(Entry(stage.working_dir))
    if entries:
        layers.append(layer_of_entries(entries, layer_path, over=root))
    return ImageSpec(
        name,
        layers,
        entrypoint=stage.entrypoint,
        cmd=stage.cmd,
        env=stage.env,
        working_dir=stage.working_dir,
        user=stage.user,
    )
