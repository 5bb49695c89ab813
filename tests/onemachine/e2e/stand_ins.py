"""Stand-ins for what a maintainer's checkout runs: a `go` whose `go test` checks what
run_e2e.sh gives upstream's Go tests, Python e2e files that check what it gives each of
them, and small packages in place of sdk-python and the integrations (the MCP one serving
HTTP, to run in the in-cluster pod). Each test reports as the real runners do
(`go test -json` events, unittest's verbose report), so the command reads them unchanged.
"""

from __future__ import annotations

import stat
import sys
import textwrap
from pathlib import Path

# `go test`: TestVariables passes when every variable of run_e2e.sh:608-615 is there (and
# fails when STAND_IN_GO_FAIL asks, for the failure path); TestFixturesApplied reads
# echo-agent-short-ttl through KUBECONFIG, as upstream's tests read their objects;
# TestMTLSOnly skips as upstream's direct-WM tests do with mTLS; TestOIDCAuth skips with
# upstream's words without OIDC and checks the admin token with it; -run selects.
_GO = textwrap.dedent(
    """\
    import base64, json, os, re, sys
    if "-json" not in sys.argv:  # the compile run: go test -count=1 -run '^$' ./test/e2e/...
        sys.exit(0)
    PACKAGE = "github.com/volcano-sh/agentcube/test/e2e"

    def event(action, test=None, output=None, elapsed=None):
        line = {"Time": "2026-12-02T00:00:00Z", "Action": action, "Package": PACKAGE}
        if test: line["Test"] = test
        if output is not None: line["Output"] = output
        if elapsed is not None: line["Elapsed"] = elapsed
        print(json.dumps(line), flush=True)

    def test(name, body):
        event("run", name)
        event("output", name, f"=== RUN   {name}\\n")
        try:
            outcome = body()
        except AssertionError as failure:
            event("output", name, f"    e2e_test.go:1: {failure}\\n--- FAIL: {name}\\n")
            event("fail", name, elapsed=0.01)
            return False
        if outcome:
            event("output", name, f"    e2e_test.go:1: {outcome[1]}\\n--- SKIP: {name}\\n")
            event("skip", name, elapsed=0.01)
            return True
        event("output", name, f"--- PASS: {name}\\n")
        event("pass", name, elapsed=0.01)
        return True

    def variables():
        wanted = ["WORKLOAD_MANAGER_URL", "ROUTER_URL", "WORKLOAD_NAMESPACE", "OIDC_ENABLED",
                  "API_TOKEN", "KUBECONFIG"]
        missing = [name for name in wanted if not os.environ.get(name)]
        assert not missing, f"not set: {missing}"
        assert os.environ["MTLS_ENABLED"] == "false", os.environ["MTLS_ENABLED"]
        assert os.environ["OIDC_ENABLED"] == "false", "the Go tests run first without Keycloak"
        assert not os.environ.get("STAND_IN_GO_FAIL"), "asked to fail by STAND_IN_GO_FAIL"

    def oidc():
        if os.environ.get("OIDC_ENABLED") != "true":
            return "skip", "skipping OIDC test: OIDC_ENABLED not set (Keycloak not deployed)"
        assert os.environ["ADMIN_TOKEN"] and os.environ["API_TOKEN"] != os.environ["ADMIN_TOKEN"]
        payload = os.environ["ADMIN_TOKEN"].split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        assert "admin" in claims["realm_access"]["roles"], claims

    def fixtures_applied():
        from kubernetes import client, config
        api = config.new_client_from_config(os.environ["KUBECONFIG"])
        agent = client.CustomObjectsApi(api).get_namespaced_custom_object(
            "runtime.agentcube.volcano.sh", "v1alpha1", os.environ["WORKLOAD_NAMESPACE"],
            "agentruntimes", "echo-agent-short-ttl")
        assert agent["spec"]["sessionTimeout"] == "30s", agent["spec"]

    run = next((sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == "-run"), None)
    tests = {"TestVariables": variables, "TestFixturesApplied": fixtures_applied,
             "TestMTLSOnly": lambda: ("skip", "skipping direct-WM test: mTLS is active"),
             "TestOIDCAuth": oidc}
    results = [test(name, body) for name, body in tests.items()
               if run is None or re.fullmatch(run, name)]
    event("output", None, "PASS\\n" if all(results) else "FAIL\\n")
    event("pass" if all(results) else "fail", elapsed=0.1)
    sys.exit(0 if all(results) else 1)
    """
)

_PYTHON_TEST = textwrap.dedent(
    """\
    import os, unittest

    class StandIn(unittest.TestCase):
        def test_variables(self):
            missing = [name for name in WANTED if not os.environ.get(name)]
            self.assertEqual(missing, [])
            for name, value in EXPECTED.items():
                self.assertEqual(os.environ[name], value, name)

        def test_sdk_installed(self):
            import agentcube
            self.assertTrue(agentcube.STAND_IN)

    EXTRA

    if __name__ == "__main__":
        unittest.main(verbosity=2)
    """
)

