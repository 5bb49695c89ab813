"""A PicoD imported once, that localcube forks code-interpreter sandboxes from.

Starting the daemon costs about 200 ms of CPU, nearly all of it imports (aiohttp,
cryptography); a fork of a process that has them costs about a millisecond. The template
never serves and starts no thread (a fork copies only the calling thread), so each child
is a fresh daemon: a session of its own (setsid), its workspace as working directory, its
own environment, output and memory limit, exactly as a daemon started by exec.

    python -m localcube.picod.template        (localcube starts it; nobody else)

It reads one JSON request per line on stdin: {"id", "argv", "cwd", "env", "log",
"data_limit"}, and writes one JSON message per line on the stdout it was given:
{"id", "pid"} or {"id", "error"} for each request, {"id", "listening": true} from the
child once its port accepts connections, {"pid", "exited": returncode} when a child ends
(negative: killed by that signal, as subprocess reports it). It exits at the end of stdin,
when localcube stops or dies; its children live on, as sandboxes outlive localcube.
"""

import contextlib
import json
import os
import resource
import signal
import sys
import traceback
from typing import Any

from localcube.picod import server


def _send(channel: int, message: dict[str, Any]) -> None:
    """One message in one write: shorter than PIPE_BUF, so never interleaved with another."""
    os.write(channel, json.dumps(message).encode() + b"\n")


def _report_exits(channel: int) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _send(channel, {"pid": pid, "exited": os.waitstatus_to_exitcode(status)})


def _close_other_descriptors(keep: int) -> None:
    for name in os.listdir("/proc/self/fd"):
        if int(name) > 2 and int(name) != keep:
            with contextlib.suppress(OSError):  # the descriptor listdir itself used
                os.close(int(name))


def _become_sandbox(request: dict[str, Any], channel: int) -> None:
    """In the forked child: the daemon of one sandbox. Never returns."""
    code = 1
    try:
        for signum in (signal.SIGCHLD, signal.SIGINT):
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        os.setsid()
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        _close_other_descriptors(keep=channel)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        if request.get("data_limit"):
            limit = request["data_limit"]
            # As localcube limits a started process: writable private memory (RLIMIT_DATA).
            with contextlib.suppress(OSError, ValueError):
                resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

        def listening() -> None:
            _send(channel, {"id": request["id"], "listening": True})
            os.close(channel)

        code = server.main(request["argv"], on_listening=listening)
    except SystemExit as stop:  # argparse's refusal: its code, as under exec
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:  # the child must never return into the template
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def main() -> int:
    channel = os.dup(1)
    os.dup2(2, 1)  # anything printed goes to the log, not into the messages
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # localcube stops it by closing stdin
    signal.signal(signal.SIGCHLD, lambda *_: _report_exits(channel))
    for line in sys.stdin.buffer:
        request = json.loads(line)
        sys.stderr.flush()
        # No exit report before the pid it is about: SIGCHLD waits until the pid is sent.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        try:
            pid = os.fork()
        except OSError as error:
            _send(channel, {"id": request["id"], "error": str(error)})
        else:
            if pid == 0:
                _become_sandbox(request, channel)
            _send(channel, {"id": request["id"], "pid": pid})
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
    return 0


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    # Nothing of its own to clean up (no file, no thread): the interpreter's teardown of
    # its imports would only make every localcube stop wait about 0.1 s longer.
    os._exit(code)
