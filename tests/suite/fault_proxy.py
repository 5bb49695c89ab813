"""A deliberately broken AgentCube: a real HTTP proxy in front of localcube that breaks one
promise of the contract, so the tests can prove the suite notices.

It runs its own event loop in a thread on a free loopback port. Each fault is a small class
that may rewrite the request on its way in, answer in the target's place, or rewrite the
answer on its way out; FAULTS names them all.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import hashlib
import json
import math
import os
import re
import socket
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import aiohttp
import jwt
from aiohttp import web
from yarl import URL

SESSION_HEADER = "x-agentcube-session-id"
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "host", "content-length"}
_INVOCATION = re.compile(
    r"^/v1/namespaces/(?P<namespace>[^/]+)/(?P<plural>agent-runtimes|code-interpreters)"
    r"/(?P<name>[^/]+)"
    r"/invocations(?P<tail>/.*)?$"
)
_SESSION_CREATION = re.compile(r"^/v1/(agent-runtime|code-interpreter)$")
_SESSION_DELETION = re.compile(r"^/v1/(agent-runtime|code-interpreter)/sessions/[^/]+$")
_DELETE_KIND = {"agent-runtimes": "agent-runtime", "code-interpreters": "code-interpreter"}


@dataclass
class Request:
    """The caller's request, as it will be forwarded unless a fault answers it."""

    method: str
    raw_path: str  # percent-encoded, with the query
    headers: dict[str, str]
    body: bytes
    started: float = field(default_factory=time.monotonic)

    @property
    def path(self) -> str:
        return unquote(urlsplit(self.raw_path).path)

    @property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(urlsplit(self.raw_path).query)

    @property
    def session_id(self) -> str | None:
        return self.headers.get(SESSION_HEADER)

    @property
    def invocation(self) -> re.Match[str] | None:
        return _INVOCATION.match(self.path)

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def gzipped(self) -> bool:
        return any(k.lower() == "content-encoding" and v == "gzip" for k, v in self.headers.items())

    def json(self) -> Any:
        """The body as JSON (gunzipped when PicoD compressed it), or None."""
        body = gzip.decompress(self.body) if self.gzipped else self.body
        try:
            return json.loads(body)
        except ValueError:
            return None

    def set_json(self, body: Any) -> None:
        self.body = json.dumps(body).encode()
        self.headers = _without(self.headers, "content-encoding")
        self.headers["Content-Type"] = "application/json"


def json_answer(status: int, body: Any) -> Answer:
    answer = Answer(status, {}, b"")
    answer.set_json(body)
    return answer


class Fault:
    """Forwards everything unchanged; a fault overrides the hooks it needs."""

    def rewrite_request(self, request: Request) -> None:
        """Change the request before it is forwarded."""

    async def answer_instead(self, proxy: FaultProxy, request: Request) -> Answer | None:
        """Answer in the target's place (None: forward the request)."""
        return None

    async def rewrite_answer(self, proxy: FaultProxy, request: Request, answer: Answer) -> None:
        """Change the target's answer before it is returned."""

    async def serve(self, proxy: FaultProxy, incoming: web.Request) -> web.StreamResponse | None:
        """Serve the call whole, streams and upgrades included (None: the proxy reads the
        target's answer whole, as every fault above does, and sends it at once: a proxy
        that buffers)."""
        return None


@dataclass
class HeaderAndStatus(Fault):
    """A header dropped on the way in or out, or statuses rewritten."""

    request_header_dropped: str | None = None
    response_header_dropped: str | None = None
    status_rewrites: dict[int, int] = field(default_factory=dict)

    def rewrite_request(self, request: Request) -> None:
        request.headers = _without(request.headers, self.request_header_dropped)

    async def rewrite_answer(self, proxy: FaultProxy, request: Request, answer: Answer) -> None:
        answer.headers = _without(answer.headers, self.response_header_dropped)
        answer.status = self.status_rewrites.get(answer.status, answer.status)


class CutLongCalls(Fault):
    """An ingress with a short read timeout: calls in a session longer than CUT_AFTER get
    504. Calls that open a session are spared, so a slow cold start on a loaded machine
    does not fail a scenario before it reaches its long call."""

    CUT_AFTER = 2.0

    async def answer_instead(self, proxy: FaultProxy, request: Request) -> Answer | None:
        if SESSION_HEADER not in request.headers:
            return await proxy.forward(request)
        try:
            return await asyncio.wait_for(proxy.forward(request), self.CUT_AFTER)
        except TimeoutError:
            return json_answer(504, {"error": "sandbox timeout"})


DROP = object()


@dataclass
class RewriteJsonFields(Fault):
    """Fields of JSON request bodies, at any depth, given other values or dropped (DROP):
    a target that ignores or misreads them."""

    fields: dict[str, Any]

    def rewrite_request(self, request: Request) -> None:
        body = request.json()
        if isinstance(body, dict):
            request.body = json.dumps(_rewrite(body, self.fields)).encode()


class EndSessionAfterSlowCall(Fault):
    """A platform that counts a call's start, not its end, as activity: a session whose call
    outlasted its idle timeout is ended as soon as the call returns."""

    SLOW = 1.0

    async def rewrite_answer(self, proxy: FaultProxy, request: Request, answer: Answer) -> None:
        invocation = request.invocation
        if invocation and request.session_id and time.monotonic() - request.started > self.SLOW:
            kind = _DELETE_KIND[invocation["plural"]]
            credentials = _only(request.headers, "authorization")
            path = f"/v1/{kind}/sessions/{request.session_id}"
            await proxy.upstream_request("DELETE", path, credentials)


