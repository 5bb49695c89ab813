"""The ledger holds localcube to the differences it names: a ledgered exchange that differs
otherwise, or no longer differs, fails (tests/recordings/recorded.py, `judge`). These use the
ledgers in the repository, not the recordings, so they run without ../shared."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.recordings import recorded
from tests.recordings.recorded import CHOSEN, LEDGER, ROOT, Exchange, Message, differences, judge

ANSWERS = "router-answers.jsonl"


def exchange(exchange_id: str) -> Exchange:
    nothing = Message(headers={}, body=None, fields={})
    return Exchange(id=exchange_id, what="", request=nothing, response=nothing, line={})


def ledgered(exchange_id: str) -> list[str]:
    return list(differences(ANSWERS)[exchange_id]["differs"])


def test_a_ledgered_exchange_passes_when_it_differs_as_the_ledger_says() -> None:
    judge(ANSWERS, exchange("health-root"), ledgered("health-root"))


def test_a_ledgered_exchange_with_a_mismatch_more_fails() -> None:
    broken = ["status 500, upstream 404", *ledgered("health-root")[1:]]
    with pytest.raises(AssertionError, match="status 500, upstream 404"):
        judge(ANSWERS, exchange("health-root"), broken)
    with pytest.raises(AssertionError, match="seen beyond it:\n  Server"):
        judge(ANSWERS, exchange("health-root"), [*ledgered("health-root"), "Server None"])


def test_a_ledgered_exchange_differing_otherwise_fails() -> None:
    """An unknown session's 404 losing its text is not the ledgered difference (the code)."""
    textless = """body '{"code":"SESSION_NOT_FOUND","error":""}', upstream '{"error":"..."}'"""
    with pytest.raises(AssertionError, match="not seen:"):
        judge(ANSWERS, exchange("unknown-session"), [textless])


def test_a_ledgered_exchange_that_now_agrees_is_stale() -> None:
    with pytest.raises(AssertionError, match="remove it from"):
        judge(ANSWERS, exchange("health-root"), [])


def test_any_stands_for_the_moments_values_only_where_it_is_written() -> None:
    expected = ["answered after 1.<ANY> s, upstream after 4.0 s"]
    assert recorded.unexplained(expected, ["answered after 1.2 s, upstream after 4.0 s"]) == (
        [],
        [],
    )
    late = ["answered after 3.9 s, upstream after 4.0 s"]
    assert recorded.unexplained(expected, late) == (expected, late)


def test_a_ledger_entry_without_what_differs_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "vague.yaml").write_text("some-id:\n  verdict: not reproducible\n  why: because\n")
    monkeypatch.setattr(recorded, "LEDGER", tmp_path)
    with pytest.raises(ValueError, match="some-id needs `differs`"):
        differences("vague.jsonl")


def test_each_difference_localcube_chose_names_its_fidelity_row() -> None:
    """A ledger's `row` is a phrase of the docs/fidelity.md row that explains the choice."""
    page = (ROOT / "docs" / "fidelity.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| ")]
    unexplained = {
        f"{ledger.name}: {exchange_id}": entry.get("row")
        for ledger in sorted(LEDGER.glob("*.yaml"))
        for exchange_id, entry in differences(f"{ledger.stem}.jsonl").items()
        if entry["verdict"] in CHOSEN and not any(entry["row"] in line for line in rows)
    }
    assert not unexplained, f"ledger entries naming no row of docs/fidelity.md: {unexplained}"


def test_a_chosen_difference_without_its_row_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "rowless.yaml").write_text(
        "some-id:\n  verdict: localcube design\n  why: because\n  differs: [status]\n"
    )
    monkeypatch.setattr(recorded, "LEDGER", tmp_path)
    with pytest.raises(ValueError, match="some-id needs `row`"):
        differences("rowless.jsonl")
