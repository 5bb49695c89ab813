"""What a leaked credential looks like in a run's output or reports, whoever minted it."""

from __future__ import annotations

import re

# A JWT: a base64url JSON header (`{"` encodes as `eyJ`), a dot, a base64url JSON payload.
JWT_SHAPE = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}")
