"""docs/fidelity.md shows the differential tests' current tally, and the ledger names only
recorded exchanges."""

from __future__ import annotations

import pytest

from tests.recordings import report
from tests.recordings.recorded import RECORDINGS, differences, load


def test_the_fidelity_page_shows_the_current_tally() -> None:
    page = report.FIDELITY.read_text(encoding="utf-8")
    assert report.written(page) == page, (
        "docs/fidelity.md's recordings tally is stale: run python -m tests.recordings.report"
    )


@pytest.mark.parametrize("file_name", sorted(report.FILES))
def test_the_ledger_names_only_recorded_exchanges(file_name: str) -> None:
    recorded = {exchange.id for exchange in load(file_name)}
    unknown = sorted(set(differences(file_name)) - recorded)
    assert not unknown, f"differences/{file_name} names exchanges never recorded: {unknown}"


def test_every_recordings_file_is_in_the_tally() -> None:
    on_disk = {path.name for path in RECORDINGS.glob("*.jsonl")}
    assert on_disk == set(report.FILES), f"recordings files not in the tally: {on_disk}"
