"""`tito-conformance`: run the suite against a server, or against the embedded mock."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import TYPE_CHECKING

from conformance.options import add_api_key, add_deadline, add_reports, add_timeout
from conformance.profiles import MAIN_PROFILES, PROFILES
from conformance.reporting.provenance import VersionAction
from conformance.verdicts.results import Report, exit_code
from conformance.wire import Timeouts

if TYPE_CHECKING:
    import threading

    from conformance.server.features import Features
    from conformance.server.limits import Limits
    from conformance.session import SuiteConfig

# Subcommands that live in other packages register under this entry-point group (see
# pyproject.toml), so `live`, which composes the suite and the mock, can add `tito-conformance
# live` without the suite importing it.
COMMANDS_GROUP = "tito_conformance.commands"
FUZZ_EXAMPLES = 10
"""`run`'s small fuzz budget (cases per operation and mode; `tito-conformance fuzz` does more)."""
COMMAND_HELP = {
    "fuzz": "schemathesis fuzzing of the spec against a server",
    "live": "start a real vLLM per profile and run the suite against it",
    "diff": "compare two servers' answers (e.g. the mock against a real vLLM)",
    "drift": "how vLLM releases' TITO surface differs from the spec (read from their wheels)",
    "load": "a rollout-shaped load, every answer judged by the suite's rules (on Locust)",
}


