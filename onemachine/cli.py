"""`python -m onemachine cluster ...`, `... e2e ...` and `... node ...`."""

from __future__ import annotations

import argparse
import logging
import sys

from onemachine.cluster.command import add_cluster_command, run_cluster
from onemachine.e2e.command import add_e2e_command, run_e2e
from onemachine.node import command as node_command


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m onemachine")
    commands = parser.add_subparsers(dest="command", required=True)
    add_cluster_command(commands)
    add_e2e_command(commands)
    node_command.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    if arguments.command == "cluster":
        return run_cluster(arguments)
    if arguments.command == "e2e":
        return run_e2e(arguments)
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    return node_command.run(arguments)
