"""Stands in for upstream's Router where tests/localcube/test_own_router_doc.py runs
docs/own-router.md: CI has no upstream code.

At start-up it makes the calls upstream's Router makes, from what the page gives it: the
identity Secret through the in-cluster files and variables (pkg/router/jwt.go:136-205; in
JSON, where client-go sends protobuf: tests/recordings/test_k8s_api.py replays that), then
Redis at `REDIS_ADDR`; the WorkloadManager's address, `WORKLOAD_MANAGER_URL`, is only read,
as upstream reads it (pkg/router/session_manager.go:68); the OIDC issuer's discovery document
and keys, as go-oidc reads them at start (pkg/router/oidc.go:66-89); no caller's token is
checked. Then it listens as the Router does, on every interface (pkg/router/server.go:185-214),
until SIGTERM, serving `/health/live` and one thing more of the Router's: a call to a code
interpreter opens a session at the WorkloadManager with the service-account token
(`POST /v1/code-interpreter`, as router-to-workload-manager.jsonl records it;
pkg/router/session_manager.go:155-239) and is passed to the sandbox with a JWT signed by the
key read back (pkg/router/handlers.go:277-307). Nothing else: no session is looked up or kept,
no header but the token is passed. What it found goes to `--report`; a start-up call that fails
stops it with status 255, as the Router's klog.Fatalf does.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import jwt
import redis
import requests
from cryptography.hazmat.primitives import serialization

from localcube.upstream_router import kube_protobuf

SERVICE_ACCOUNT = Path("/run/secrets/kubernetes.io/serviceaccount")
PROTOBUF = kube_protobuf.MEDIA_TYPE
INTERPRETER_CALL = re.compile(r"/v1/namespaces/([^/]+)/code-interpreters/([^/]+)/invocations(/.*)")
SECRET = {
    "kind": "Secret",
    "apiVersion": "v1",
    "metadata": {
        "name": "picod-router-identity",
        "namespace": "default",
        "labels": {"app": "agentcube", "component": "router"},
    },
    "data": {"private.pem": base64.b64encode(b"<a key of the stand-in's>").decode()},
    "type": "Opaque",
}


class StartupFailed(Exception):
    pass


def identity_key() -> bytes:
    """The create, then on AlreadyExists the read; the private key PEM read back."""
    token = (SERVICE_ACCOUNT / "token").read_text()
    namespace = (SERVICE_ACCOUNT / "namespace").read_text()
    host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
    secrets = f"https://{host}:{port}/api/v1/namespaces/{namespace}/secrets"
    session = requests.Session()
    session.headers.update(
        {"Authorization": f"Bearer {token}", "Accept": f"{PROTOBUF},application/json"}
    )
    trusted = str(SERVICE_ACCOUNT / "ca.crt")  # per call: REQUESTS_CA_BUNDLE would win
    created = session.post(secrets, json=SECRET, verify=trusted, timeout=30)
    status = created.json()
    if status.get("reason") != "AlreadyExists":
        raise StartupFailed(f"failed to create identity secret: {status}")
    read = session.get(f"{secrets}/{status['details']['name']}", verify=trusted, timeout=30)
    secret = read.json()
    if read.status_code != 200:
        raise StartupFailed(f"failed to get identity secret: {secret}")
    return base64.b64decode(secret["data"]["private.pem"])


def start_up(max_concurrent_requests: int) -> dict:
    pem = identity_key()
    key = serialization.load_pem_private_key(pem, password=None)
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    if os.environ.get("REDIS_PASSWORD_REQUIRED", "").lower() != "false":
        raise StartupFailed("REDIS_PASSWORD_REQUIRED is not false")
    redis_host, _, redis_port = os.environ["REDIS_ADDR"].rpartition(":")
    redis.Redis(host=redis_host, port=int(redis_port), socket_timeout=5).ping()
    Routes.identity_pem = pem
    Routes.workload_manager = os.environ["WORKLOAD_MANAGER_URL"]
    return {
        "identity_key_pkcs1": pem.startswith(b"-----BEGIN RSA PRIVATE KEY-----"),
        "identity_public_key_sha256": hashlib.sha256(public_pem.strip()).hexdigest(),
        "redis": "PONG",
        "max_concurrent_requests": max_concurrent_requests,
    }


def discovered_issuer(url: str) -> str:
    """The issuer's discovery document as go-oidc's NewProvider reads it at start
    (pkg/router/oidc.go:66-70): its `issuer`, which must be the URL given exactly."""
    document = requests.get(url + "/.well-known/openid-configuration", timeout=10).json()
    if document.get("issuer") != url:
        raise StartupFailed(f"issuer did not match: {document.get('issuer')!r}, not {url!r}")
    requests.get(document["jwks_uri"], timeout=10).raise_for_status()
    return document["issuer"]


def interpreter_call(namespace: str, name: str, path: str, body: bytes) -> requests.Response:
    """A new session at the WorkloadManager as the Router opens one, then the call passed to
    its sandbox's first entry point with the Router's JWT."""
    opened = requests.post(
        f"{Routes.workload_manager}/v1/code-interpreter",
        json={"kind": "CodeInterpreter", "name": name, "namespace": namespace},
        headers={"Authorization": f"Bearer {(SERVICE_ACCOUNT / 'token').read_text()}"},
        timeout=60,
    )
    opened.raise_for_status()
    session = opened.json()
    now = int(time.time())
    claims = {"exp": now + 300, "iat": now, "iss": "agentcube-router"}
    token = jwt.encode({**claims, "session_id": session["sessionId"]}, Routes.identity_pem, "RS256")
    return requests.post(
        f"http://{session['entryPoints'][0]['endpoint']}{path}",
        data=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        timeout=60,
    )


class Routes(BaseHTTPRequestHandler):
    identity_pem: bytes = b""
    workload_manager = ""

    def do_GET(self) -> None:
        if self.path == "/health/live":
            self.answer(200, b'{"status":"alive"}')
        else:
            self.answer(404, b"404 page not found")

    def do_POST(self) -> None:
        call = INTERPRETER_CALL.fullmatch(self.path)
        if call is None:
            self.answer(404, b"404 page not found")
            return
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            answer = interpreter_call(*call.groups(), body)
        except (requests.RequestException, KeyError, ValueError) as error:
            self.answer(502, json.dumps({"error": str(error)}).encode())
            return
        self.answer(answer.status_code, answer.content)

    def answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *arguments: object) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", required=True)
    parser.add_argument("--max-concurrent-requests", type=int, required=True)
    parser.add_argument("--report", type=Path, required=True)
    # External authentication, as upstream's flags (cmd/router/main.go:50-53): all required
    # here, so that the page cannot drop one unnoticed.
    for flag in ("--jwt-issuer-url", "--jwt-role-claim", "--jwt-required-role"):
        parser.add_argument(flag, required=True)
    arguments = parser.parse_args()
    try:
        found = start_up(arguments.max_concurrent_requests)
        found["oidc_issuer"] = discovered_issuer(arguments.jwt_issuer_url)
        found["jwt"] = [arguments.jwt_role_claim, arguments.jwt_required_role]
    except (StartupFailed, OSError, KeyError, ValueError, redis.RedisError) as error:
        print(f"F router stand-in: {error}", file=sys.stderr)
        return 255
    server = ThreadingHTTPServer(("", int(arguments.port)), Routes)
    arguments.report.write_text(json.dumps({**found, "port": server.server_port}))
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print(f"I router stand-in: Router server listening on :{arguments.port}", file=sys.stderr)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
