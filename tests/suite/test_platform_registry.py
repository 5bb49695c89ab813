"""The adapter registry: a platform adapter is one module. A throwaway adapter written to a
temporary directory and registered by an entry point is chosen with -D platform, brings its
settings and defaults, opens its Target and hands the parallel workers what it says, with
no file of the repository changed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from acceptance.core.settings import ConfigError
from acceptance.platforms.base import SANDBOX_KILL, WORKLOAD_MANAGER_SESSIONS
from acceptance.platforms.registry import ENTRY_POINT_GROUP, adapters
from acceptance.platforms.target import open_target, read_settings
from acceptance.run.parallel_run import _shared_target
from docgen.configuration_table import adapter_settings_rows, settings_table

ROOT = Path(__file__).resolve().parents[2]

THROWAWAY = """
from dataclasses import dataclass

from acceptance.core.settings import parse_flag, setting
from acceptance.platforms.base import (
    SANDBOX_KILL, Platform, Target, given_urls,
)
from acceptance.platforms.registry import Adapter


class ThrowawayPlatform(Platform):
    name = "throwaway"
    capabilities = frozenset({SANDBOX_KILL})


class ThrowawayTarget(Target):
    platform_name = "throwaway"

    def platform(self, transport):
        return ThrowawayPlatform()


def open_throwaway(run, environ):
    urls = given_urls(run.suite, "throwaway")
    return ThrowawayTarget.configured(urls, run.suite, ThrowawayPlatform.capabilities)


@dataclass(frozen=True)
class ThrowawaySettings:
    throwaway_mode: bool = setting(parse_flag, "false", "Its mode.")


