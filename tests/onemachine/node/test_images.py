"""The node's --image map: parsing, resolution with Kubernetes' command/args rules, errors."""

from __future__ import annotations

import pytest

from onemachine.node.images import ImageMap, ImageMapError, ImageNotMapped

IMAGES = ImageMap.parse(
    [
        "picod:*=/opt/upstream/bin/picod --log-level debug",
        "ghcr.io/volcano-sh/picod:*=/opt/upstream/bin/picod",
        "python:*=python3",
        "*:latest=/bin/echo latest",
    ]
)


def test_without_a_command_the_image_entrypoint_runs_with_the_args() -> None:
    assert IMAGES.resolve("picod:v1", None, ["--workspace", "/root"]) == [
        "/opt/upstream/bin/picod",
        "--log-level",
        "debug",
        "--workspace",
        "/root",
    ]
    assert IMAGES.resolve("python:3.12-slim", [], None) == ["python3"]


def test_a_command_naming_the_image_program_runs_the_mapped_command() -> None:
    assert IMAGES.resolve("python:3.12-slim", ["python", "-u", "agent.py"], ["--x"]) == [
        "python3",
        "-u",
        "agent.py",
        "--x",
    ]
    assert IMAGES.resolve("python:3.12-slim", ["/usr/local/bin/python3", "a.py"], None) == [
        "python3",
        "a.py",
    ]
    assert IMAGES.resolve("ghcr.io/volcano-sh/picod:latest", ["/usr/local/bin/picod"], ["-p"]) == [
        "/opt/upstream/bin/picod",
        "-p",
    ]


def test_another_command_replaces_the_entrypoint() -> None:
    assert IMAGES.resolve("python:3.12", ["sh", "-c", "echo hi"], ["x"]) == [
        "sh",
        "-c",
        "echo hi",
        "x",
    ]


def test_the_first_matching_pattern_wins_and_matches_the_whole_reference() -> None:
    assert IMAGES.resolve("ghcr.io/volcano-sh/picod:latest", None, None) == [
        "/opt/upstream/bin/picod"
    ]
    assert IMAGES.resolve("busybox:latest", None, None) == ["/bin/echo", "latest"]


def test_an_image_no_pattern_matches_is_refused_naming_the_image_and_the_flag() -> None:
    with pytest.raises(ImageNotMapped) as refused:
        IMAGES.resolve("nginx:1.27", None, None)
    assert refused.value.image == "nginx:1.27"
    assert str(refused.value) == (
        'image "nginx:1.27" matches no --image PATTERN=COMMAND (patterns: picod:*, '
        "ghcr.io/volcano-sh/picod:*, python:*, *:latest)"
    )
    with pytest.raises(ImageNotMapped, match=r"\(patterns: none given\)"):
        ImageMap.parse([]).resolve("python:3", None, None)


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("python3", "expected --image PATTERN=COMMAND"),
        ("=python3", "expected --image PATTERN=COMMAND"),
        ("python:*=", "COMMAND is empty"),
        ("python:*=  ", "COMMAND is empty"),
        ("python:*=python3 'unclosed", "COMMAND: No closing quotation"),
    ],
)
def test_a_malformed_entry_is_refused_naming_it(entry: str, says: str) -> None:
    with pytest.raises(ImageMapError) as refused:
        ImageMap.parse([entry])
    assert str(refused.value).startswith(f"--image {entry!r}: ")
    assert says in str(refused.value)
