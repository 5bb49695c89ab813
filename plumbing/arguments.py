"""argparse types (`type=`) the command lines of localcube's neighbours share."""

import argparse

from agentcube_contract.durations import parse_duration


def positive_duration(text: str) -> float:
    """A command-line flag's duration (argparse's `type=`): seconds, more than zero; refused
    with parse_duration's words, or saying it must be positive."""
    try:
        seconds = parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be positive")
    return seconds