class StripErrorCodes(Fault):
    """Error bodies without their stable "code" (SESSION_NOT_FOUND, UNAUTHORIZED, ...)."""

    async def rewrite_answer(self, proxy: FaultProxy, request: Request, answer: Answer) -> None:
        body = answer.json()
        if answer.status >= 400 and isinstance(body, dict) and "code" in body:
            answer.set_json({key: value for key, value in body.items() if key != "code"})


class MarkEvery404(Fault):
    """Every 404 made to look like the Router's SESSION_NOT_FOUND, the agent's own too."""

    async def rewrite_answer(self, proxy: FaultProxy, request: Request, answer: Answer) -> None:
        body = answer.json()
        if answer.status == 404 and isinstance(body, dict):
            answer.set_json({**body, "code": "SESSION_NOT_FOUND"})


class RouterBeforePr460(Fault):
    """A Router of a release before upstream PR #460 (every build at 939abb5): its 404 for an
    unknown or ended session carries no code (pkg/router/session_manager.go:144-147)."""

    async def rewrite_answer(self, proxy: FaultProxy, request: Request, answer: Answer) -> None:
        body = answer.json()
        if (
            answer.status == 404
            and isinstance(body, dict)
            and body.get("code") == "SESSION_NOT_FOUND"
        ):
            answer.set_json({key: value for key, value in body.items() if key != "code"})


class OpaqueErrors(Fault):
    """Refusals with an empty body: the caller learns nothing of what was wrong."""

    async def rewrite_answer(self, proxy: FaultProxy, request: Request, answer: Answer) -> None:
        if 400 <= answer.status < 500:
            answer.body = b""
            answer.headers = _without(answer.headers, "content-type")


class NoWorkspaceJail(Fault):
    """PicoD without its jail: file calls and working directories are joined to the
    workspace as given, so "..", absolute paths and symlinks lead wherever they point."""

    async def answer_instead(self, proxy: FaultProxy, request: Request) -> Answer | None:
        invocation = request.invocation
        sandbox = await proxy.sandbox_of(request.session_id) if invocation else None
        if invocation is None or sandbox is None:
            return None
        workspace, tail = sandbox["workspace"], invocation["tail"] or "/"
        if tail == "/api/execute":
            self._run_in_unjailed_directory(request, workspace)
            return None
        if tail == "/api/files" and request.method == "POST":
            body = request.json()
            target = os.path.join(workspace, body["path"])
            with open(target, "wb") as file:
                file.write(base64.b64decode(body["content"]))
            return json_answer(200, {"path": body["path"], "size": os.path.getsize(target)})
        if tail == "/api/files":
            directory = os.path.join(workspace, request.query.get("path", ["."])[0])
            if not os.path.isdir(directory):
                return json_answer(404, {"error": "Directory not found", "code": 404})
            return json_answer(200, {"files": [{"name": name} for name in os.listdir(directory)]})
        if tail.startswith("/api/files/"):
            target = os.path.join(workspace, tail.removeprefix("/api/files/"))
            if not os.path.isfile(target):
                return json_answer(404, {"error": "File not found", "code": 404})
            with open(target, "rb") as file:
                return Answer(200, {}, file.read())
        return None

    @staticmethod
    def _run_in_unjailed_directory(request: Request, workspace: str) -> None:
        body = request.json()
        if not isinstance(body, dict) or not body.get("working_dir"):
            return
        directory = os.path.join(workspace, body.pop("working_dir"))
        body["command"] = ["sh", "-c", 'cd "$0" && exec "$@"', directory, *body["command"]]
        request.body = json.dumps(body).encode()


class SharedSandbox(Fault):
    """Every call that names a session is served by one session of its runtime, the first
    named (or, once that one has ended, the next): sessions share a sandbox and workspace."""

    def __init__(self) -> None:
        self._shared: dict[str, str] = {}

    async def answer_instead(self, proxy: FaultProxy, request: Request) -> Answer | None:
        invocation, own = request.invocation, request.session_id
        if not invocation or not own:
            return None
        runtime = invocation["name"]
        request.headers[SESSION_HEADER] = self._shared.setdefault(runtime, own)
        answer = await proxy.forward(request)
        if answer.status == 404 and (answer.json() or {}).get("code") == "SESSION_NOT_FOUND":
            self._shared[runtime] = request.headers[SESSION_HEADER] = own
            answer = await proxy.forward(request)
        return answer


class IgnoreNamespace(Fault):
    """A Router that ignores the namespace a call names: every runtime is looked up in the
    one namespace that holds localcube's fixtures, so one team's agent serves another's."""

    SERVED = "default"

    def rewrite_request(self, request: Request) -> None:
        invocation = request.invocation
        if invocation:
            prefix = f"/v1/namespaces/{invocation['namespace']}/"
            served = f"/v1/namespaces/{self.SERVED}/"
            request.raw_path = served + request.raw_path.removeprefix(prefix)


class RouteSessionsByPath(Fault):
    """A Router that finds a session's sandbox by the call's path: a session presented
    under a namespace other than its own is dropped, and a new session of that namespace's
    runtime serves the call."""

    async def answer_instead(self, proxy: FaultProxy, request: Request) -> Answer | None:
        invocation = request.invocation
        sandbox = await proxy.sandbox_of(request.session_id) if invocation else None
        if invocation and sandbox and sandbox["namespace"] != invocation["namespace"]:
            request.headers = _without(request.headers, SESSION_HEADER)
        return None


