"""What upstream's own e2e tests and the umbrella issue's items check, against the scenarios
here that cover each: the one list behind docs/coverage.md.

Upstream's tests are those run_e2e.sh runs (test/e2e/ at 939abb5): the Go tests of
e2e_test.go and the Python tests beside it. `python -m acceptance.run.coverage` prints the
table; tests/suite/test_coverage.py keeps the document equal to it and every scenario it
names in existence.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Scenario:
    """A scenario by its feature file (under features/) and its title (an outline's title
    with its <placeholders>)."""

    feature: str
    title: str

    def __str__(self) -> str:
        return f"{self.title} (`{self.feature}`)"


@dataclass(frozen=True)
class Check:
    """One upstream e2e test or umbrella-issue item: its name and where it is written,
    what it asserts, the scenarios here that cover it, and what each side checks that the
    other does not."""

    name: str
    where: str
    asserts: str
    scenarios: tuple[Scenario, ...]
    only_upstream: str
    only_here: str


def _s(feature: str, title: str) -> Scenario:
    return Scenario(f"{feature}.feature", title)


FIRST_CALL = _s(
    "agent_invocation",
    "The first call opens a session and the next call in it reaches the same sandbox",
)
ECHO_UNCHANGED = _s("agent_invocation", "The agent is given <a text> and echoes it back unchanged")
MISSING_RUNTIME = _s("refused_calls", "A call to <a runtime> that does not exist is refused")
NEVER_ISSUED = _s(
    "refused_calls", "A call to the <runtime> with a session id it never issued is refused"
)
KEPT_ALIVE = _s("session_expiry", "Calls keep a session alive past its idle timeout")
IDLE_ENDS = _s("session_expiry", "A session left idle past its timeout ends")
FIRST_COMMAND = _s("code_execution", "The first command runs in a new session of the <interpreter>")
EXIT_CODES = _s(
    "code_execution", "A command that exits with code <code> is answered with that code"
)
STATELESS = _s("code_execution", "A variable defined by one command is undefined in the next")
STATEFUL = _s(
    "code_execution",
    "In a stateful interpreter, a variable defined by one run of code is still defined in the next",
)
KERNEL_DIES = _s(
    "code_execution",
    "When a stateful interpreter's kernel dies, its session ends as if its sandbox had crashed",
)
FILE_CARRIES_OVER = _s("code_execution", "A file written by one command can be read by the next")
FIBONACCI = _s("workspace_files", "An uploaded script writes a result that can be downloaded")
ABSOLUTE_ROUND_TRIP = _s(
    "workspace_jail",
    "A file uploaded to an absolute path is kept in the workspace and comes back unchanged",
)
ABSOLUTE_INSIDE = _s(
    "workspace_jail", 'An absolute path stays inside the workspace: <operation> "<path>"'
)
LARGE_FILE_BACK = _s("workspace_files", "A file of several megabytes comes back byte for byte")
LARGE_FILE_LISTED = _s("workspace_files", "The workspace listing shows a large file's full size")
NOT_IN_NAMESPACE = _s("namespaces", "A runtime is not found under a namespace it is not in")
OTHER_NAMESPACE_SESSION = _s(
    "namespaces",
    "A session presented under another namespace is never served by that namespace's runtime",
)
POOL_SERVES = _s(
    "warm_pools",
    "The first call is served by a sandbox that was waiting in the pool, which refills",
)
POOL_CLOSE = _s(
    "warm_pools",
    "Closing a session that came from the pool ends its sandbox, and the pool is full again",
)
NO_POOL = _s(
    "warm_pools",
    "Without a pool, the first call starts a sandbox for the session and works the same",
)
POOL_FASTER = _s("warm_pools", "A warm pool does not make a first call slower")
LOAD = _s("sustained_load", "Sessions of the <interpreter> opened at a steady rate are served")
UNAUTHORIZED = _s("credentials", "A call <credentials> is refused as unauthorized")
OWNER = _s("credentials", "A session belongs to the subject that opened it")
ADMIN = _s("credentials", "A subject with the admin role may use a session another subject opened")
LONG_COMMAND = _s(
    "long_tasks", "A command that runs longer than an ordinary call completes with its full output"
)
COMMAND_TIMEOUT = _s(
    "long_tasks",
    "A command that outlives its timeout is stopped, and the session runs the next one",
)
LONG_TASK = _s("long_tasks", "A task longer than the idle timeout keeps its session alive")

GO = "test/e2e/e2e_test.go"
PY = "test/e2e/"
MCP_NOT_HERE = (
    "The MCP code-interpreter server is a client of AgentCube, not part of the Router, "
    "WorkloadManager and PicoD contract this suite checks; the calls it makes are covered "
    "by the code-interpreter scenarios."
)

UPSTREAM_TESTS: tuple[Check, ...] = (
    Check(
        "TestAgentRuntimeBasicInvocation",
        f"{GO}:622-666",
        "echo-agent answers `echo: <input>` for `Hello, World!`, an empty input and "
        "`@#$%^&*()`, each in a new session opened by the call",
        (FIRST_CALL, ECHO_UNCHANGED),
        "Its empty-input case sends no `input` field at all (`omitempty`).",
        "The session id comes back and a second call in it reaches the same sandbox; an "
        "empty string is sent as such; quotes, backslashes, newlines and non-ASCII text "
        "come back unchanged, in the output and the metadata.",
    ),
    Check(
        "TestAgentRuntimeErrorHandling / non-existent runtime",
        f"{GO}:669-735",
        "a call to a missing AgentRuntime answers 404 with `not found` in the body",
        (MISSING_RUNTIME, NEVER_ISSUED, NOT_IN_NAMESPACE),
        "Nothing.",
        "The error names the runtime's resource and namespace/name, no session is opened, "
        "code interpreters too, and a session id never issued is refused as well; a runtime "
        "is not found under a namespace it is not in.",
    ),
    Check(
        "TestAgentRuntimeSessionTTL",
        f"{GO}:738-807",
        "a session of `echo-agent-short-ttl` answers after 10 s; 50 s later (60 s after it "
        "opened), a call in it is only logged, failed or not",
        (KEPT_ALIVE, IDLE_ENDS),
        "Nothing: its second half cannot fail.",
        "The expired session must be refused as not found (with SESSION_NOT_FOUND), not "
        "replaced by a new one, and its sandbox must be gone, within timeout + grace and "
        "not before; calls keep a session alive past its timeout.",
    ),
    Check(
        "TestCodeInterpreterWarmPool",
        f"{GO}:810-854",
        "a warm pool is ready; a session opened at the WorkloadManager runs `echo`; its "
        "SandboxClaim, Sandbox and Pod chain by owner references to an initial pool pod; the "
        "pool refills; deleting the session deletes claim, sandbox and pod; the pool is "
        "ready again",
        (POOL_SERVES, POOL_CLOSE),
        "The owner-reference chain SandboxClaim → Sandbox → Pod by UID; the session is "
        "opened at the WorkloadManager rather than by a first call.",
        "The refilled pool holds no sandbox a session used; a first call without a pool "
        "starts a new sandbox, and a first call with one is timed against it.",
    ),
    Check(
        "TestCodeInterpreterBasicInvocation",
        f"{GO}:857-898",
        "`echo Hello, World!` gives that stdout, empty stderr, exit code 0; `sh -c 'exit 1'` "
        "gives exit code 1",
        (FIRST_COMMAND, EXIT_CODES),
        "Nothing.",
        "Exit codes 3, 7 and 42 pass through unchanged, not only 1; with and without a warm "
        "pool; a new session id comes back.",
    ),
    Check(
        "TestCodeInterpreterFileOperations",
        f"{GO}:901-1007",
        "an uploaded text file reads back with `cat`; an uploaded script writes "
        "`fibonacci.json`, which downloads with 0 … 34; the listing holds the three files",
        (FIBONACCI, ABSOLUTE_ROUND_TRIP, LARGE_FILE_BACK, LARGE_FILE_LISTED),
        "A text file's content read back by a command.",
        "A file uploaded to an absolute path downloads byte for byte (newline and non-ASCII "
        "included) and nothing lands outside the workspace; a file of several MiB comes "
        "back with the same SHA-256 and is listed with its full size.",
    ),
    Check(
        "TestCodeInterpreterWarmPoolLoad",
        f"{GO}:1607-1646",
        "10 sessions a second for 10 s on the warm-pool interpreter, each opened at the "
        "WorkloadManager, runs `echo` and is deleted; at least 90% succeed; the pool is "
        "ready afterwards",
        (LOAD,),
        "The pool's readiness after the load.",
        "The required share is a setting (100% by default); latency percentiles and errors "
        "by kind are reported; sessions are opened by first calls through the Router.",
    ),
    Check(
        "TestCodeInterpreterBasicInvocationLoad",
        f"{GO}:1649-1665",
        "2 sessions a second for 10 s on the interpreter without a pool; at least 90% succeed",
        (LOAD,),
        "Nothing.",
        "100 sessions at 10 a second by default, both settings; as above.",
    ),
    Check(
        "TestOIDCAuthNoToken",
        f"{GO}:1707-1714",
        "a call without a token answers 401",
        (UNAUTHORIZED,),
        "It runs against Keycloak-issued OIDC tokens.",
        "The body (`missing authorization header`, code UNAUTHORIZED) and that no session "
        "is opened; a malformed header too.",
    ),
    Check(
        "TestOIDCAuthInvalidToken",
        f"{GO}:1716-1723",
        "a call with `invalid.garbage.token` answers 401",
        (UNAUTHORIZED,),
        "It runs against Keycloak-issued OIDC tokens.",
        "The body (`invalid or expired token`, code UNAUTHORIZED) and that no session is opened.",
    ),
    Check(
        "TestRLACOwnershipEnforcement",
        f"{GO}:1725-1746",
        "a session opened with one token answers 200 to the admin's token",
        (ADMIN, OWNER),
        "Nothing.",
        "The admin's call reaches the same sandbox; a second subject without the role is "
        "refused with 403 FORBIDDEN and the owner is still served.",
    ),
    Check(
        "test_codeinterpreter.py::test_case1_simple_code_execution_auto_session",
        f"{PY}test_codeinterpreter.py:69-101",
        "through the SDK, `print(1+1)` outputs something containing `2`",
        (FIRST_COMMAND,),
        "It goes through the Python SDK, which opens the session at the WorkloadManager.",
        "Exactly `2\\n`, exit code 0, empty stderr and a new session id.",
    ),
    Check(
        "test_codeinterpreter.py::test_case2_code_execution_in_session",
        f"{PY}test_codeinterpreter.py:104-136",
        "through the SDK, `print(x)` after `x = 10` in the same session fails with NameError",
        (STATELESS, STATEFUL),
        "It goes through the Python SDK.",
        "The answer stays in the session; the stateful behaviour the umbrella issue asks "
        "for runs too, against a stateful interpreter.",
    ),
    Check(
        "test_codeinterpreter.py::test_case3_file_based_workflow_fibonacci_json",
        f"{PY}test_codeinterpreter.py:139-230",
        "through the SDK, a Fibonacci script is written and run; `output.json` downloads "
        "with the 10 numbers",
        (FIBONACCI,),
        "It goes through the Python SDK (and runs the script's text as code).",
        "The listing names both files; the uploaded file itself is run.",
    ),
    Check(
        "test_oidc_auth.py::test_service_account_auth_agent_runtime",
        f"{PY}test_oidc_auth.py:32-62",
        "the SDK's ServiceAccountAuth gets a Keycloak token and invokes echo-agent with it",
        (),
        "The SDK's client-credentials flow against Keycloak.",
        "On a cluster the suite can fetch its own token from the OIDC token URL "
        "(docs/kubernetes.md); every `@requires.auth` scenario then runs with it.",
    ),
    Check(
        "test_langchain_agentcube_sandbox.py::test_sandbox_execute_echo",
        f"{PY}test_langchain_agentcube_sandbox.py:66-80",
        "the LangChain sandbox backend runs `echo lc-sandbox-ok`: exit code 0, output contains it",
        (FIRST_COMMAND,),
        "The LangChain adapter.",
        "Exact stdout, empty stderr and the session id.",
    ),
    Check(
        "test_langchain_agentcube_sandbox.py::test_sandbox_execute_nonzero_exit",
        f"{PY}test_langchain_agentcube_sandbox.py:83-96",
        "`sh -c 'exit 7'` gives exit code 7, returned rather than raised",
        (EXIT_CODES,),
        "That the adapter returns rather than raises.",
        "Codes 1, 3 and 42 as well.",
    ),
    Check(
        "test_langchain_agentcube_sandbox.py::test_sandbox_upload_download_roundtrip",
        f"{PY}test_langchain_agentcube_sandbox.py:99-119",
        "bytes uploaded come back unchanged from a download",
        (ABSOLUTE_ROUND_TRIP, FIBONACCI, LARGE_FILE_BACK),
        "The LangChain adapter.",
        "Newline and non-ASCII bytes; nothing outside the workspace changes; several MiB, "
        "across many 64 KiB buffers.",
    ),
    Check(
        "test_langchain_agentcube_sandbox.py::test_sandbox_absolute_path_normalized",
        f"{PY}test_langchain_agentcube_sandbox.py:122-140",
        "a file uploaded to `/lc_abs_<pid>.txt` downloads unchanged from the same path",
        (ABSOLUTE_ROUND_TRIP, ABSOLUTE_INSIDE),
        "The adapter strips the leading slash itself; here PicoD receives the absolute path.",
        "Nothing is written, listed or revealed outside the workspace, for uploads, "
        "downloads, listings and working directories.",
    ),
    *(
        Check(
            f"{file}::{test}",
            f"{PY}{file}:{lines}",
            asserts,
            (),
            "The MCP server (its tools, its protocol, its stdio and in-cluster transports).",
            MCP_NOT_HERE,
        )
        for file, test, lines, asserts in (
            (
                "test_mcp_code_interpreter.py",
                "test_mcp_protocol_initialize_ping_list_tools",
                "179-220",
                "MCP initialize, ping and tools/list with each tool's input schema",
            ),
            (
                "test_mcp_code_interpreter.py",
                "test_mcp_execute_command",
                "222-239",
                "the MCP tool runs a command and returns its output",
            ),
            (
                "test_mcp_code_interpreter.py",
                "test_mcp_stateless_execution_nameerror",
                "241-278",
                "through MCP, a variable is undefined in the next run (a tool error)",
            ),
            (
                "test_mcp_code_interpreter.py",
                "test_mcp_write_list_run_code_file_workflow",
                "280-333",
                "through MCP, a file is written, listed, run, and the session stopped",
            ),
            (
                "test_mcp_code_interpreter.py",
                "test_mcp_upload_download_roundtrip",
                "335-393",
                "through MCP, bytes uploaded download unchanged",
            ),
            (
                "test_mcp_code_interpreter_k8s.py",
                "test_in_cluster_mcp_http_roundtrip",
                "44-93",
                "the in-cluster MCP server lists run_code and stop_session and runs code",
            ),
            (
                "test_mcp_code_interpreter_stdio.py",
                "test_stdio_initialize_list_tools_run_code",
                "44-105",
                "the stdio MCP server initializes, lists its tools and runs code",
            ),
        )
    ),
)

UMBRELLA = "../shared/e2e-umbrella-issue.txt"
UMBRELLA_ITEMS: tuple[Check, ...] = (
    Check(
        "A1 Basic agent invocation: session creation and reuse",
        UMBRELLA,
        "200, an echo, a session id; a second call with it is 200 in the same session",
        (FIRST_CALL,),
        "Nothing.",
        "The same sandbox served both calls, one after the other.",
    ),
    Check(
        "A2 Missing/invalid AgentRuntime",
        UMBRELLA,
        "404 with a clear error for a missing runtime",
        (MISSING_RUNTIME, NEVER_ISSUED, NOT_IN_NAMESPACE, OTHER_NAMESPACE_SESSION),
        "Nothing.",
        "The error names the runtime; code interpreters and unknown sessions too; a runtime "
        "is not found under another namespace, and a session presented there is never "
        "served by that namespace's runtime.",
    ),
    Check(
        "A3 Idle session / TTL behavior",
        UMBRELLA,
        "after the idle TTL and clean-up, the session id is refused as not found",
        (KEPT_ALIVE, IDLE_ENDS),
        "Nothing.",
        "Not before its timeout; its sandbox is gone; calls keep it alive.",
    ),
    Check(
        "B1 Simple code execution with session auto-creation",
        UMBRELLA,
        "`print(1+1)` answers 200, stdout `2\\n` and a session id",
        (FIRST_COMMAND,),
        "Nothing.",
        "Exit code 0 and empty stderr, with and without a warm pool.",
    ),
    Check(
        "B2 Stateful interpreter session (multi-step)",
        UMBRELLA,
        "`print(x)` after `x = 10` prints 10 (or, stated, fails if stateless)",
        (STATELESS, STATEFUL, KERNEL_DIES, FILE_CARRIES_OVER),
        "Nothing.",
        "Both behaviours run by default (the stateful one against localcube's Jupyter-kernel "
        "interpreter); a dead kernel ends its session as a crash does; files carry over.",
    ),
    Check(
        "B3 File-based workflow via CodeInterpreter (Fibonacci JSON)",
        UMBRELLA,
        "upload `fibonacci.py`, run it, download `output.json` and check it",
        (FIBONACCI,),
        "Nothing.",
        "The listing holds both files.",
    ),
    Check(
        "Corner case 1: longer delay task execution",
        UMBRELLA,
        "a task that runs long completes",
        (LONG_COMMAND, COMMAND_TIMEOUT, LONG_TASK),
        "Nothing.",
        "Every line comes back; a command past its timeout stops with 124; a long call "
        "counts as activity.",
    ),
    Check(
        "Corner case 2: warmer pool / non warmpool",
        UMBRELLA,
        "code interpreters with and without a warm pool",
        (POOL_SERVES, POOL_CLOSE, NO_POOL, POOL_FASTER, FIRST_COMMAND),
        "Nothing.",
        "Which sandbox serves a first call, the refill, the end of a pooled sandbox, and "
        "the first-call latency with and without a pool.",
    ),
)

CHECKS = UPSTREAM_TESTS + UMBRELLA_ITEMS


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def coverage_document() -> str:
    """docs/coverage.md, generated from CHECKS."""
    header = [
        "# What upstream's e2e tests check, and where this suite checks it",
        "",
        "Generated by `python -m acceptance.run.coverage > docs/coverage.md` from "
        "`acceptance/run/coverage.py`; tests/suite/test_coverage.py keeps it so. Upstream's "
        "files are in `volcano-sh/agentcube` at 939abb5; the umbrella issue is "
        "`../shared/e2e-umbrella-issue.txt`.",
        "",
        "Upstream's load tests have their counterpart in `features/sustained_load.feature`, "
        "which the default run leaves out: run it with `.venv/bin/python -m behave "
        "--tags=@load` (settings `load_sessions`, `load_rate`, `load_required_share`).",
        "",
    ]
    columns = [
        "| upstream | where | asserts | covered here by | only upstream checks | "
        "only this suite checks |",
        "|---|---|---|---|---|---|",
    ]

    def rows(checks: tuple[Check, ...]) -> list[str]:
        return [
            "| "
            + " | ".join(
                _cell(cell)
                for cell in (
                    check.name,
                    f"`{check.where}`",
                    check.asserts,
                    "; ".join(map(str, check.scenarios)) or "not covered",
                    check.only_upstream,
                    check.only_here,
                )
            )
            + " |"
            for check in checks
        ]

    return "\n".join(
        [
            *header,
            *("## Upstream's e2e tests (run_e2e.sh)", "", *columns, *rows(UPSTREAM_TESTS), ""),
            *("## The umbrella issue's items", "", *columns, *rows(UMBRELLA_ITEMS)),
        ]
    )


if __name__ == "__main__":
    sys.stdout.write(coverage_document() + "\n")
