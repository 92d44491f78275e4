"""The options every CLI of the kit shares, declared once: a flag's name, type and default are
a contract, so `run`, `fuzz`, `diff` and `live` all take them from here. A CLI passes its own
help only where the option means more there (live's `--timeout` bounds the diff and the fuzz
too)."""

from __future__ import annotations

import argparse
from pathlib import Path

from loopback.timeouts import DEFAULT_TIMEOUT_S, RUN_FACTOR


def add_timeout(
    parser: argparse.ArgumentParser, help: str = "per-request timeout, s (default %(default)s)"
) -> None:
    """`--timeout`: the one number every wait of the run's senders follows from (`Timeouts`)."""
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help=help)


def add_api_key(
    parser: argparse.ArgumentParser, help: str = "API key of the server under test"
) -> None:
    parser.add_argument("--api-key", help=help)


def add_deadline(parser: argparse.ArgumentParser, help: str = "whole-run deadline, s") -> None:
    """`--deadline`: a suite run's wall clock (`SuiteConfig.deadline_s`); by default it follows
    from `--timeout` (`Timeouts.run`), as every other wait does."""
    parser.add_argument(
        "--deadline",
        type=float,
        default=None,
        help=f"{help} (default: {RUN_FACTOR:g} x --timeout; the probe may spend half of it)",
    )


def add_reports(parser: argparse.ArgumentParser) -> None:
    """`--json-report` and `--junit-xml`: the run's report as JSON, and as JUnit XML."""
    parser.add_argument("--json-report", type=Path, metavar="PATH")
    parser.add_argument("--junit-xml", type=Path, metavar="PATH")
