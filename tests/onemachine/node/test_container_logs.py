"""The node's log files read back as a kubelet reads them (tail, since, timestamps, limit,
partial lines), and the query of a containerLogs request decoded and checked as the kubelet
does. No processes: records written by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from onemachine.node.container_logs import (
    LogOptions,
    LogReader,
    LogRecord,
    cut_records,
    format_time,
    log_text,
    parse_time,
)
from onemachine.node.kubelet_server import LogQueryRefused, log_options

SECOND = 1_000_000_000
T0 = parse_time("2026-12-02T06:00:00Z")


def write(path: Path, *lines: tuple[int, str, str, str]) -> Path:
    path.write_bytes(
        b"".join(
            f"{format_time(T0 + at * SECOND)} {stream} {tag} {text}\n".encode()
            for at, stream, tag, text in lines
        )
    )
    return path


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return write(
        tmp_path / "0.log",
        (0, "stdout", "F", "zero"),
        (1, "stderr", "F", "one"),
        (2, "stdout", "P", "two "),
        (2, "stdout", "F", "and a half"),
        (3, "stdout", "F", "three"),
    )


def read(log: Path, **options: object) -> str:
    return LogReader(log, LogOptions(**options)).read().decode()  # type: ignore[arg-type]


def test_the_whole_log_joins_partial_records(log: Path) -> None:
    assert read(log) == log_text(log) == "zero\none\ntwo and a half\nthree\n"


def test_tail_counts_records_of_either_stream(log: Path) -> None:
    assert read(log, tail=2) == "and a half\nthree\n"
    assert read(log, tail=0) == ""
    assert read(log, tail=99) == read(log)


def test_since_leaves_out_what_came_before(log: Path) -> None:
    assert read(log, since=T0 + 2 * SECOND) == "two and a half\nthree\n"


def test_timestamps_prefix_each_line_once_with_nine_decimals(log: Path) -> None:
    assert read(log, timestamps=True, tail=3).splitlines() == [
        "2026-12-02T06:00:02.000000000Z two and a half",
        "2026-12-02T06:00:03.000000000Z three",
    ]


def test_limit_bytes_cuts_the_output_and_ends_it(log: Path) -> None:
    reader = LogReader(log, LogOptions(limit_bytes=7, follow=True))
    assert reader.read() == b"zero\non"
    assert reader.exhausted
    assert reader.read() == b""


def test_a_following_reader_gets_only_what_is_new_and_complete(tmp_path: Path) -> None:
    path = write(tmp_path / "0.log", (0, "stdout", "F", "first"))
    reader = LogReader(path, LogOptions(follow=True))
    assert reader.read() == b"first\n"
    with path.open("ab") as more:
        more.write(f"{format_time(T0)} stdout F second\n{format_time(T0)} std".encode())
    assert reader.read() == b"second\n"
    with path.open("ab") as more:
        more.write(b"err F third\n")
    assert reader.read() == b"third\n"


def test_a_missing_file_reads_as_nothing_yet(tmp_path: Path) -> None:
    assert LogReader(tmp_path / "none.log", LogOptions()).read() == b""
    assert log_text(tmp_path / "none.log") == ""


def test_a_line_not_in_the_cri_format_is_refused() -> None:
    with pytest.raises(ValueError, match="not a CRI log line"):
        LogRecord.parse(b"2026-12-02T06:00:00Z stdout X text")
    with pytest.raises(ValueError, match="not a CRI log line"):
        LogRecord.parse(b"raw output")


def test_long_lines_are_cut_into_partial_records_and_an_unended_one_is_partial() -> None:
    records, rest = cut_records(b"", b"x" * (16 * 1024 + 5))
    assert [(tag, len(content)) for tag, content in records] == [(b"P", 16 * 1024)]
    assert rest == b"xxxxx"
    assert cut_records(rest, b"") == ([(b"P", b"xxxxx")], b"")
    assert cut_records(b"ab", b"c\nd") == ([(b"F", b"abc")], b"d")


@pytest.mark.parametrize(
    ("text", "nanoseconds"),
    [
        ("2026-12-02T06:00:00Z", T0),
        ("2026-12-02T06:00:00.5Z", T0 + SECOND // 2),
        ("2026-12-02T06:00:00.000000001Z", T0 + 1),
        ("2026-12-02T07:00:00+01:00", T0),
    ],
)
def test_rfc3339_times_parse_to_nanoseconds(text: str, nanoseconds: int) -> None:
    assert parse_time(text) == nanoseconds


def test_a_time_that_is_not_rfc3339_is_refused() -> None:
    with pytest.raises(ValueError, match="not an RFC 3339 time"):
        parse_time("yesterday")


def test_the_query_becomes_the_kubelets_reading_options() -> None:
    query = {"tailLines": "3", "timestamps": "true", "follow": "1", "limitBytes": "10"}
    options, previous = log_options(query, T0)
    assert options == LogOptions(tail=3, timestamps=True, follow=True, limit_bytes=10)
    assert previous is False
    assert log_options({"sinceSeconds": "5", "previous": "TRUE"}, T0) == (
        LogOptions(since=T0 - 5 * SECOND),
        True,
    )
    assert log_options({"sinceTime": "2026-12-02T06:00:00Z"}, T0)[0].since == T0
    assert log_options({"follow": "false", "timestamps": "0"}, T0)[0] == LogOptions()
    assert log_options({"tail": "4"}, T0)[0].tail == 4
    assert log_options({"tail": "all", "tailLines": "4"}, T0)[0].tail is None


@pytest.mark.parametrize(
    ("query", "status", "message"),
    [
        ({"tailLines": "x"}, 400, '{"message": "Unable to decode query."}'),
        ({"sinceTime": "yesterday"}, 400, '{"message": "Unable to decode query."}'),
        ({"tailLines": "-1"}, 422, '{"message": "Invalid request."}'),
        ({"limitBytes": "0"}, 422, '{"message": "Invalid request."}'),
        ({"sinceSeconds": "0"}, 422, '{"message": "Invalid request."}'),
        (
            {"sinceSeconds": "5", "sinceTime": "2026-12-02T06:00:00Z"},
            422,
            '{"message": "Invalid request."}',
        ),
    ],
)
def test_a_bad_query_is_answered_as_the_kubelet_answers_it(
    query: dict[str, str], status: int, message: str
) -> None:
    with pytest.raises(LogQueryRefused) as refused:
        log_options(query, T0)
    assert (refused.value.status, str(refused.value)) == (status, message)
