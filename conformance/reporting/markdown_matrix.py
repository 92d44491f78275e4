"""The compatibility matrix as GitHub-flavoured Markdown: for a PR comment or a job summary.

A table per feature (GFM tables have no row groups), then the failures, each in a `<details>`
block with its evidence and reproducer in fenced code. Report strings are server-supplied: in
table cells and prose every Markdown and HTML metacharacter is backslash-escaped, and evidence
goes in code fences longer than any backtick run it contains, so nothing a server says can
become a link, markup or a broken table.
"""

from __future__ import annotations

import re
from html import escape

from conformance.reporting.matrix import LIMIT_KEYS, Cell, Column, Matrix, limit_text

TITLE = "TITO compatibility matrix"
_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+!|~&])")
CELL_WORDS = {"fail": "**FAIL**", "error": "**ERROR**", "warn": "*warn*"}


def text(value: str) -> str:
    """Inline text that stays text: Markdown and HTML metacharacters escaped, one line."""
    return _SPECIAL.sub(r"\\\1", " ".join(value.split()))


def code(value: str) -> str:
    """An inline code span `value` cannot end early (CommonMark: a longer backtick run)."""
    value = " ".join(value.split())
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{ticks}{pad}{value}{pad}{ticks}"


def fenced(body: str, info: str = "") -> str:
    """A code fence that `body` cannot close early, whatever backticks it holds."""
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body.rstrip()}\n{fence}"


def render(matrix: Matrix) -> str:
    lines = [f"# {TITLE}", "", "## Servers", ""]
    for i, column in enumerate(matrix.columns, 1):
        lines += _server(i, column)
    lines += ["## Requirements", ""]
    lines.append(
        "fail: a MUST failed; *warn*: a SHOULD or MAY failed; skip kinds: absent, limit "
        "(the configuration cannot exercise it), blocked (a requirement it builds on failed)."
    )
    lines.append("")
    labels = [f"{i}. {text(c.label)}" for i, c in enumerate(matrix.columns, 1)]
    head = "| requirement | level | " + " | ".join(labels) + " |"
    rule = "|---|---|" + "---|" * len(matrix.columns)
    for group in matrix.groups:
        lines += [f"### {text(group.feature)}", "", head, rule]
        for row in group.rows:
            cells = " | ".join(_cell(c) for c in row.cells)
            ident = code(row.id).replace("|", "\\|")  # GFM splits cells even inside code
            lines.append(f"| {ident} {text(row.title)} | {text(row.level)} | {cells} |")
        lines.append("")
    lines += _failures(matrix)
    return "\n".join(lines).rstrip() + "\n"


def _cell(cell: Cell) -> str:
    word = CELL_WORDS.get(cell.status, text(cell.label))
    return (
        f"{word} ({cell.attribution})" if cell.attribution and cell.status in CELL_WORDS else word
    )


def _server(index: int, column: Column) -> list[str]:
    """Differences first, as in the HTML page, then identity and limits."""
    s = column.summary
    lines = [f"### {index}. {text(column.label)}: {column.verdict}", ""]
    if column.differences is not None:
        if not column.differences:
            lines += ["No differences from the document.", ""]
        else:
            lines += ["Differences from the document:", ""]
            lines += [
                f"{n}. {code(d.requirement)} {text(d.level)} {text(d.title)}: {text(d.evidence)}"
                for n, d in enumerate(column.differences, 1)
            ]
            lines.append("")
    limits = "; ".join(
        f"{k} {text(limit_text(k, column.limits[k]))}" for k in LIMIT_KEYS if k in column.limits
    )
    if column.product:
        lines.append(f"- product: {text(column.product_text)}")
    lines += [
        f"- level: {text(column.level_text)}",
        f"- base URL: {text(column.base_url)}; server: {text(column.server)}"
        + (f"; profile: {text(column.profile)}" if column.profile else ""),
        f"- detected: {text(', '.join(column.detected_features) or 'nothing')}; "
        f"claimed: {text(', '.join(column.claimed_features) or 'nothing')}",
        f"- limits: {limits or 'not reported'}",
        f"- {s.get('passed', 0)} passed, {s.get('failed', 0)} failed, "
        f"{s.get('warnings', 0)} warnings, {s.get('skipped', 0)} skipped "
        f"({s.get('skipped_for_limits', 0)} for limits), {s.get('errors', 0)} errors",
        "",
    ]
    return lines


def _failures(matrix: Matrix) -> list[str]:
    """Every fail, warn and error, per server, each expandable to its evidence."""
    lines = ["## Failures", ""]
    found = False
    for i, column in enumerate(matrix.columns, 1):
        items = [
            (row, row.cells[i - 1])
            for row in matrix.rows
            if row.cells[i - 1].status in ("fail", "warn", "error")
        ]
        if not items:
            continue
        found = True
        lines += [f"### {i}. {text(column.label)}", ""]
        for row, cell in items:
            summary = f"{cell.status.upper()} {row.id} [{row.level}] {row.title}"
            lines += ["<details>", f"<summary>{escape(summary)}</summary>", ""]
            if cell.reason:
                lines += [fenced(cell.reason, "text"), ""]
            for check in cell.evidence:
                lines.append(code(check.name))
                lines.append("")
                if check.message and check.message != cell.reason:
                    lines += [fenced(check.message, "text"), ""]
                if check.reproducer:
                    lines += [fenced(check.reproducer, "sh"), ""]
            lines += ["</details>", ""]
    if not found:
        lines += ["None.", ""]
    return lines
