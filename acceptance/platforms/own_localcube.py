"""The localcube the suite starts when no Router is configured. Its Router authenticates by
OIDC, as upstream's does (`--jwt-*`), against an issuer served from a thread for the run
(oidc_issuer): it outlives a restart of localcube, and its tokens never leave this process
but as the bearer of a call. Its state directory is the suite's, so that a restarted Router
keeps its sessions."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from acceptance.core.evidence import register_secret
from acceptance.core.runtimes import FIXTURE_RUNTIMES
from acceptance.core.settings import TOKEN_FILE_SETTINGS, Settings
from acceptance.platforms.base import TargetStartError
from localcube import embedded
from oidc_issuer.issuer import TokenPolicy
from oidc_issuer.server import IssuerServer
from oidc_issuer.subjects import run_tokens, write_tokens

# A short garbage-collection interval lets the idle-timeout scenarios finish in seconds: a
# session ends within 100 ms of its timeout, well inside the default ttl_grace of 1 s.
GC_INTERVAL = "100ms"
# A short read timeout (upstream's is 30 s) lets the WebSocket scenario that outlives it
# finish in seconds; the suite's router_read_timeout defaults to it (platforms.localcube).
READ_TIMEOUT = "1s"
# The fixture the overload scenario's limited Router serves.
ECHO_AGENT_MANIFEST = FIXTURE_RUNTIMES / "echo-agent.yaml"
# What its Router requires: upstream's default audience, Keycloak's claim path of roles
# (a nested one, as upstream's e2e has it) and the role upstream's chart documents.
POLICY = TokenPolicy()
# Long enough for any run; the tokens die with the issuer at the run's end anyway.
TOKEN_LIFETIME = 12 * 3600.0


class OwnLocalcube:
    def __init__(self, settings: Settings, picod_command: str | None = None) -> None:
        """Start it, logging to <reports_dir>/localcube.log, its code interpreters run with
        `picod_command` when given; raises TargetStartError."""
        if given := [name for name in TOKEN_FILE_SETTINGS if getattr(settings, name)]:
            raise TargetStartError(
                f"setting {given[0]} is set, but the localcube the suite starts takes the "
                "tokens of its own issuer only: unset the token settings (and token_dir), "
                "or give router_url for a target of your own"
            )
        self.log_path = Path(settings.reports_dir) / "localcube.log"
        self.log_path.unlink(missing_ok=True)
        self._ready_timeout = settings.ready_timeout
        self._picod = ["--picod-command", picod_command] if picod_command else []
        with ExitStack() as stack:
            self.state_dir = Path(tempfile.mkdtemp(prefix="acceptance-localcube-"))
            stack.callback(shutil.rmtree, self.state_dir, ignore_errors=True)
            self._issuer = stack.enter_context(IssuerServer())
            self.tokens = run_tokens(self._issuer.issuer, POLICY, TOKEN_LIFETIME)
            for token in self.tokens.values():
                register_secret(token)
            # For a person reaching sessions kept for inspection; gone with the state otherwise.
            self.token_dir = self.state_dir / "tokens"
            write_tokens(self.tokens, self.token_dir)
            # The running localcube (its pid, arguments); a restart replaces it, on its url.
            self.process = self._serve(self.log_path, port=0, state_dir=self.state_dir)
            self.url = self.process.url
            self._release = stack.pop_all()  # the issuer and the state, once it has stopped

    def restart(self) -> None:
        """Kill the server as a crash would (its sandboxes live on) and start it again on the
        same port with the same state; return once it serves."""
        port = urlsplit(self.url).port
        assert port is not None
        self.process.crash()
        self.process = self._serve(self.log_path, port=port, state_dir=self.state_dir)

    @contextmanager
    def limited(self, limit: int) -> Iterator[str]:
        """A second localcube, with this --max-concurrent-requests, by its URL while in use.
        It serves the echo agent alone (what the overload scenario calls): no warm pool
        starts beside the scenario and takes its CPU."""
        sibling = self._serve(
            self.log_path.with_name("localcube-limited.log"),
            port=0,
            state_dir=None,
            manifests=(ECHO_AGENT_MANIFEST,),
            extra=("--max-concurrent-requests", str(limit)),
        )
        try:
            yield sibling.url
        finally:
            sibling.stop()

    def stop(self) -> int:
        """Stop it gracefully (it ends its sandboxes) and remove its state; the exit code."""
        code = self.process.stop()
        self._release.close()
        return code

    def _serve(
        self,
        log_path: Path,
        *,
        port: int,
        state_dir: Path | None,
        manifests: tuple[Path, ...] = (FIXTURE_RUNTIMES,),
        extra: tuple[str, ...] = (),
    ) -> embedded.RunningLocalCube:
        """Start a localcube process; raises TargetStartError, so that the run knows it
        without knowing localcube."""
        oidc = ["--jwt-issuer-url", self._issuer.url, "--jwt-audience", POLICY.audience]
        oidc += ["--jwt-role-claim", POLICY.role_claim, "--jwt-required-role", POLICY.required_role]
        try:
            return embedded.start(
                list(manifests),
                log_path,
                port=port,
                state_dir=state_dir,
                gc_interval=GC_INTERVAL,
                extra_arguments=[*oidc, "--read-timeout", READ_TIMEOUT, *self._picod, *extra],
                ready_timeout=self._ready_timeout,
            )
        except embedded.LocalCubeStartError as error:
            raise TargetStartError(str(error)) from None
