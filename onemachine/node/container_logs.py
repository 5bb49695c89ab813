"""A container's output as a node keeps it, and read back as a kubelet serves it.

One file per container instance, `<container>/<restartCount>.log` in the pod's log
directory, `ROOT/logs/<ns>_<pod>_<uid>/`: the kubelet's own layout (/var/log/pods/...,
kubernetes pkg/kubelet/kuberuntime/kuberuntime_container.go, buildContainerLogsPath), apart
from the pod's sandbox, so that a pod whose containers all ended keeps its logs until it is
deleted. Each line is in the CRI log format a container runtime writes: `<RFC3339Nano time>
<stdout|stderr> <F|P> <content>` (pkg/kubelet/kuberuntime/logs/logs.go, parseCRILog). F ends
a line; P is part of one, as containerd writes a line longer than its 16 KiB buffer and the
last piece of a stream that ends without a newline.

Reading follows logs.go ReadLogs: the last `tail` records, those at or after `since`, each
prefixed by its time (fixed nine decimals, RFC3339NanoFixed) with `timestamps`, the whole
cut at `limit_bytes`, and with `follow` whatever comes next until the recording ends.
"""

from __future__ import annotations

import os
import re
import selectors
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

FULL, PARTIAL = b"F", b"P"
STREAMS = ("stdout", "stderr")
_MAX_LINE = 16 * 1024  # containerd's default max_container_log_line_size
_READ_SIZE = 64 * 1024
_RFC3339 = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|z|[+-]\d\d:\d\d)")


def instance_log(directory: Path, container: str, restart_count: int) -> Path:
    """Where a container instance records its output, in its pod's log `directory`."""
    return directory / container / f"{restart_count}.log"


