"""The localcube the suite starts when no Router is configured.

It serves the fixture runtimes with authentication on, for three subjects: two ordinary ones
and one with the admin role; its code interpreters run picod_command when given (else
localcube's own daemon). Their tokens are api_token, second_api_token and
admin_api_token when given, else generated for the run, and reach localcube in a private
file that is gone once read, never in its arguments. Its state directory is
the suite's, so that the Router can be restarted with its sessions; and a second localcube
with a low concurrency limit can be started beside it for the overload scenario.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from acceptance.core.evidence import register_secret
from acceptance.core.runtimes import FIXTURE_RUNTIMES
from acceptance.core.settings import Settings
from acceptance.platforms.base import TargetStartError
from localcube import embedded

# A short garbage-collection interval lets the idle-timeout scenarios finish in seconds: a
# session ends within 100 ms of its timeout, well inside the default ttl_grace of 1 s.
GC_INTERVAL = "100ms"
# The fixture the overload scenario's limited Router serves.
ECHO_AGENT_MANIFEST = FIXTURE_RUNTIMES / "echo-agent.yaml"
# The subjects localcube gives the three tokens, with their roles (localcube's token file).
SUBJECTS = (
    ("acceptance-suite", ""),
    ("acceptance-suite-second", ""),
    ("acceptance-suite-admin", "admin"),
)


class OwnLocalcube:
    def __init__(
        self,
        tokens: tuple[str, str, str],
        state_dir: Path,
        log_path: Path,
        ready_timeout: float,
        picod_command: str | None = None,
    ) -> None:
        self.tokens = tokens
        self.log_path = log_path
        self._state_dir = state_dir
        self._ready_timeout = ready_timeout
        self._picod_command = picod_command
        self._process = self._serve(log_path, port=0, state_dir=state_dir)

    @classmethod
    def start(cls, settings: Settings, picod_command: str | None = None) -> OwnLocalcube:
        """Start it, logging to <reports_dir>/localcube.log, its code interpreters run with
        `picod_command` (the localcube adapter's setting) when given; raises
        TargetStartError."""
        tokens = (
            settings.api_token or secrets.token_urlsafe(24),
            settings.second_api_token or secrets.token_urlsafe(24),
            settings.admin_api_token or secrets.token_urlsafe(24),
        )
        for token in tokens:
            register_secret(token)
        log_path = Path(settings.reports_dir) / "localcube.log"
        log_path.unlink(missing_ok=True)
        state_dir = Path(tempfile.mkdtemp(prefix="acceptance-localcube-"))
        try:
            return cls(tokens, state_dir, log_path, settings.ready_timeout, picod_command)
        except TargetStartError:
            shutil.rmtree(state_dir, ignore_errors=True)
            raise

    @property
    def url(self) -> str:
        return self._process.url

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def arguments(self) -> list[str]:
        """Its command line, as any local user sees it with ps."""
        return self._process.arguments

    @property
    def state_dir(self) -> Path:
        return self._state_dir

    def restart(self) -> None:
        """Kill the server as a crash would (its sandboxes live on) and start it again on the
        same port with the same state; return once it serves."""
        port = urlsplit(self.url).port
        assert port is not None
        self._process.crash()
        self._process = self._serve(self.log_path, port=port, state_dir=self._state_dir)

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
        code = self._process.stop()
        shutil.rmtree(self._state_dir, ignore_errors=True)
        return code

    def _picod(self) -> list[str]:
        """The code-interpreter daemon: picod_command's, else localcube's own."""
        return ["--picod-command", self._picod_command] if self._picod_command else []

    def _serve(
        self,
        log_path: Path,
        *,
        port: int,
        state_dir: Path | None,
        manifests: tuple[Path, ...] = (FIXTURE_RUNTIMES,),
        extra: tuple[str, ...] = (),
    ) -> embedded.RunningLocalCube:
        """Start a localcube process; raises TargetStartError, the suite's own, so that the
        run knows it without knowing localcube."""
        with tempfile.TemporaryDirectory(prefix="acceptance-tokens-") as private:
            token_file = Path(private) / "tokens"
            token_file.write_text(
                "".join(
                    f"{subject}={token} {roles}".rstrip() + "\n"
                    for (subject, roles), token in zip(SUBJECTS, self.tokens, strict=True)
                )
            )
            try:
                return embedded.start(
                    list(manifests),
                    log_path,
                    port=port,
                    state_dir=state_dir,
                    gc_interval=GC_INTERVAL,
                    extra_arguments=["--token-file", str(token_file), *self._picod(), *extra],
                    ready_timeout=self._ready_timeout,
                )
            except embedded.LocalCubeStartError as error:
                raise TargetStartError(str(error)) from None