# A runtime's kind: its invocation path's plural and the resource a Router's 404 names.
_RUNTIME_RESOURCES = {
    "AgentRuntime": ("agent-runtimes", "agentruntimes.agentcube.volcano.sh"),
    "CodeInterpreter": ("code-interpreters", "codeinterpreters.agentcube.volcano.sh"),
}


@dataclass
class StaleRuntimeCache(Fault):
    """A WorkloadManager whose watch of runtimes lags behind the API: a runtime applied
    through localcube's admin API is not found by the calls that would open its sessions for
    `lag` seconds, answered as upstream's Router answers a missing runtime
    (pkg/router/session_manager.go:206-208)."""

    lag: float
    applied: dict[tuple[str, str, str], float] = field(default_factory=dict)

    async def answer_instead(self, proxy: FaultProxy, request: Request) -> Answer | None:
        manifest = request.json()
        if request.method == "POST" and request.path == "/localcube/v1/runtimes":
            if isinstance(manifest, dict) and manifest.get("kind") in _RUNTIME_RESOURCES:
                plural = _RUNTIME_RESOURCES[manifest["kind"]][0]
                metadata = manifest.get("metadata") or {}
                key = (plural, metadata.get("namespace") or "default", metadata.get("name"))
                self.applied[key] = time.monotonic()
            return None
        invocation = request.invocation
        if invocation is None or request.session_id:
            return None
        key = (invocation["plural"], invocation["namespace"], invocation["name"])
        if time.monotonic() - self.applied.get(key, -math.inf) >= self.lag:
            return None
        resource = dict(_RUNTIME_RESOURCES.values())[key[0]]
        return json_answer(404, {"error": f'{resource} "{key[1]}/{key[2]}" not found'})


@dataclass
class LargeFileFault(Fault):
    """Files larger than one 64 KiB buffer broken on their way: uploads or downloads cut at
    the first buffer boundary, or a listing that reports at most one buffer's size."""

    BUFFER = 64 << 10

    cut_uploads: bool = False
    cut_downloads: bool = False
    cap_listed_sizes: bool = False

    def rewrite_request(self, request: Request) -> None:
        body = request.json()
        uploading = request.method == "POST" and _tail_of(request) == "/api/files"
        if self.cut_uploads and uploading and isinstance(body, dict) and "content" in body:
            content = base64.b64decode(body["content"])[: self.BUFFER]
            body["content"] = base64.b64encode(content).decode("ascii")
            request.body = json.dumps(body).encode()

    async def rewrite_answer(self, proxy: FaultProxy, request: Request, answer: Answer) -> None:
        tail = _tail_of(request) or ""
        if request.method != "GET" or answer.status != 200:
            return
        if self.cut_downloads and tail.startswith("/api/files/"):
            if answer.gzipped:
                answer.body = gzip.decompress(answer.body)
                answer.headers = _without(answer.headers, "content-encoding")
            answer.body = answer.body[: self.BUFFER]
        listing = answer.json()
        if self.cap_listed_sizes and tail == "/api/files" and isinstance(listing, dict):
            for entry in listing.get("files") or []:
                entry["size"] = min(entry["size"], self.BUFFER)
            answer.set_json(listing)


class RecycledSessionIds(Fault):
    """The first session id ever issued, handed out again and again: by the WorkloadManager
    and by the Router to calls that open a session."""

    def __init__(self) -> None:
        self._first: str | None = None

    async def rewrite_answer(self, proxy: FaultProxy, request: Request, answer: Answer) -> None:
        if answer.status != 200:
            return
        body = answer.json()
        if _SESSION_CREATION.match(request.path) and isinstance(body, dict):
            self._first = self._first or body["sessionId"]
            answer.set_json({**body, "sessionId": self._first})
        elif request.invocation and request.session_id is None:
            for name, value in list(answer.headers.items()):
                if name.lower() == SESSION_HEADER:
                    self._first = self._first or value
                    answer.headers[name] = self._first


class TokenInAnotherHeader(Fault):
    """An ingress that copies the caller's Authorization into another header, which the
    Router passes on to the sandbox with the rest."""

    async def answer_instead(self, proxy: FaultProxy, request: Request) -> Answer | None:
        for name, value in list(request.headers.items()):
            if name.lower() == "authorization":
                request.headers["X-Forwarded-Authorization"] = value
        return await proxy.forward(request)


class ForwardCallerToken(Fault):
    """A Router that passes the caller's Authorization header on to the agent's sandbox."""

    async def answer_instead(self, proxy: FaultProxy, request: Request) -> Answer | None:
        invocation = request.invocation
        if not invocation or invocation["plural"] != "agent-runtimes" or not request.session_id:
            return None
        sandbox = await proxy.sandbox_of(request.session_id)
        if sandbox is None:
            return None
        url = f"http://{sandbox['endpoint']}{invocation['tail'] or '/'}"
        answer = await proxy.send(request.method, URL(url), request.headers, request.body)
        answer.headers[SESSION_HEADER] = request.session_id
        return answer


class IgnoreCallerIdentity(Fault):
    """A gateway that presents the first credentials it saw for every later caller."""

    def __init__(self) -> None:
        self._first: str | None = None

    def rewrite_request(self, request: Request) -> None:
        presented = request.headers.get("Authorization")
        if presented and request.path.startswith("/v1/"):
            self._first = self._first or presented
            request.headers["Authorization"] = self._first


