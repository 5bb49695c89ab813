"""The recordings of upstream's programs and of a real kube-apiserver are kept in this tree,
copied with their READMEs from the shared data beside the repository (`../shared`, which CI
lays out and a contributor's clone lacks), so that every replay runs from any clone. Where
`../shared` is there, each copy still equals its source, file for file and byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kubernetes import test_recorded_api
from tests.recordings import recorded

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
# Each in-tree copy (the folder holding the README) and the shared folder it was copied from.
COPIES = {
    recorded.RECORDINGS.parent: SHARED / "upstream-recordings",
    test_recorded_api.RECORDINGS.parent: SHARED / "kube-apiserver-recordings",
}


def test_the_umbrella_issue_beside_the_coverage_map_equals_the_shared_one() -> None:
    """Upstream's issue that asked for this suite, which tests/suite/test_coverage.py reads
    the items of: a copy too."""
    source, copy = SHARED / "e2e-umbrella-issue.txt", ROOT / "docgen" / "e2e-umbrella-issue.txt"
    if not source.is_file():
        pytest.skip(f"{source} is absent (CI lays ../shared beside the clone): nothing to compare")
    assert copy.read_bytes() == source.read_bytes(), f"copy {source} to {copy.relative_to(ROOT)}"


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.mark.parametrize("copy", sorted(COPIES), ids=lambda path: path.name)
def test_the_copy_in_the_tree_holds_its_readme_and_recordings(copy: Path) -> None:
    files = _files(copy)
    assert "README.md" in files, f"{copy} has no README"
    assert any(name.endswith(".jsonl") for name in files), f"{copy} holds no recordings"


@pytest.mark.parametrize("copy", sorted(COPIES), ids=lambda path: path.name)
def test_the_copy_in_the_tree_equals_the_shared_recordings(copy: Path) -> None:
    source = COPIES[copy]
    if not source.is_dir():
        pytest.skip(f"{source} is absent (CI lays ../shared beside the clone): nothing to compare")
    ours, theirs = _files(copy), _files(source)
    missing = sorted(set(theirs) - set(ours))
    extra = sorted(set(ours) - set(theirs))
    changed = sorted(name for name in set(ours) & set(theirs) if ours[name] != theirs[name])
    assert not (missing or extra or changed), (
        f"{copy.relative_to(ROOT)} is no longer a copy of {source}: missing {missing}, "
        f"not in the source {extra}, changed {changed}; copy the source again "
        f"(cp -r {source}/. {copy.relative_to(ROOT)}/)"
    )
