"""The workspace jail, tried through the Router: file operations and working directories
whose paths lead out of the session's workspace, through "..", an absolute path, or a
symlink the sandbox made itself. What lies outside is checked from inside the sandbox."""

from __future__ import annotations

import enum
import json
import os
import uuid

import requests
from hamcrest import assert_that
from hamcrest.core.matcher import Matcher

from acceptance.core import matchers
from acceptance.core.evidence import describe_response
from acceptance.core.matchers import Answer, Refusal, json_body
from acceptance.domain.interpreters import command_result, exits_with
from acceptance.domain.world import World, required

SECRET_FILE = "secret.txt"
# What an upload carries: a newline and non-ASCII, so that a lossy round trip shows.
UPLOADED = "planted\nh\u00e9llo \u2013 \u4f60\u597d\n".encode()

# Run in the workspace: make "outside" next to it with a secret in it, and print its path.
_PREPARE = """
import os, sys
outside = os.path.join(os.path.dirname(os.getcwd()), "outside")
os.makedirs(outside, exist_ok=True)
with open(os.path.join(outside, "secret.txt"), "w") as secret:
    secret.write(sys.argv[1])
print(outside)
"""
_LINK = "import os, sys; os.symlink(sys.argv[1], sys.argv[2])"
_MISSING_FILE = "through-dangling.txt"
# Run in a working directory: reveal a secret found there, and plant a file.
_PLANT = """
import os
if os.path.exists("secret.txt"):
    print(open("secret.txt").read())
open("planted.txt", "w").write("planted")
"""
# Run in the workspace: what the outside directory holds.
_INSPECT = """
import json, os, sys
print(json.dumps({name: open(os.path.join(sys.argv[1], name)).read()
                  for name in sorted(os.listdir(sys.argv[1]))}))
"""


class JailOperation(enum.Enum):
    UPLOAD = "upload a file to"
    DOWNLOAD = "download"
    LIST = "list the directory"
    RUN_IN = "run a command in the directory"


# An operation on the outside directory by its absolute path: the operation, and the name
# under the directory ("" for the directory itself).
AbsoluteAttempt = tuple[JailOperation, str]
ABSOLUTE_ATTEMPTS: dict[str, AbsoluteAttempt] = {
    "upload a file to the outside directory": (JailOperation.UPLOAD, "planted.txt"),
    "download the secret from the outside directory": (JailOperation.DOWNLOAD, SECRET_FILE),
    "list the outside directory": (JailOperation.LIST, ""),
    "run a command in the outside directory": (JailOperation.RUN_IN, ""),
}


class WorkspaceJail:
    def __init__(self, world: World) -> None:
        self._world = world
        self._secret = f"secret-{uuid.uuid4().hex}"
        self._outside: str | None = None
        self._last_path: str | None = None  # the path of the last operation

    def prepare_outside(self) -> None:
        """Have the sandbox make the outside directory, its secret and the symlinks."""
        answer = self._python(_PREPARE, self._secret)
        assert_that(answer, exits_with(0), "the sandbox could not prepare the scene")
        self._outside = answer.json()["stdout"].strip()

    def link(self, name: str, *, to_missing_file: bool = False) -> None:
        """Have the sandbox make a symlink in its workspace to the outside directory, or to a
        file there that does not exist."""
        target = os.path.join(self._outside_path, _MISSING_FILE if to_missing_file else "")
        answer = self._python(_LINK, target.rstrip("/"), name)
        assert_that(answer, exits_with(0), f"the sandbox could not make the link {name}")

    def attempt_absolute(self, attempt: AbsoluteAttempt) -> None:
        operation, name = attempt
        self.attempt(operation, os.path.join(self._outside_path, name).rstrip("/"))

    def attempt(self, operation: JailOperation, path: str) -> None:
        self._last_path = path
        calls = self._world.in_session()
        if operation is JailOperation.RUN_IN:
            calls.execute(["python3", "-c", _PLANT], fields={"working_dir": path})
        elif operation is JailOperation.UPLOAD:
            calls.upload_file(path, UPLOADED)
        elif operation is JailOperation.DOWNLOAD:
            calls.download_file(path)
        else:
            calls.list_files(path)

    def expect_download_holds_upload(self) -> None:
        path = required(self._last_path, "the scenario has not uploaded a file yet")
        answer = self._world.in_session().download_file(path)
        assert_that(
            answer, matchers.holds_bytes(f"{path} to download as the bytes uploaded", UPLOADED)
        )

    def expect_nothing_outside_revealed_or_changed(self) -> None:
        """The answer reveals nothing of the outside directory, which, seen from inside the
        sandbox, still holds its secret and nothing else."""
        assert_that(self._world.last_answer, reveals_nothing_of(self._secret, SECRET_FILE))
        answer = self._python(_INSPECT, self._outside_path)
        assert_that(
            answer,
            command_result(
                f"the outside directory to hold only {SECRET_FILE}, unchanged",
                exit_code=0,
                stdout=json.dumps({SECRET_FILE: self._secret}) + "\n",
            ),
        )

    def _python(self, script: str, *arguments: str) -> requests.Response:
        return self._world.in_session().execute(["python3", "-c", script, *arguments])

    @property
    def _outside_path(self) -> str:
        return required(self._outside, "the scenario has not prepared the outside directory")


# What its answers are expected to be.


def refused_as_escaping_the_workspace() -> Answer:
    return Refusal(
        "the call to be refused with 400 because the path escapes the workspace",
        400,
        ("access denied", "escapes"),
    )


def reveals_nothing_of(secret: str, file_name: str) -> Matcher[requests.Response]:
    """An answer that neither contains the secret nor lists the file that holds it."""

    def problem(response: requests.Response) -> str | None:
        if secret.encode() in response.content:
            return "the answer holds the secret"
        body = json_body(response)
        files = body.get("files") if isinstance(body, dict) else None
        if isinstance(files, list) and any(
            isinstance(entry, dict) and entry.get("name") == file_name for entry in files
        ):
            return f"the answer lists {file_name}"
        return None

    return matchers.without_problem(
        "an answer that reveals nothing from outside the workspace "
        f"(neither the secret nor a listing of {file_name})",
        problem,
        lambda response: f"the answer was {describe_response(response)}",
    )