class AcceptRefusedTokens(Fault):
    """A Router that skips one check of its tokens: a token that fails that check is passed
    on as the valid token of the same subject (the first such the proxy saw; any valid one
    for a subject that has none), so the target serves it. What a token fails is read from
    it unverified, and its signature from the keys its issuer publishes."""

    LEEWAY = 30  # upstream's (pkg/router/oidc.go:31)

    def __init__(self, skipped: str) -> None:
        self._skipped = skipped
        self._valid: dict[str, str] = {}  # subject: a token that fails nothing
        self._issuer: str | None = None
        self._keys: dict[str, Any] = {}

    def rewrite_request(self, request: Request) -> None:
        presented = request.headers.get("Authorization", "")
        scheme, _, token = presented.partition(" ")
        if scheme != "Bearer" or not request.path.startswith("/v1/"):
            return
        try:
            header = jwt.get_unverified_header(token)
            claims = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            return
        failed = self._failed_check(token, header, claims)
        subject = claims.get("sub")
        if failed is None:
            self._valid.setdefault(subject, token)
        elif failed == self._skipped and self._valid:
            # A subject with no valid token (the one without the role) as any valid one.
            valid = self._valid.get(subject) or next(iter(self._valid.values()))
            request.headers["Authorization"] = f"Bearer {valid}"

    def _failed_check(self, token: str, header: dict, claims: dict) -> str | None:
        algorithm = header.get("alg", "")
        if algorithm == "none":
            return "unsigned"
        if algorithm.startswith("HS"):
            return "public-key-as-secret"
        if not self._verifies(token, claims.get("iss")):
            return "unpublished-key"
        if self._issuer is not None and claims.get("iss") != self._issuer:
            return "other-issuer"
        if claims.get("exp", 0) + self.LEEWAY < time.time():
            return "expired"
        audience = claims.get("aud")
        if "agentcube-api" not in (audience if isinstance(audience, list) else [audience]):
            return "other-audience"
        if "sandbox:invoke" not in claims.get("realm_access", {}).get("roles", []):
            return "no-role"
        self._issuer = self._issuer or claims.get("iss")
        return None

    def _verifies(self, token: str, issuer: object) -> bool:
        """Whether a key of the first issuer seen verifies the signature (another issuer's
        path on the same host publishes none)."""
        issuer = self._issuer or issuer
        if not isinstance(issuer, str):
            return False
        if issuer not in self._keys:
            with urllib.request.urlopen(issuer + "/.well-known/openid-configuration") as answer:
                jwks_uri = json.load(answer)["jwks_uri"]
            with urllib.request.urlopen(jwks_uri) as answer:
                self._keys[issuer] = jwt.PyJWKSet.from_dict(json.load(answer))
        for key in self._keys[issuer].keys:
            try:
                jwt.decode(
                    token,
                    key.key,
                    algorithms=["RS256"],
                    options={"verify_exp": False, "verify_aud": False, "verify_iss": False},
                )
            except jwt.PyJWTError:
                continue
            return True
        return False


class CredentialInRefusals(Fault):
    """A Router whose refusals quote the credential they refused."""

    async def rewrite_answer(self, proxy: FaultProxy, request: Request, answer: Answer) -> None:
        body = answer.json()
        presented = request.headers.get("Authorization", "")
        if answer.status in (401, 403) and isinstance(body, dict) and presented:
            answer.set_json({**body, "error": f"{body.get('error')} ({presented})"})


class HangOnSandboxFailure(Fault):
    """A Router that, when the sandbox is gone, keeps the caller waiting instead of failing."""

    HANG = 30.0

    async def rewrite_answer(self, proxy: FaultProxy, request: Request, answer: Answer) -> None:
        if answer.status in (502, 503):
            await asyncio.sleep(self.HANG)


class ClaimPolledOnceASecond(Fault):
    """Upstream's WorkloadManager on a fast node (pkg/workloadmanager/handlers.go:331-340):
    a first call on a "-warm" interpreter waits a second, as a claim polled once a second
    does, while the cold starts of the other interpreters take no time and a second in
    turn (a PicoD not yet listening at the first dial), so that a verdict that compares the
    two flips from run to run."""

    DELAY = 1.0

    def __init__(self) -> None:
        self._cold_starts = 0

    async def answer_instead(self, proxy: FaultProxy, request: Request) -> Answer | None:
        invocation = request.invocation
        if not invocation or request.session_id:
            return None
        if invocation["name"].endswith("-warm"):
            await asyncio.sleep(self.DELAY)
        else:
            self._cold_starts += 1
            await asyncio.sleep(self.DELAY * (self._cold_starts % 2))
        return None


class WaitForBackgroundProcesses(Fault):
    """Upstream PicoD's timeout (pkg/picod/execute.go:87-93, 127-139): it kills the
    command's direct child only, so a child that holds the output open delays the 124
    answer until it ends. Here every 124 answer waits until the command's own `sleep N`
    would have ended."""

    async def rewrite_answer(self, proxy: FaultProxy, request: Request, answer: Answer) -> None:
        body, sent = answer.json(), request.json()
        if not (isinstance(body, dict) and body.get("exit_code") == 124):
            return
        command = " ".join(sent.get("command", [])) if isinstance(sent, dict) else ""
        sleeping = re.search(r"sleep (\d+(?:\.\d+)?)", command)
        if sleeping:
            await asyncio.sleep(float(sleeping[1]) - (time.monotonic() - request.started))


