"""`tito-conformance diff`: one corpus, two servers, every structural difference.

Exit 0 when no case differs, 1 when one does (or a server could not be reached), 2 on a
usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from conformance.diff.case import PROFILES, Case
from conformance.diff.corpus import CORPUS, cases_for
from conformance.diff.send import Target, request_of, send
from conformance.diff.structure import Answer, Difference, compare_answers
from conformance.options import add_api_key, add_timeout
from conformance.wire import ServerBroke

KEEP_BODY = 64 * 1024


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tito-conformance diff",
        description="Send one corpus of requests to two servers (same profile, same flags) and "
        "report every difference in status, content type, JSON key structure and SSE event "
        "structure. Exit 0: none; 1: differences; 2: usage error.",
    )
    parser.add_argument("--reference", required=True, metavar="URL", help="e.g. real vLLM")
    parser.add_argument("--candidate", required=True, metavar="URL", help="e.g. the mock")
    add_api_key(parser, help="key of both servers (api-key profiles)")
    parser.add_argument("--json-report", type=Path, metavar="PATH")
    parser.add_argument("--profile", default="scale-out", choices=PROFILES)
    parser.add_argument(
        "--case",
        action="append",
        default=[],
        metavar="NAME",
        help="run only these cases (repeatable)",
    )
    parser.add_argument(
        "--skip-case",
        action="append",
        default=[],
        metavar="NAME",
        help="leave these cases out (repeatable): e.g. one that crashes the reference server",
    )
    add_timeout(parser)
    parser.add_argument(
        "--no-key-order",
        action="store_true",
        help="do not report differences in the order of JSON keys",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    cases = cases_for(args.profile)
    # a case of another profile may be skipped here (the live diff skips per release, not
    # per profile); a name no profile has is a typo
    unknown = sorted(set(args.case) - {c.name for c in cases})
    unknown += sorted(set(args.skip_case) - {c.name for c in CORPUS})
    if unknown:
        print(f"unknown case for profile {args.profile}: {', '.join(unknown)}", file=sys.stderr)
        return 2
    if args.case:
        cases = [c for c in cases if c.name in args.case]
    cases = [c for c in cases if c.name not in args.skip_case]
    if args.profile in ("api-key", "tokens-only-api-key") and not args.api_key:
        print(f"--profile {args.profile} needs --api-key", file=sys.stderr)
        return 2
    reference = Target(args.reference.rstrip("/"), args.api_key, args.timeout)
    candidate = Target(args.candidate.rstrip("/"), args.api_key, args.timeout)
    started = time.monotonic()
    try:
        results = [run_case(case, reference, candidate, not args.no_key_order) for case in cases]
    finally:
        reference.close()
        candidate.close()
    elapsed = time.monotonic() - started
    differing = [r for r in results if r["differences"]]
    for result in differing:
        print(f"{result['case']} ({result['covers']}):")
        for difference in result["differences"]:
            print(
                f"  {difference['location']}: {difference['kind']}: "
                f"reference {difference['reference']}, candidate {difference['candidate']}"
            )
    print(
        f"diff {args.profile}: {len(cases)} cases, {len(differing)} with differences, "
        f"{sum(len(r['differences']) for r in results)} differences, {elapsed:.1f} s"
    )
    if args.json_report:
        report = {
            "profile": args.profile,
            "reference": args.reference,
            "candidate": args.candidate,
            "elapsed_s": round(elapsed, 3),
            "cases": results,
        }
        args.json_report.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 1 if differing else 0


def run_case(case: Case, reference: Target, candidate: Target, key_order: bool) -> dict[str, Any]:
    """Both answers, their differences, and a transcript of each (for refreshing captures)."""
    answers: dict[str, Answer | str] = {}
    for side, target in (("reference", reference), ("candidate", candidate)):
        try:
            answers[side] = send(case, target)
        except (httpx.HTTPError, ServerBroke) as exc:  # ServerBroke: sent by the kit's client
            answers[side] = f"{type(exc).__name__}: {exc}"
    left, right = answers["reference"], answers["candidate"]
    if isinstance(left, Answer) and isinstance(right, Answer):
        found = compare_answers(request_of(case), left, right, key_order=key_order)
    else:
        found = [Difference("transport", "no answer", _said(left), _said(right))]
    return {
        "case": case.name,
        "covers": case.covers,
        "request": {
            "method": case.method,
            "path": case.path,
            "headers": case.headers,
            "body": case.body,
            "raw": case.raw,
            "auth": case.auth,
            "abort": case.abort.path if case.abort else None,
        },
        "differences": [d.as_dict() for d in found],
        "transcript": {side: _transcript(answer) for side, answer in answers.items()},
    }


def _said(answer: Answer | str) -> str:
    return answer if isinstance(answer, str) else f"HTTP {answer.status}"


def _transcript(answer: Answer | str) -> dict[str, Any]:
    if isinstance(answer, str):
        return {"error": answer}
    out: dict[str, Any] = {"status": answer.status, "content_type": answer.content_type}
    if answer.events is not None:
        out["events"] = [e.get("data") for e in answer.events]
    else:
        out["body"] = answer.body[:KEEP_BODY].decode("utf-8", "replace")
    return out
