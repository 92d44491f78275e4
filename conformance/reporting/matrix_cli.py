"""`tito-conformance report A.json B.json ... --html PATH [--markdown PATH]`.

Renders reports that were already written; it judges nothing, so it exits 0 whatever the
reports say (the verdict is `tito-conformance run`'s exit code) and 2 when it cannot do its job:
no output asked for, a report that cannot be read or is not a report, an output not writable.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "reports", nargs="+", type=Path, metavar="REPORT.json", help="JSON reports of `run`"
    )
    parser.add_argument("--html", type=Path, metavar="PATH", help="write the HTML page here")
    parser.add_argument("--markdown", type=Path, metavar="PATH", help="write GFM Markdown here")


def run(args: argparse.Namespace) -> int:
    # imported here: building `tito-conformance`'s parser must stay cheap for every command
    from .. import __version__
    from . import html_matrix, markdown_matrix
    from .matrix import build
    from .matrix_load import ReportFileError, load

    if args.html is None and args.markdown is None:
        return _error("nothing to write: give --html PATH and/or --markdown PATH")
    try:
        matrix = build(load(args.reports))
    except ReportFileError as exc:
        return _error(str(exc))
    outputs: list[tuple[Path, str]] = []
    if args.html is not None:
        outputs.append((args.html, html_matrix.render(matrix, f"tito-conformance {__version__}")))
    if args.markdown is not None:
        outputs.append((args.markdown, markdown_matrix.render(matrix)))
    for path, content in outputs:
        try:
            path.write_text(content, encoding="utf-8")
        except OSError as exc:
            return _error(f"{path}: cannot write: {exc}")
    failing = sum(c.status in ("fail", "error") for r in matrix.rows for c in r.cells)
    print(
        f"tito-conformance report: {len(matrix.columns)} report(s), {len(matrix.rows)} "
        f"requirements, {failing} failing cell(s); wrote {', '.join(str(p) for p, _ in outputs)}"
    )
    return 0


def _error(message: str) -> int:
    print(f"tito-conformance report: error: {message}", file=sys.stderr)
    return 2
