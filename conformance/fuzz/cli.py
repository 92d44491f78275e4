"""`tito-conformance fuzz`: exit 0 no failures, 1 failures, 2 usage or harness error."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from conformance.fuzz.settings import CI_MAX_EXAMPLES, FuzzConfig
from conformance.options import add_api_key, add_timeout


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tito-conformance fuzz",
        description="Spec-driven schemathesis fuzzing (positive, negative, streaming, "
        "stateful, out-of-vocabulary) of a TITO server.",
    )
    p.add_argument("--base-url", required=True, help="server under test")
    p.add_argument(
        "--max-examples",
        type=int,
        default=CI_MAX_EXAMPLES,
        help="cases per operation and mode (default %(default)s)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="the draw's seed; it reproduces a run only under the same PYTHONHASHSEED "
        "(tox fixes it to 0), since schemathesis's strategies follow set order",
    )
    add_api_key(p)
    p.add_argument(
        "--vocab-size",
        type=int,
        help="the server's vocabulary size (default: unknown, ids kept below 256)",
    )
    p.add_argument(
        "--operation",
        action="append",
        default=[],
        metavar="OPERATION_ID",
        help="fuzz only these operationIds (repeatable)",
    )
    p.add_argument(
        "--no-oov",
        action="store_true",
        help="skip the out-of-vocabulary group (it crashes vLLM 0.32 --tokens-only)",
    )
    add_timeout(p)
    p.add_argument(
        "--answer-budget",
        type=float,
        default=0.0,
        help="per-answer budget, s (default: 2/3 of --timeout)",
    )
    p.add_argument("--json-report", type=Path, metavar="PATH")
    p.add_argument("--junit-xml", type=Path, metavar="PATH")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.max_examples < 1:
        print("tito-conformance fuzz: error: --max-examples must be at least 1", file=sys.stderr)
        return 2
    from dataclasses import replace

    from conformance.fuzz.campaign import fuzz, probe_facts, summary_text, to_report
    from conformance.fuzz.expectations import operations
    from conformance.reporting import json_report, junit

    unknown = sorted(set(args.operation) - set(operations()))
    if unknown:
        print(
            f"tito-conformance fuzz: error: unknown operationId(s): {', '.join(unknown)}",
            file=sys.stderr,
        )
        return 2
    config = FuzzConfig(
        base_url=args.base_url.rstrip("/"),
        api_key=args.api_key,
        max_examples=args.max_examples,
        seed=args.seed,
        operations=tuple(args.operation),
        oov_group=not args.no_oov,
        request_timeout_s=args.timeout,
        answer_budget_s=args.answer_budget,
    )
    try:
        config = replace(config, facts=probe_facts(config, args.vocab_size))
        result = fuzz(config)
    except Exception as exc:  # unreachable server, a key we lack, a harness bug
        print(f"tito-conformance fuzz: harness error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(summary_text(result))
    report = to_report(result)
    if args.json_report:
        json_report.write([report], args.json_report)
    if args.junit_xml:
        junit.write([report], args.junit_xml)
    return 1 if result.failed else 0


if __name__ == "__main__":
    sys.exit(main())