@dataclass
class FakeDeletion(Fault):
    """The WorkloadManager answers a session deletion without deleting anything."""

    status: int
    body: dict[str, str]

    async def answer_instead(self, proxy: FaultProxy, request: Request) -> Answer | None:
        if request.method == "DELETE" and _SESSION_DELETION.match(request.path):
            return json_answer(self.status, self.body)
        return None


class NotReadyFor(Fault):
    """A Router still starting: /health/ready answers 503 for its first `seconds`."""

    def __init__(self, seconds: float) -> None:
        self._ready_at = time.monotonic() + seconds

    async def answer_instead(self, proxy: FaultProxy, request: Request) -> Answer | None:
        if request.path == "/health/ready" and time.monotonic() < self._ready_at:
            return json_answer(503, {"status": "not ready", "error": "starting"})
        return None


class HangUpWithoutToken(Fault):
    """A gateway that hangs up on every API call that presents no token, answering none."""

    async def serve(self, proxy: FaultProxy, incoming: web.Request) -> web.StreamResponse | None:
        if incoming.path.startswith("/v1/") and "Authorization" not in incoming.headers:
            assert incoming.transport is not None
            incoming.transport.close()
            return web.Response()  # never reaches the caller
        return None


class TokensCheckedForUnknownRuntimesOnly(Fault):
    """A gateway in front of a Router without authentication that refuses a call without a
    token only for a runtime the Router does not serve: the preflight's call, which names
    none, is refused; the echo agent is served to anyone."""

    async def answer_instead(self, proxy: FaultProxy, request: Request) -> Answer | None:
        invocation = request.invocation
        if not invocation or "Authorization" in request.headers:
            return None
        listing = (await proxy.upstream_request("GET", "/localcube/v1/runtimes")).json()
        if any(runtime["name"] == invocation["name"] for runtime in listing["runtimes"]):
            return None
        return json_answer(401, {"error": "missing authorization header"})


class LossyEcho(Fault):
    """A layer that loses what is not ASCII in the agent's answers (a wrong charset)."""

    async def rewrite_answer(self, proxy: FaultProxy, request: Request, answer: Answer) -> None:
        body = answer.json()
        if _tail_of(request) in ("/", "/echo") and isinstance(body, dict) and "output" in body:
            answer.set_json(_rewrite_strings(body, _ascii_only))


class RefuseEmptyInput(Fault):
    """A gateway that takes an empty input for a missing one, and refuses it."""

    async def answer_instead(self, proxy: FaultProxy, request: Request) -> Answer | None:
        invocation, body = request.invocation, request.json()
        to_agent = invocation is not None and invocation["plural"] == "agent-runtimes"
        if to_agent and isinstance(body, dict) and body.get("input") == "":
            return json_answer(400, {"error": "input is required"})
        return None


class RewriteCommandResults(Fault):
    """Commands' results rewritten: every failing exit code turned into 1, or a warning
    added to the error output of every command that succeeded."""

    def __init__(self, *, flatten_exit_codes: bool = False, warning: str = "") -> None:
        self._flatten = flatten_exit_codes
        self._warning = warning

    async def rewrite_answer(self, proxy: FaultProxy, request: Request, answer: Answer) -> None:
        body = answer.json()
        if _tail_of(request) != "/api/execute" or not isinstance(body, dict):
            return
        if self._flatten and body.get("exit_code") not in (0, None):
            answer.set_json({**body, "exit_code": 1})
        elif self._warning and body.get("exit_code") == 0:
            answer.set_json({**body, "stderr": body.get("stderr", "") + self._warning})


class NoAdminBypass(Fault):
    """A Router without the admin role: a session serves only the credentials that opened
    it, whoever presents others."""

    def __init__(self) -> None:
        self._owners: dict[str, str | None] = {}

    async def answer_instead(self, proxy: FaultProxy, request: Request) -> Answer | None:
        presented = request.headers.get("Authorization")
        session_id = request.session_id
        if not request.invocation:
            return None
        if session_id and self._owners.get(session_id, presented) != presented:
            return json_answer(403, {"error": "you do not own this sandbox", "code": "FORBIDDEN"})
        answer = await proxy.forward(request)
        opened = next((v for k, v in answer.headers.items() if k.lower() == SESSION_HEADER), None)
        if opened and not session_id:
            self._owners[opened] = presented
        return answer


class AbsolutePaths(Fault):
    """PicoD mishandling absolute paths: refusing them, or flattening an upload's absolute
    path to its last part while a download takes it as given."""

    def __init__(self, *, refuse: bool) -> None:
        self._refuse = refuse

    async def answer_instead(self, proxy: FaultProxy, request: Request) -> Answer | None:
        tail, body = _tail_of(request), request.json()
        if tail != "/api/files" or request.method != "POST" or not isinstance(body, dict):
            return None
        path = body.get("path", "")
        if not path.startswith("/"):
            return None
        if self._refuse:
            return json_answer(400, {"error": "access denied: absolute paths are not allowed"})
        request.body = json.dumps({**body, "path": os.path.basename(path)}).encode()
        return None


class FrozenWarmPool(Fault):
    """A warm pool that never refills: once a session has taken one of its sandboxes, the
    platform shows no sandbox that joins the pool afterwards."""

    def __init__(self) -> None:
        self._claimed = False
        self._known: set[str] = set()

    async def rewrite_answer(self, proxy: FaultProxy, request: Request, answer: Answer) -> None:
        invocation = request.invocation
        if invocation and not request.session_id and invocation["name"].endswith("-warm"):
            self._claimed = True
        body = answer.json()
        if request.path != "/localcube/v1/sandboxes" or not isinstance(body, dict):
            return
        warm = {box["sandboxId"] for box in body["sandboxes"] if box.get("state") == "warm"}
        if not self._claimed:
            self._known |= warm
            return
        shown = [box for box in body["sandboxes"] if box["sandboxId"] not in warm - self._known]
        answer.set_json({**body, "sandboxes": shown})