def _commands() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=COMMANDS_GROUP)}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tito-conformance",
        description="Conformance suite for vLLM's Tokens In <> Tokens Out (TITO) API.",
    )
    parser.add_argument("--version", action=VersionAction)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser(
        "run",
        help="run the suite (against --base-url, or the embedded mock in every profile)",
        description="Exit 0 when every applicable MUST requirement passed, 1 when one failed, "
        "2 on a usage or harness error, 3 when nothing failed but some check was inconclusive "
        "(a router duty it could not exercise). An in-flight action that no plan could make "
        "land is a skip of kind limit, never 3.",
    )
    run.add_argument("--base-url", help="server under test; omit to run the embedded mock")
    add_api_key(run)
    run.add_argument(
        "--engine",
        action="append",
        default=[],
        metavar="URL",
        help="an engine behind --base-url (a router), reachable directly; repeat per engine. "
        "Adds the router's duties (ROUTER-*), reads engine state from every engine, and "
        "attributes each failure to the router or an engine",
    )
    run.add_argument(
        "--expect", default="", help="comma-separated claimed features (see `features`)"
    )
    run.add_argument(
        "--product",
        type=Path,
        metavar="FILE",
        help="YAML or JSON naming the server under test (name, version, url, contact, "
        "deployment); recorded in the JSON report and shown by `report`",
    )
    add_reports(run)
    run.add_argument("-k", dest="keyword", metavar="EXPR", help="pytest -k expression on checks")
    run.add_argument(
        "--requirement",
        action="append",
        default=[],
        metavar="ID",
        help="run only the checks of these requirement IDs (repeatable)",
    )
    add_timeout(run)
    add_deadline(run)
    run.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="check modules run side by side (default: 1 on a server that answers within "
        "0.2 s, else up to 4 within its max_num_seqs); 1 runs every check in one session",
    )
    run.add_argument(
        "--profile",
        action="append",
        choices=sorted(PROFILES),
        default=[],
        help=f"embedded mock only: profiles to run (default: {', '.join(MAIN_PROFILES)})",
    )
    run.add_argument(
        "--mock-defect",
        action="append",
        default=[],
        metavar="NAME",
        help="embedded mock only: start the mock with this defect (the suite should fail)",
    )
    run.add_argument(
        "--fuzz-examples",
        type=int,
        default=FUZZ_EXAMPLES,
        metavar="N",
        help="also fuzz the server (schemathesis, see `fuzz`) with N cases per operation and "
        "mode, folded into the report; 0 disables; skipped with -k/--requirement "
        "(default %(default)s)",
    )
    run.add_argument("-v", "--verbose", action="store_true", help="also list skips and reasons")
    requirements = sub.add_parser(
        "requirements",
        help="print the requirement catalogue",
        description="With --coverage: exit 1 when a MUST requirement has no way to fail.",
    )
    requirements.add_argument(
        "--coverage",
        action="store_true",
        help="print which ways the kit has to fail each requirement (suite, fuzz, diff, defect)",
    )
    requirements.add_argument(
        "--json", action="store_true", help="print the coverage matrix as JSON (implies --coverage)"
    )
    from conformance.reporting import matrix_cli

    matrix_cli.add_arguments(
        sub.add_parser(
            "report",
            help="render JSON reports as one compatibility matrix (HTML, Markdown)",
            description="Exit 0 when written (whatever the reports say), 2 on a bad report "
            "or a usage error.",
        )
    )
    sub.add_parser("features", help="print the feature names --expect accepts")
    for name in sorted(_commands()):
        sub.add_parser(name, help=COMMAND_HELP.get(name, name), add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = _commands()
    if argv and argv[0] in commands:
        return _delegate(commands[argv[0]], argv[1:])
    args = _parser().parse_args(argv)
    if args.command == "requirements":
        return _print_requirements(args)
    if args.command == "report":
        from conformance.reporting import matrix_cli

        return matrix_cli.run(args)
    if args.command == "features":
        from conformance.server.features import KNOWN_FEATURES

        print("\n".join(KNOWN_FEATURES))
        return 0
    return _run(args)


def _delegate(command: EntryPoint, argv: list[str]) -> int:
    try:
        entry = command.load()
    except (ImportError, AttributeError) as exc:
        print(f"tito-conformance {command.name}: unavailable ({exc})", file=sys.stderr)
        return 2
    try:
        return int(entry(argv))
    except SystemExit as exc:  # argparse's usage errors: keep `main` returning the code
        return exc.code if isinstance(exc.code, int) else 2


def _print_requirements(args: argparse.Namespace) -> int:
    if args.coverage or args.json:
        from conformance import coverage

        return coverage.main(as_json_output=args.json)
    from conformance.requirements import all_requirements

    for req in all_requirements():
        print(f"{req.id:<13} {req.level.value:<6} {req.feature.value:<16} {req.title}")
    return 0


def _run(args: argparse.Namespace) -> int:
    from conformance.reporting import json_report, junit, terminal
    from conformance.session import SuiteConfig

    expect = frozenset(f.strip() for f in args.expect.split(",") if f.strip())
    wanted = frozenset(args.requirement) or None
    try:
        from conformance.product import load as load_product
        from conformance.requirements import by_id

        product = load_product(args.product) if args.product else None

        unknown = sorted((wanted or set()) - set(by_id()))
        if unknown:
            raise ValueError(f"unknown requirement id(s): {', '.join(unknown)}")
        base = SuiteConfig(
            base_url=args.base_url or "http://127.0.0.1",
            api_key=args.api_key,
            expect=expect,
            timeout=args.timeout,
            stream_deadline=Timeouts(args.timeout).stream,
            deadline_s=args.deadline or 0.0,
            requirement_ids=wanted,
            keyword=args.keyword,
            workers=args.workers,
            engines=tuple(args.engine),
        )
    except ValueError as exc:
        print(f"tito-conformance: error: {exc}", file=sys.stderr)
        return 2
    if args.engine and not args.base_url:
        print("tito-conformance: error: --engine needs --base-url (the router)", file=sys.stderr)
        return 2
    if args.base_url and (args.profile or args.mock_defect):
        print(
            "tito-conformance: error: --profile/--mock-defect need the embedded mock "
            "(omit --base-url)",
            file=sys.stderr,
        )
        return 2
    fuzz_examples = 0 if (args.keyword or wanted) else max(0, args.fuzz_examples)
    try:
        if args.base_url:
            reports = [run_fuzzed(base, fuzz_examples)]
        else:
            reports = _run_embedded(
                base, args.profile or list(MAIN_PROFILES), args.mock_defect, fuzz_examples
            )
    except RuntimeError as exc:  # the embedded server could not start
        print(f"tito-conformance: error: {exc}", file=sys.stderr)
        return 2
    for report in reports:
        report.product = product
    print(terminal.render(reports, verbose=args.verbose))
    if args.json_report:
        json_report.write(reports, args.json_report)
    if args.junit_xml:
        junit.write(reports, args.junit_xml)
    for report in reports:
        if report.harness_error:
            print(f"tito-conformance: harness error: {report.harness_error}", file=sys.stderr)
    return exit_code(reports)


def run_fuzzed(config: SuiteConfig, examples: int) -> Report:
    """One run of the suite with a small fuzz of the same server folded in: beside the checks
    when the runner finds room for it (a slow server's waits overlap), after them otherwise."""
    from conformance.run.runner import run

    return run(config, beside=_Fuzzing(config, examples) if examples else None)


class _Fuzzing:
    """The small fuzz (see `conformance.fuzz`), as the runner runs it beside the checks
    (`runner.Beside`), or after them (`fold`)."""

    def __init__(self, config: SuiteConfig, examples: int) -> None:
        self.config = config
        self.examples = examples
        self.ends = time.monotonic() + config.deadline_s  # the run's, which starts now
        self.fuzzed: Report | None = None
        self.error = ""
        self.ran = False

    def __call__(
        self, features: Features | None, limits: Limits | None, gate: threading.Event | None
    ) -> None:
        from conformance.fuzz import fuzz_report
        from conformance.fuzz.campaign import facts_from

        self.ran = gate is not None
        try:
            self.fuzzed = fuzz_report(
                self.config.base_url,
                self.config.api_key,
                max_examples=self.examples,
                timeout_s=self.config.timeout,
                facts=None if features is None or limits is None else facts_from(features, limits),
                label_gate=gate,
                ends=self.ends,
            )
        except Exception as exc:  # the fuzzer's probe or a harness bug: say so, do not hide it
            self.error = f"fuzz: {type(exc).__name__}: {exc}"

    def fold(self, report: Report) -> Report:
        """`report` with the fuzz folded in (run now if it did not run beside the checks);
        the run's wall time stays the report's when it ran beside."""
        from conformance.fuzz import merge
        from conformance.reporting.progress import Progress

        if report.harness_error:
            return report
        beside = self.ran
        if not beside:
            progress = Progress(f"   [{self.config.profile or self.config.base_url}] ")
            progress.update(f"fuzzing, {self.examples} cases per operation")
            try:
                features, limits = report.learned or (None, None)
                self(features, limits, None)
            finally:
                progress.clear()
        if self.fuzzed is None:
            report.harness_error = self.error or "fuzz: it did not run"
            return report
        duration = report.duration_s
        merge(report, self.fuzzed)
        if beside:
            report.duration_s = duration
        return report


def _run_embedded(
    base: object, profiles: list[str], defects: list[str], fuzz_examples: int = 0
) -> list[Report]:
    from dataclasses import replace

    from conformance.run.embedded import embedded_mock
    from conformance.session import SuiteConfig

    assert isinstance(base, SuiteConfig)
    reports = []
    for name in profiles:
        with embedded_mock(name, defects=defects) as (server, started):
            config = replace(
                base,
                base_url=server.base_url,
                api_key=started.api_key,
                expect=base.expect | started.expect,
                profile=name,
            )
            reports.append(run_fuzzed(config, fuzz_examples))
    return reports


if __name__ == "__main__":
    sys.exit(main())
