"""Differential tests: localcube's counterparts replay the real upstream programs' recorded
traffic (`upstream/`, a copy of `../shared/upstream-recordings/`) and answer as upstream did,
or a ledger in `differences/` says why not. `report.py` turns the ledger into
docs/fidelity.md's tally."""