class ForgetfulKernel(Fault):
    """A stateful interpreter that forgets its variables before every run of code."""

    def rewrite_request(self, request: Request) -> None:
        body = request.json()
        if _tail_of(request) == "/api/run_code" and isinstance(body, dict):
            request.body = json.dumps({**body, "code": f"%reset -f\n{body['code']}"}).encode()


class SwallowedKernelDeath(Fault):
    """A stateful interpreter that answers a run whose kernel died as if it had run."""

    async def rewrite_answer(self, proxy: FaultProxy, request: Request, answer: Answer) -> None:
        if _tail_of(request) == "/api/run_code" and answer.status == 500:
            answer.status = 200
            empty = {"stdout": [], "stderr": []}
            answer.set_json({"results": [], "logs": empty, "error": None, "execution_count": 1})


class FailSomeSessions(Fault):
    """A platform that fails one call in `every` that opens a session, as a sandbox that
    never became reachable."""

    def __init__(self, every: int) -> None:
        self._every = every
        self._openings = 0

    async def answer_instead(self, proxy: FaultProxy, request: Request) -> Answer | None:
        if not request.invocation or request.session_id:
            return None
        self._openings += 1
        if self._openings % self._every == 0:
            return json_answer(503, {"error": "sandbox unreachable"})
        return None


class BufferWholeAnswers(Fault):
    """A Router or ingress that buffers (nginx's `proxy_buffering on`): each answer is read
    whole before any of it is sent, events and chunks included; no upgrade is passed."""


class PassStreams(Fault):
    """Answers passed on as they come and WebSocket upgrades passed through, as a Router
    must; each subclass breaks one of those. `cut_after`: every stream and conversation is
    cut off that long after it began; `upgrades`: whether a WebSocket upgrade is passed."""

    cut_after: float | None = None
    upgrades = True

    async def serve(self, proxy: FaultProxy, incoming: web.Request) -> web.StreamResponse | None:
        request = proxy.request_of(incoming, await incoming.read())
        self.rewrite_request(request)
        if self.upgrades and _asks_for_websocket(incoming):
            return await self._converse(proxy, incoming, request)
        request.headers = _without(request.headers, "upgrade")
        return await self._stream(proxy, incoming, request)

    async def exchange(self, request: Request, upstream: Any) -> Any:
        """The target's answer (a response, or a WebSocket) this caller is given."""
        return upstream

    async def _stream(
        self, proxy: FaultProxy, incoming: web.Request, request: Request
    ) -> web.StreamResponse:
        url = URL(proxy.upstream + request.raw_path, encoded=True)
        upstream = await proxy.client.request(
            request.method, url, headers=request.headers, data=request.body
        )
        upstream = await self.exchange(request, upstream)
        try:
            kept = {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_BY_HOP}
            response = web.StreamResponse(status=upstream.status, headers=kept)
            await response.prepare(incoming)
            try:
                async with asyncio.timeout(self.cut_after):
                    async for chunk in upstream.content.iter_any():
                        await response.write(chunk)
            except TimeoutError:  # cut off: the connection closes before the answer's end
                incoming.transport.abort()
                return response
            await response.write_eof()
            return response
        finally:
            upstream.release()

    async def _converse(
        self, proxy: FaultProxy, incoming: web.Request, request: Request
    ) -> web.StreamResponse:
        url = URL(proxy.upstream + request.raw_path, encoded=True)
        headers = {k: v for k, v in request.headers.items() if not _handshake_header(k)}
        try:
            sandbox = await proxy.client.ws_connect(url, headers=headers)
        except aiohttp.WSServerHandshakeError as refusal:
            return web.Response(status=refusal.status)
        sandbox = await self.exchange(request, sandbox)
        async with sandbox:
            caller = web.WebSocketResponse()
            # The target's 101 (aiohttp keeps its headers on the private `_response` alone).
            session = sandbox._response.headers.get(SESSION_HEADER)
            if session:
                caller.headers[SESSION_HEADER] = session
            await caller.prepare(incoming)
            pumps = [
                asyncio.create_task(_pump(caller, sandbox)),
                asyncio.create_task(_pump(sandbox, caller)),
            ]
            _, pending = await asyncio.wait(
                pumps, timeout=self.cut_after, return_when=asyncio.FIRST_COMPLETED
            )
            for pump in pumps:
                pump.cancel()
            if len(pending) == len(pumps):  # cut off in the middle of the conversation
                incoming.transport.abort()
                return caller
            await caller.close()
        return caller


class CutStreams(PassStreams):
    """An ingress with a short timeout on the whole of a call: every stream, and every
    WebSocket conversation, is cut off CUT_AFTER after it began."""

    cut_after = 0.3


class RefuseUpgrades(PassStreams):
    """A Router or ingress that drops `Upgrade`: a WebSocket call reaches the agent as a
    plain GET, whose refusal comes back."""

    upgrades = False