_OIDC_EXTRA = textwrap.dedent(
    """\
    class ClientCredentials(unittest.TestCase):
        def test_app_token_from_the_token_endpoint(self):
            import json, urllib.parse, urllib.request
            form = urllib.parse.urlencode({"grant_type": "client_credentials",
                "client_id": "agentcube-app", "client_secret": "app-secret-1"}).encode()
            with urllib.request.urlopen(os.environ["KEYCLOAK_TOKEN_URL"], form, timeout=10) as a:
                self.assertEqual(json.load(a)["token_type"], "Bearer")

        def test_api_token_is_keycloak_s_for_the_app(self):
            import base64, json
            payload = os.environ["API_TOKEN"].split(".")[1]
            claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
            self.assertEqual(claims.get("azp"), "agentcube-app", claims)
    """
)

_MCP_K8S_EXTRA = textwrap.dedent(
    """\
    class InCluster(unittest.TestCase):
        def test_the_mcp_pod_answers_through_its_service(self):
            import json, urllib.request
            with urllib.request.urlopen(os.environ["MCP_K8S_MCP_URL"], timeout=10) as answer:
                seen = json.load(answer)
            self.assertEqual(seen["path"], "/mcp")
            self.assertTrue(seen["api_token"], "the pod has no API_TOKEN: set env not rolled out")
            self.assertEqual(seen["router_url"],
                             "http://agentcube-router.agentcube.svc.cluster.local:8080")

        def test_no_token_is_exported_without_keycloak(self):
            self.assertNotIn("API_TOKEN", os.environ)
    """
)

# The MCP image's stand-in server: GET answers what the pod was given.
_MCP_SERVER = textwrap.dedent(
    """\
    import argparse, http.server, json, os

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"path": self.path, "api_token": bool(os.environ.get("API_TOKEN")),
                               "router_url": os.environ.get("ROUTER_URL")}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    parser = argparse.ArgumentParser()
    for flag in ("--transport", "--host", "--port"):
        parser.add_argument(flag)
    options = parser.parse_args()
    http.server.HTTPServer((options.host, int(options.port)), Handler).serve_forever()
    """
)


def write_go(path: Path) -> Path:
    path.write_text(f"#!{sys.executable}\n{_GO}", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def write_python_tests(e2e_dir: Path) -> None:
    """A stand-in of each Python e2e file, checking the variables run_e2e.sh gives it (the
    line of run_e2e.sh each stands for is in onemachine/e2e/plan.py)."""
    urls = ["WORKLOAD_MANAGER_URL", "ROUTER_URL", "API_TOKEN"]
    off = {"MTLS_ENABLED": "false"}
    files = {
        "test_codeinterpreter.py": (
            urls,
            off | {"OIDC_ENABLED": "false", "AGENTCUBE_NAMESPACE": "agentcube"},
            "",
        ),
        "test_oidc_auth.py": (
            [*urls, "KEYCLOAK_TOKEN_URL"],
            {"OIDC_ENABLED": "true", "AGENTCUBE_SYSTEM_NAMESPACE": "agentcube"},
            _OIDC_EXTRA,
        ),
        "test_langchain_agentcube_sandbox.py": (
            urls,
            off | {"AGENTCUBE_NAMESPACE": "agentcube"},
            "",
        ),
        "test_mcp_code_interpreter.py": (urls, off, ""),
        "test_mcp_code_interpreter_stdio.py": (urls, off, ""),
        "test_mcp_code_interpreter_k8s.py": (
            ["MCP_K8S_MCP_URL"],
            {"MTLS_ENABLED": "false"},
            _MCP_K8S_EXTRA,
        ),
    }
    for name, (wanted, expected, extra) in files.items():
        head = f"WANTED = {wanted!r}\nEXPECTED = {expected!r}\n"
        (e2e_dir / name).write_text(head + _PYTHON_TEST.replace("EXTRA", extra), encoding="utf-8")


def write_packages(root: Path) -> None:
    """sdk-python (`agentcube`), the MCP integration (`mcp_server`, which the pod runs) and
    the LangChain one, each an installable project."""
    packages = {
        "sdk-python": ("agentcube", {"__init__.py": "STAND_IN = True\n"}),
        "integrations/code-interpreter-mcp": (
            "mcp_server",
            {"__init__.py": "", "__main__.py": _MCP_SERVER},
        ),
        "integrations/langchain-agentcube": ("langchain_agentcube", {"__init__.py": ""}),
    }
    for directory, (module, files) in packages.items():
        project = root / directory
        (project / module).mkdir(parents=True, exist_ok=True)
        for name, body in files.items():
            (project / module / name).write_text(body, encoding="utf-8")
        (project / "pyproject.toml").write_text(
            textwrap.dedent(
                f"""\
                [build-system]
                requires = ["setuptools>=61"]
                build-backend = "setuptools.build_meta"

                [project]
                name = "{module.replace("_", "-")}-stand-in"
                version = "0.0.1"

                [tool.setuptools]
                packages = ["{module}"]
                """
            ),
            encoding="utf-8",
        )