ADAPTER = Adapter(
    "throwaway",
    open_throwaway,
    settings_class=ThrowawaySettings,
    suite_defaults={"ttl_grace": ("7s", "its collector is slow")},
    defaults_heading="on a throwaway",
    worker_settings={"throwaway_mode": "true"},
)
NOT_AN_ADAPTER = "throwaway"
"""


def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *entries: str) -> None:
    """The throwaway module and a distribution whose entry points are `entries`
    (`name = module:attribute`), found on sys.path as an installed package would be."""
    (tmp_path / "throwaway_platform.py").write_text(THROWAWAY)
    info = tmp_path / "throwaway_platform-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: throwaway-platform\nVersion: 0\n")
    lines = "\n".join(entries)
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{lines}\n")
    monkeypatch.syspath_prepend(str(tmp_path))


@pytest.fixture
def throwaway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install(tmp_path, monkeypatch, "throwaway = throwaway_platform:ADAPTER")


@pytest.mark.usefixtures("throwaway")
def test_a_throwaway_adapter_is_chosen_and_opens_its_target() -> None:
    userdata = {
        "platform": "throwaway",
        "router_url": "http://router.test",
        "throwaway_mode": "true",
    }
    run = read_settings(userdata, {})
    assert run.adapter.name == "throwaway", f"the adapter -D platform names, not {run.adapter}"
    assert run.adapter_settings.throwaway_mode is True
    assert run.suite.ttl_grace == 7, "its default of ttl_grace applies where none is given"
    _, target = open_target(userdata, {})
    assert (type(target).__name__, target.platform_name) == ("ThrowawayTarget", "throwaway")
    assert target.capabilities == {SANDBOX_KILL, WORKLOAD_MANAGER_SESSIONS}, (
        "its own capability and the target's as configured (no token)"
    )
    defines, _ = _shared_target(target, run.suite)
    assert "--define=throwaway_mode=true" in defines, defines


@pytest.mark.usefixtures("throwaway")
def test_a_throwaway_adapters_settings_and_defaults_are_in_the_generated_tables() -> None:
    table = settings_table()
    assert "| on a throwaway |" in table.splitlines()[0], table.splitlines()[0]
    ttl_grace = next(row for row in table.splitlines() if row.startswith("| `ttl_grace` "))
    assert " `7s` |" in ttl_grace, ttl_grace
    rows = adapter_settings_rows(adapters()["throwaway"])
    assert rows == ["| `throwaway_mode` | `AGENTCUBE_THROWAWAY_MODE` | `false` | Its mode. |"]


@pytest.mark.usefixtures("throwaway")
def test_a_throwaway_adapters_setting_with_another_platform_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"throwaway_mode .* only with -D platform=throwaway"):
        read_settings({"router_url": "http://router.test", "throwaway_mode": "true"}, {})


def test_an_unknown_platform_is_refused_naming_the_adapters() -> None:
    with pytest.raises(ConfigError, match=r"setting platform .*'docker' must be one of .*none"):
        read_settings({"platform": "docker"}, {})


def test_the_platform_defaults_to_localcube_without_a_router_and_to_none_with_one() -> None:
    assert read_settings({}, {}).adapter.name == "localcube"
    given = read_settings({}, {"AGENTCUBE_ROUTER_URL": "http://router.test"})
    assert given.adapter.name == "none"


def test_an_entry_point_that_names_no_adapter_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(tmp_path, monkeypatch, "throwaway = throwaway_platform:NOT_AN_ADAPTER")
    with pytest.raises(ConfigError, match=r"throwaway_platform:NOT_AN_ADAPTER .* is not an"):
        adapters()


def test_two_adapters_of_one_name_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(tmp_path, monkeypatch, "localcube = throwaway_platform:ADAPTER")
    with pytest.raises(ConfigError, match="two platform adapters are named localcube"):
        adapters()


def test_an_adapter_registered_under_another_name_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(tmp_path, monkeypatch, "again = throwaway_platform:ADAPTER")
    with pytest.raises(ConfigError, match="registered as again but names itself throwaway"):
        read_settings({"platform": "again", "router_url": "http://router.test"}, {})


def test_a_default_for_no_setting_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "misnamed_platform.py").write_text(
        textwrap.dedent(
            """
            from throwaway_platform import ADAPTER as THROWAWAY
            import dataclasses
            ADAPTER = dataclasses.replace(
                THROWAWAY, name="misnamed", suite_defaults={"tll_grace": ("7s", "a typo")}
            )
            """
        )
    )
    install(tmp_path, monkeypatch, "misnamed = misnamed_platform:ADAPTER")
    with pytest.raises(ConfigError, match="a platform gives a default to tll_grace"):
        read_settings({"platform": "misnamed", "router_url": "http://router.test"}, {})


# The hooks and every step module, as behave loads them, then the run's settings read.
_A_RUN_CHOOSING = """
import json, pathlib, runpy, sys
import environment
for path in sorted(pathlib.Path("steps").glob("*.py")):
    runpy.run_path(str(path))
from acceptance.platforms.target import read_settings
read_settings(USERDATA, {})
tops = {name.split(".")[0] for name in sys.modules}
print(json.dumps(sorted(tops & {"localcube", "kubernetes"})))
print(json.dumps(sorted(name for name in sys.modules if name.startswith("acceptance.platforms."))))
"""


def _modules_of_a_run(userdata: dict[str, str]) -> tuple[list[str], list[str]]:
    """(the localcube and kubernetes packages, the acceptance.platforms modules) that a run
    choosing with `userdata` has imported once its settings are read."""
    code = _A_RUN_CHOOSING.replace("USERDATA", repr(userdata))
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    packages, platforms = shown.stdout.strip().splitlines()
    return json.loads(packages), json.loads(platforms)


def test_a_kubernetes_run_never_imports_localcube() -> None:
    packages, platforms = _modules_of_a_run({"platform": "kubernetes"})
    assert "localcube" not in packages, packages
    assert not [m for m in platforms if "localcube" in m], platforms
    assert "acceptance.platforms.kubernetes" in platforms, "the chosen adapter is imported"


def test_a_localcube_run_imports_no_other_adapter_nor_the_kubernetes_client() -> None:
    packages, platforms = _modules_of_a_run({})
    assert packages == ["localcube"], packages
    assert not [m for m in platforms if "kubernetes" in m or m.endswith(".none")], platforms