class SwitchWithoutUpgradeHeader(PassStreams):
    """localcube's Router before issue 28: it answered a WebSocket call 101 but dropped
    `Upgrade` from the answer (a hop-by-hop header), so no client takes the switch."""

    async def _converse(
        self, proxy: FaultProxy, incoming: web.Request, request: Request
    ) -> web.StreamResponse:
        key = incoming.headers.get("Sec-WebSocket-Key", "")
        accept = hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()
        answer = web.StreamResponse(
            status=101,
            headers={
                "Connection": "Upgrade",
                "Sec-WebSocket-Accept": base64.b64encode(accept).decode(),
            },
        )
        await answer.prepare(incoming)
        incoming.transport.close()
        return answer


class UpgradeTokenInAnotherHeader(PassStreams):
    """An ingress that copies the caller's Authorization into another header, which reaches
    the sandbox with the rest, WebSocket upgrades included."""

    def rewrite_request(self, request: Request) -> None:
        for name, value in list(request.headers.items()):
            if name.lower() == "authorization":
                request.headers["X-Forwarded-Authorization"] = value


class MixConcurrentAnswers(PassStreams):
    """A Router that mixes up concurrent calls: calls in sessions in flight at the same
    moment are paired, and each is given the other's answer (its stream, or its WebSocket)."""

    WINDOW = 0.5  # how long a call waits for a partner

    def __init__(self) -> None:
        self._waiting: list[tuple[Any, asyncio.Future[Any]]] = []

    async def exchange(self, request: Request, upstream: Any) -> Any:
        if not request.invocation or not request.session_id:
            return upstream
        if self._waiting:
            theirs, partner = self._waiting.pop(0)
            partner.set_result(upstream)
            return theirs
        mine = (upstream, asyncio.get_running_loop().create_future())
        self._waiting.append(mine)
        try:
            return await asyncio.wait_for(asyncio.shield(mine[1]), self.WINDOW)
        except TimeoutError:
            if mine in self._waiting:
                self._waiting.remove(mine)
                return upstream
            return mine[1].result()


FAULTS = {
    "drop-session-header": lambda: HeaderAndStatus(response_header_dropped=SESSION_HEADER),
    "ignore-session-id": lambda: HeaderAndStatus(request_header_dropped=SESSION_HEADER),
    "not-found-as-ok": lambda: HeaderAndStatus(status_rewrites={404: 200}),
    "cut-long-calls": CutLongCalls,
    "ignore-command-timeout": lambda: RewriteJsonFields({"timeout": DROP}),
    "wait-for-background-processes": WaitForBackgroundProcesses,
    "end-session-after-slow-call": EndSessionAfterSlowCall,
    "ignore-session-lifetime": lambda: RewriteJsonFields({"ttl": DROP, "maxSessionDuration": DROP}),
    "early-session-end": lambda: RewriteJsonFields({"ttl": 1, "maxSessionDuration": "1s"}),
    "strip-error-codes": StripErrorCodes,
    "mark-every-404": MarkEvery404,
    "router-before-pr-460": RouterBeforePr460,
    "opaque-errors": OpaqueErrors,
    "no-workspace-jail": NoWorkspaceJail,
    "shared-sandbox": SharedSandbox,
    "ignore-namespace": IgnoreNamespace,
    "route-sessions-by-path": RouteSessionsByPath,
    "stale-runtime-cache": lambda: StaleRuntimeCache(lag=1.5),
    "runtime-never-served": lambda: StaleRuntimeCache(lag=math.inf),
    "cut-large-uploads": lambda: LargeFileFault(cut_uploads=True),
    "cut-large-downloads": lambda: LargeFileFault(cut_downloads=True),
    "cap-listed-sizes": lambda: LargeFileFault(cap_listed_sizes=True),
    "recycled-session-ids": RecycledSessionIds,
    "forward-caller-token": ForwardCallerToken,
    "token-in-another-header": TokenInAnotherHeader,
    "ignore-caller-identity": IgnoreCallerIdentity,
    "accept-expired-tokens": lambda: AcceptRefusedTokens("expired"),
    "accept-other-audiences": lambda: AcceptRefusedTokens("other-audience"),
    "accept-other-issuers": lambda: AcceptRefusedTokens("other-issuer"),
    "accept-unpublished-keys": lambda: AcceptRefusedTokens("unpublished-key"),
    "accept-unsigned-tokens": lambda: AcceptRefusedTokens("unsigned"),
    "accept-hmac-with-public-key": lambda: AcceptRefusedTokens("public-key-as-secret"),
    "grant-the-required-role": lambda: AcceptRefusedTokens("no-role"),
    "credential-in-refusals": CredentialInRefusals,
    "hang-on-sandbox-failure": HangOnSandboxFailure,
    "claim-polled-once-a-second": ClaimPolledOnceASecond,
    "deletion-not-done": lambda: FakeDeletion(200, {"message": "Sandbox deleted successfully"}),
    "deletion-fails": lambda: FakeDeletion(500, {"error": "internal server error"}),
    "starting-router": lambda: NotReadyFor(1.0),
    "hang-up-without-token": HangUpWithoutToken,
    "tokens-checked-for-unknown-runtimes-only": TokensCheckedForUnknownRuntimesOnly,
    "never-ready": lambda: NotReadyFor(float("inf")),
    "lossy-echo": LossyEcho,
    "refuse-empty-input": RefuseEmptyInput,
    "exit-codes-as-one": lambda: RewriteCommandResults(flatten_exit_codes=True),
    "warning-on-stderr": lambda: RewriteCommandResults(warning="warning: deprecated\n"),
    "no-admin-bypass": NoAdminBypass,
    "refuse-absolute-paths": lambda: AbsolutePaths(refuse=True),
    "flatten-absolute-uploads": lambda: AbsolutePaths(refuse=False),
    "warm-pool-never-refills": FrozenWarmPool,
    "forgetful-kernel": ForgetfulKernel,
    "swallowed-kernel-death": SwallowedKernelDeath,
    "fail-one-session-in-five": lambda: FailSomeSessions(5),
    "buffer-whole-answers": BufferWholeAnswers,
    "cut-streams": CutStreams,
    "refuse-upgrades": RefuseUpgrades,
    "switch-without-upgrade-header": SwitchWithoutUpgradeHeader,
    "upgrade-token-in-another-header": UpgradeTokenInAnotherHeader,
    "mix-concurrent-answers": MixConcurrentAnswers,
}