def format_time(nanoseconds: int) -> str:
    """RFC 3339 with nine decimals in UTC (Go's RFC3339NanoFixed, the kubelet's output)."""
    seconds, fraction = divmod(nanoseconds, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{fraction:09d}Z"


def parse_time(text: str) -> int:
    """Nanoseconds since the epoch of an RFC 3339 time (any number of decimals, Z or a
    numeric offset); ValueError for anything else."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise ValueError(f"not an RFC 3339 time: {text!r}")
    whole, fraction, offset = match.groups()
    moment = datetime.fromisoformat(whole + ("+00:00" if offset in ("Z", "z") else offset))
    return int(moment.timestamp()) * 1_000_000_000 + int((fraction or "").ljust(9, "0")[:9])


class OutputRecorder:
    """Copies a container's stdout and stderr (the read ends of two pipes, taken over) into
    its log file until both are closed -- when every process of the container has ended;
    `done` says it has, `wait` waits for it."""

    def __init__(self, path: Path, stdout: int, stderr: int) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._finished = threading.Event()
        self._thread = threading.Thread(
            target=self._copy, args=(stdout, stderr), name=f"log {path}", daemon=True
        )
        self._thread.start()

    @property
    def done(self) -> bool:
        return self._finished.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._finished.wait(timeout)

    def _copy(self, stdout: int, stderr: int) -> None:
        pending = {stdout: b"", stderr: b""}
        names = {stdout: b"stdout", stderr: b"stderr"}
        try:
            with selectors.DefaultSelector() as selector, self.path.open("ab") as log:
                for descriptor in pending:
                    selector.register(descriptor, selectors.EVENT_READ)
                while selector.get_map():
                    for key, _ in selector.select():
                        descriptor = key.fd
                        chunk = os.read(descriptor, _READ_SIZE)
                        if not chunk:
                            selector.unregister(descriptor)
                        records, pending[descriptor] = cut_records(pending[descriptor], chunk)
                        stamp = format_time(time.time_ns()).encode()
                        for tag, content in records:
                            log.write(b"%s %s %s %s\n" % (stamp, names[descriptor], tag, content))
                        log.flush()
        finally:
            for descriptor in pending:
                os.close(descriptor)
            self._finished.set()


def cut_records(pending: bytes, chunk: bytes) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The records `chunk` completes after `pending` (an empty chunk: the stream ended, and
    what is left is a partial record), and what stays pending."""
    data = pending + chunk
    *lines, rest = data.split(b"\n")
    records = [(FULL, line) for line in lines]
    while len(rest) > _MAX_LINE:
        records.append((PARTIAL, rest[:_MAX_LINE]))
        rest = rest[_MAX_LINE:]
    if not chunk and rest:
        records.append((PARTIAL, rest))
        rest = b""
    return records, rest


@dataclass(frozen=True)
class LogRecord:
    """One line of a log file."""

    time: int  # nanoseconds since the epoch
    stream: str
    partial: bool
    content: bytes

    @classmethod
    def parse(cls, line: bytes) -> LogRecord:
        """A record from one line of the file (without its newline); ValueError if it is
        not in the CRI format."""
        fields = line.split(b" ", 3)
        if (
            len(fields) != 4
            or fields[1].decode() not in STREAMS
            or fields[2] not in (FULL, PARTIAL)
        ):
            raise ValueError(f"not a CRI log line: {line[:80]!r}")
        stamp, stream, tag, content = fields
        return cls(parse_time(stamp.decode()), stream.decode(), tag == PARTIAL, content)

    @property
    def text(self) -> bytes:
        """Its content as the container wrote it: a full line gets its newline back."""
        return self.content if self.partial else self.content + b"\n"


def records(path: Path) -> list[LogRecord]:
    """Every record of a log file, oldest first."""
    return [LogRecord.parse(line) for line in path.read_bytes().splitlines()]


def log_text(path: Path) -> str:
    """What the container wrote to stdout and stderr, as `kubectl logs` shows it (an empty
    string while the file does not exist yet)."""
    if not path.exists():
        return ""
    return b"".join(record.text for record in records(path)).decode(errors="replace")


@dataclass(frozen=True)
class LogOptions:
    """What of a log to send (the kubelet's logs.go LogOptions): `tail` records at most,
    those not before `since` (nanoseconds), at most `limit_bytes`, the chosen `streams`."""

    tail: int | None = None
    since: int | None = None
    timestamps: bool = False
    limit_bytes: int | None = None
    follow: bool = False
    streams: frozenset[str] = frozenset(STREAMS)


class LogReader:
    """A log file read as ReadLogs reads it, in steps: `read()` gives what the file holds
    now (after the tail, since and stream filters), and what it gained since the last
    call; `exhausted` once limit_bytes is reached."""

    def __init__(self, path: Path, options: LogOptions) -> None:
        self._path = path
        self._options = options
        self._offset = 0
        self._sent = 0
        self._line_start = True  # the next record begins a line: it gets the time prefix
        self._first = True

    @property
    def exhausted(self) -> bool:
        return self._options.limit_bytes is not None and self._sent >= self._options.limit_bytes

    def read(self) -> bytes:
        try:
            with self._path.open("rb") as log:
                log.seek(self._offset)
                data = log.read()
        except FileNotFoundError:  # not written yet, or its pod's directory removed
            return b""
        complete = data.rfind(b"\n") + 1  # a record being written is left for the next read
        self._offset += complete
        lines = data[:complete].splitlines()
        if self._first and self._options.tail is not None:
            # FindTailLineStartIndex: the last `tail` lines of the file, whatever their
            # stream (tail 0: none)
            lines = lines[len(lines) - min(self._options.tail, len(lines)) :]
        self._first = False
        return self._limited(b"".join(self._rendered(lines)))

    def _rendered(self, lines: list[bytes]) -> Iterator[bytes]:
        options = self._options
        for line in lines:
            record = LogRecord.parse(line)
            if options.since is not None and record.time < options.since:
                continue
            if record.stream not in options.streams:
                continue
            prefix = b""
            if options.timestamps and self._line_start:
                prefix = format_time(record.time).encode() + b" "
            self._line_start = not record.partial
            yield prefix + record.text

    def _limited(self, output: bytes) -> bytes:
        if self._options.limit_bytes is None:
            return output
        output = output[: max(0, self._options.limit_bytes - self._sent)]
        self._sent += len(output)
        return output
