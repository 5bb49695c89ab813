"""docs/own-router.md's sequence, run as the page gives it on a fresh clone (tests/
fresh_clone.py: its .venv out of date, which step 2 must bring up to date before the
namespace, that has no network), wherever it needs no upstream code.

Two steps need upstream's programs, which CI does not have; each is replaced here, in plain
sight: step 1 (building the Router and PicoD) sets `ROUTER` to tests/localcube/
router_stand_in.py, which makes the Router's start-up calls, listens as it does and passes
a code interpreter's call on as the Router would, and `PICOD` to localcube's own daemon;
step 7 (the suite against the Router) becomes a look at what every part answers, one call
through the stand-in included, from inside the namespace. Every other line runs as written: the
private network namespace (its `unshare` line fed the rest as a paste would), the free
ports, redis-server, localcube with `--router-identity` and `--picod-command`, the Router's
mount namespace with the in-cluster files, and the teardown by pid, after which no process
of the run may be left.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acceptance.core.settings import TOKEN_FILE_SETTINGS
from tests.fresh_clone import (
    ENTER_WITHOUT_NETWORK,
    entering,
    fresh_clone,
    namespaces_missing,
    shell_steps,
)
from tests.localcube.redis_process import MISSING

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "own-router.md"
FIDELITY = ROOT / "docs" / "fidelity.md"
BUILD, NAMESPACE, SUITE, TEARDOWN = 1, 2, 7, 8

# Stand-ins for upstream's programs (step 1), with the paths baked in: the sandboxes'
# environment holds no WORK.
STAND_IN_ROUTER = """\
#!/bin/sh
PYTHONPATH={root} exec {python} -m tests.localcube.router_stand_in "$@" --report {work}/router.json
"""
STAND_IN_PICOD = """\
#!/bin/sh
echo $$ >> {work}/picod-pids
printf '%s' "$PICOD_AUTH_PUBLIC_KEY" > {work}/picod-key
PYTHONPATH={root} exec {python} -m localcube.picod "$@"
"""
# In place of step 7: what every part answers, seen from inside the namespace.
LOOK = """\
wait_for "$WORK/picod-pids" "[0-9]"
ip -o link > "$WORK/links"
"$PYTHON" - > "$WORK/look.json" <<'LOOK'
import json, os, urllib.request
def get(url, body=None):
    data = None if body is None else json.dumps(body).encode()
    with urllib.request.urlopen(url, data, timeout=60) as answer:
        return answer.status, json.loads(answer.read())
local = f"http://127.0.0.1:{os.environ['LOCALCUBE_PORT']}"
router = f"http://127.0.0.1:{os.environ['ROUTER_PORT']}"
print(json.dumps({
    "localcube_health": get(f"{local}/health")[0],
    "sandboxes": len(get(f"{local}/localcube/v1/sandboxes")[1]["sandboxes"]),
    "router_live": get(f"{router}/health/live"),
    "through_router": get(
        f"{router}/v1/namespaces/default/code-interpreters/python-interpreter/invocations"
        "/api/execute",
        {"command": ["echo", "through the Router"]},
    ),
}))
LOOK
"""


def the_sequence() -> dict[int, str]:
    """The page's shell block under "The whole path", step by step."""
    steps = shell_steps(DOC, "The whole path")
    assert sorted(steps) == list(range(1, 9)), f"the page's steps are {sorted(steps)}, not 1-8"
    return steps


def script(work: Path) -> str:
    """The page's sequence with steps 1 and 7 replaced, as bash runs it."""
    steps = the_sequence()
    inside = [
        *(steps[number] for number in range(NAMESPACE + 1, SUITE)),
        "# 7. (replaced: the suite needs upstream's Router)\n" + LOOK,
        steps[TEARDOWN],
    ]
    return "\n".join(
        [
            "set -eu",
            f"export WORK={work} ROUTER={work}/stand-in-router PICOD={work}/stand-in-picod",
            f"export PYTHON={sys.executable}",
            entering(steps[NAMESPACE], inside),
        ]
    )


def write_stand_ins(work: Path, clone: Path) -> None:
    values = {"root": clone, "python": sys.executable, "work": work}
    for name, text in (("stand-in-router", STAND_IN_ROUTER), ("stand-in-picod", STAND_IN_PICOD)):
        path = work / name
        path.write_text(text.format(**values))
        path.chmod(0o755)


def ended(pid: int) -> bool:
    """Gone, or a zombie: nothing of it runs any more."""
    try:
        return "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True


