"""`--forward-service`'s file, as the e2e runner reads it: one 0600 JSON object."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from onemachine.cluster import service_forwards


def test_the_mapping_file_names_each_service_port_and_its_host_port(tmp_path: Path) -> None:
    mcp = service_forwards.parse("agentcube/agentcube-code-interpreter-mcp:8000")
    other = service_forwards.parse("agentcube-neighbour/echo:80")
    path = tmp_path / "service-forwards.json"
    service_forwards.write(path, {mcp: 41234, other: 41235})
    assert json.loads(path.read_text()) == {
        "agentcube/agentcube-code-interpreter-mcp:8000": "127.0.0.1:41234",
        "agentcube-neighbour/echo:80": "127.0.0.1:41235",
    }
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