class FaultProxy:
    def __init__(self, upstream: str, fault: str) -> None:
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
        self.upstream = upstream.rstrip("/")
        self.fault = FAULTS[fault]()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stopped: asyncio.Event | None = None
        self._client: aiohttp.ClientSession | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fault proxy did not start")
        return self

    def __exit__(self, *_: object) -> None:
        self._loop.call_soon_threadsafe(self._stopped.set)
        self._thread.join(10)

    # What faults use.

    async def forward(self, request: Request) -> Answer:
        url = URL(self.upstream + request.raw_path, encoded=True)
        return await self.send(request.method, url, request.headers, request.body)

    async def send(self, method: str, url: URL, headers: dict[str, str], body: bytes) -> Answer:
        assert self._client is not None
        async with self._client.request(method, url, headers=headers, data=body) as answer:
            kept = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP_BY_HOP}
            return Answer(answer.status, kept, await answer.read())

    async def upstream_request(
        self, method: str, path: str, headers: dict[str, str] | None = None
    ) -> Answer:
        return await self.send(method, URL(self.upstream + path), headers or {}, b"")

    async def sandbox_of(self, session_id: str | None) -> dict[str, Any] | None:
        """localcube's admin record of the sandbox serving the session."""
        if not session_id:
            return None
        listing = (await self.upstream_request("GET", "/localcube/v1/sandboxes")).json()
        return next((box for box in listing["sandboxes"] if box["sessionId"] == session_id), None)

    # Serving.

    def _run(self) -> None:
        self._loop.run_until_complete(self._serve())
        self._loop.close()

    async def _serve(self) -> None:
        self._stopped = asyncio.Event()
        async with aiohttp.ClientSession(auto_decompress=False) as client:
            self._client = client
            app = web.Application(client_max_size=64 << 20)
            app.router.add_route("*", "/{tail:.*}", self._handle)
            runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", self.port).start()
            self._ready.set()
            await self._stopped.wait()
            await runner.cleanup()
        # Handlers still running (a fault that keeps callers waiting) end with the proxy.
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    @property
    def client(self) -> aiohttp.ClientSession:
        assert self._client is not None
        return self._client

    @staticmethod
    def request_of(incoming: web.Request, body: bytes) -> Request:
        """The caller's request as it is forwarded: without its hop-by-hop headers."""
        headers = {k: v for k, v in incoming.headers.items() if k.lower() not in _HOP_BY_HOP}
        return Request(incoming.method, incoming.raw_path, headers, body)

    async def _handle(self, incoming: web.Request) -> web.StreamResponse:
        served = await self.fault.serve(self, incoming)
        if served is not None:
            return served
        request = self.request_of(incoming, await incoming.read())
        self.fault.rewrite_request(request)
        answer = await self.fault.answer_instead(self, request) or await self.forward(request)
        await self.fault.rewrite_answer(self, request, answer)
        return web.Response(status=answer.status, body=answer.body, headers=answer.headers)


def _asks_for_websocket(incoming: web.Request) -> bool:
    connection = incoming.headers.get("Connection", "").lower()
    return "upgrade" in connection and incoming.headers.get("Upgrade", "").lower() == "websocket"


def _handshake_header(name: str) -> bool:
    """A header each side of a WebSocket handshake writes for itself."""
    return name.lower() == "upgrade" or name.lower().startswith("sec-websocket-")


async def _pump(
    source: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
    sink: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
) -> None:
    """Each text and binary message of `source` to `sink`, until `source` closes."""
    async for message in source:
        if message.type is aiohttp.WSMsgType.TEXT:
            await sink.send_str(message.data)
        elif message.type is aiohttp.WSMsgType.BINARY:
            await sink.send_bytes(message.data)


def _only(headers: dict[str, str], name: str) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() == name}


def _without(headers: dict[str, str], name: str | None) -> dict[str, str]:
    return {k: v for k, v in headers.items() if name is None or k.lower() != name.lower()}


def _tail_of(request: Request) -> str | None:
    """The path inside the sandbox a call through the Router reaches, if it is one."""
    invocation = request.invocation
    return (invocation["tail"] or "/") if invocation else None


def _ascii_only(text: str) -> str:
    return text.encode("ascii", "ignore").decode()


def _rewrite_strings(value: Any, rewrite: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return rewrite(value)
    if isinstance(value, dict):
        return {k: _rewrite_strings(v, rewrite) for k, v in value.items()}
    if isinstance(value, list):
        return [_rewrite_strings(item, rewrite) for item in value]
    return value


def _rewrite(value: Any, fields: dict[str, Any]) -> Any:
    if isinstance(value, dict):
        rewritten = {k: fields.get(k, _rewrite(v, fields)) for k, v in value.items()}
        return {k: v for k, v in rewritten.items() if v is not DROP}
    if isinstance(value, list):
        return [_rewrite(item, fields) for item in value]
    return value
