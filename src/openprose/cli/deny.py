"""``prose deny RUN [ID]... [--all]``: refuse a waiting run's permission requests; the agent
is told its action was refused when ``prose resume RUN`` continues the run."""

from __future__ import annotations

import argparse

from openprose.cli.approve import add_decision_arguments, decide


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_decision_arguments(parser)


def run(args: argparse.Namespace) -> int:
    return decide(args, "deny")