def still_running(pids: list[int], within: float = 10.0) -> list[int]:
    """The pids that have not ended after waiting up to `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        left = [pid for pid in pids if not ended(pid)]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.1)


def pids_in(path: Path) -> list[int]:
    return [int(word) for word in path.read_text().split()] if path.exists() else []


def logs(work: Path) -> str:
    names = ("redis.log", "issuer.out", "localcube.out", "localcube.log", "router.log")
    return "\n".join(
        f"--- {name}:\n{(work / name).read_text(errors='replace')[-1500:]}"
        for name in names
        if (work / name).exists()
    )


def test_the_page_sets_what_issue_20_found_the_real_router_needs() -> None:
    steps = the_sequence()
    assert '--max-concurrent-requests "$LIMIT"' in steps[6], "the Router's limit"
    for flag in (
        '--jwt-issuer-url "http://127.0.0.1:$ISSUER_PORT"',
        "--jwt-role-claim",
        "--jwt-required-role",
    ):
        assert flag in steps[6], f"the Router's external authentication: {flag}"
    assert '--token-dir "$WORK/tokens"' in steps[4], "the issuer writes the suite's tokens"
    assert '-D token_dir="$WORK/tokens"' in steps[SUITE], "the suite reads them from files"
    assert "TOKEN=" not in steps[SUITE], "no token on the suite's line"
    for setting in ("-D platform=localcube", '-D max_concurrent_requests="$LIMIT"'):
        assert setting in steps[SUITE], f"expected the suite given {setting}"
    assert "agentcube_release" not in steps[SUITE], "the release is detected, not set"
    assert '--picod-command "$PICOD' in steps[5], "your own PicoD in every interpreter"
    assert 'kill $(cat "$WORK/pids")' in steps[TEARDOWN], "the teardown stops each pid"
    before_namespace = steps[NAMESPACE].split(ENTER_WITHOUT_NETWORK, 1)[0]
    assert "\n./dev prepare\n" in before_namespace, "the .venv is made while there is network"
    assert "fidelity.md#upstream-defects-the-suite-reports" in DOC.read_text()
    assert "\n## Upstream defects the suite reports\n" in FIDELITY.read_text()


@pytest.mark.slow
def test_the_sequence_starts_every_part_and_the_teardown_leaves_no_process(
    tmp_path: Path,
) -> None:
    if shutil.which("redis-server") is None:
        pytest.skip(MISSING)
    missing = namespaces_missing()
    if missing:
        pytest.skip(missing)
    work = tmp_path / "work"
    work.mkdir()
    clone = fresh_clone(tmp_path / "clone")
    write_stand_ins(work, clone)
    try:
        run = subprocess.run(
            ["bash", "-c", script(work)], cwd=clone, capture_output=True, text=True, timeout=240
        )
        assert run.returncode == 0, f"the sequence failed:\n{run.stderr[-3000:]}\n{logs(work)}"
        pids = pids_in(work / "pids")
        assert len(pids) == 4, (
            f"expected the pids of redis, the issuer, localcube and the Router: {pids}"
        )
        left = still_running(pids + pids_in(work / "picod-pids"))
        assert not left, f"the teardown left processes running: {left}"
    finally:  # what a failed run left behind, not the run's own teardown
        for pid in still_running(pids_in(work / "pids") + pids_in(work / "picod-pids"), 0):
            os.kill(pid, signal.SIGKILL)

    links = (work / "links").read_text().splitlines()
    assert [line.split(":")[1].strip() for line in links] == ["lo"], f"not private: {links}"
    look = json.loads((work / "look.json").read_text())
    assert look["localcube_health"] == 200 and look["sandboxes"] > 0, look
    assert look["router_live"] == [200, {"status": "alive"}], look
    router = json.loads((work / "router.json").read_text())
    assert router["identity_key_pkcs1"] and router["redis"] == "PONG", router
    assert router["max_concurrent_requests"] == 8, router
    # The Router read the issuer as go-oidc does at start, by the very URL the issuer names.
    assert router["oidc_issuer"].startswith("http://127.0.0.1:"), router
    assert router["jwt"] == ["realm_access.roles", "sandbox:invoke"], router
    tokens = work / "tokens"
    assert tokens.stat().st_mode & 0o777 == 0o700
    for name in TOKEN_FILE_SETTINGS:
        assert (tokens / name).stat().st_mode & 0o777 == 0o600, name
    # A call through the Router: a session opened with the service-account token, then the
    # sandbox's PicoD accepting the JWT signed by the key the Router read back.
    status, executed = look["through_router"]
    assert (status, executed.get("stdout"), executed.get("exit_code")) == (
        200,
        "through the Router\n",
        0,
    ), f"expected the Router's call to run in a sandbox, got {status} {executed}"
    # Sandboxes trust the key the Router read back: both are localcube's.
    picod_key = (work / "picod-key").read_bytes().strip()
    assert router["identity_public_key_sha256"] == hashlib.sha256(picod_key).hexdigest()
