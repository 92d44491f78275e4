"""The compatibility matrix as one self-contained HTML page, for people.

One file, inline CSS, no script and nothing fetched: it opens from a CI artefact or a mail
attachment, offline, and expands failures with `<details>`, which browsers do without
JavaScript. Every string from a report is escaped: reports carry what servers answered, and a
server's answer must not become markup in the page of someone reading about it.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from html import escape

from conformance.reporting.matrix import LIMIT_KEYS, Cell, Column, Group, Matrix, Row, limit_text

TITLE = "TITO compatibility matrix"
STATUS_ORDER = ("fail", "error", "warn", "skip", "pass", "none")
STYLE = """
:root { --pass:#e6f4ea; --pass-fg:#0d652d; --fail:#fce8e6; --fail-fg:#a50e0e;
  --warn:#fef7e0; --warn-fg:#7a4f00; --skip:#f1f3f4; --skip-fg:#5f6368;
  --error:#f3e8fd; --error-fg:#681da8; --line:#dadce0; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  margin: 0 1.5rem 2rem; color: #202124; }
h1 { font-size: 1.5rem; margin: 1rem 0 .25rem; } h2 { font-size: 1.2rem; margin: 1.5rem 0 .5rem; }
h3 { font-size: 1rem; margin: 0 0 .5rem; } h4 { font-size: .9rem; margin: .5rem 0 .25rem; }
code, pre { font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
.meta, .legend { color: #5f6368; margin: .25rem 0; }
.servers { display: grid; grid-template-columns: repeat(auto-fill, minmax(22rem, 1fr));
  gap: 1rem; align-items: start; }
.server { border: 1px solid var(--line); border-radius: 6px; padding: .75rem 1rem; }
.server dl { display: grid; grid-template-columns: max-content 1fr; gap: .1rem .75rem;
  margin: .5rem 0; }
.server dt { color: #5f6368; } .server dd { margin: 0; overflow-wrap: anywhere; }
.num { display: inline-block; min-width: 1.6em; text-align: center; border-radius: 3px;
  background: #202124; color: #fff; font-size: .8rem; margin-right: .3rem; }
.verdict { font-size: .75rem; padding: .05rem .4rem; border-radius: 3px; margin-left: .4rem; }
.verdict.PASSED { background: var(--pass); color: var(--pass-fg); }
.verdict.FAILED { background: var(--fail); color: var(--fail-fg); }
.differences { background: var(--fail); border-radius: 4px; padding: .25rem .75rem; }
.differences.none { background: var(--pass); }
.differences ol { margin: .25rem 0; padding-left: 1.25rem; } .differences li { margin: .2rem 0; }
table { border-collapse: collapse; } caption { text-align: left; color: #5f6368; }
.limits td, .limits th { border: 1px solid var(--line); padding: .1rem .5rem; text-align: left; }
.matrix th, .matrix td { border: 1px solid var(--line); padding: .2rem .4rem;
  vertical-align: top; text-align: left; }
.matrix thead th { position: sticky; top: 0; background: #fff; z-index: 2;
  box-shadow: 0 1px 0 var(--line); }
.matrix tbody th[scope=row] { font-weight: normal; max-width: 28rem; }
.matrix tr.group th { background: #f8f9fa; font-size: .95rem; padding-top: .5rem; }
.matrix tr.group td { background: #f8f9fa; color: #5f6368; font-size: .8rem; }
td.cell { min-width: 7rem; font-weight: 600; }
td.pass { background: var(--pass); color: var(--pass-fg); }
td.fail { background: var(--fail); color: var(--fail-fg); }
td.warn { background: var(--warn); color: var(--warn-fg); }
td.skip { background: var(--skip); color: var(--skip-fg); font-weight: normal; }
td.error { background: var(--error); color: var(--error-fg); }
td.none { color: #9aa0a6; font-weight: normal; }
td.cell summary { cursor: pointer; }
.evidence { font-weight: normal; color: #202124; max-width: 42rem; min-width: 20rem;
  margin-top: .25rem; }
.evidence p { margin: .25rem 0; overflow-wrap: anywhere; }
.evidence pre { background: #f8f9fa; border: 1px solid var(--line); padding: .4rem;
  white-space: pre-wrap; overflow-wrap: anywhere; max-height: 24rem; overflow: auto;
  margin: .25rem 0; }
.level { color: #5f6368; font-size: .8rem; }
"""


def render(matrix: Matrix, generated_by: str = "tito-conformance", when: str = "") -> str:
    """The whole page; `when` defaults to now (UTC)."""
    when = when or datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    n = len(matrix.columns)
    legend = " ".join(
        f'<span class="verdict" style="background:var(--{s});color:var(--{s}-fg)">{s}</span>'
        for s in ("pass", "fail", "warn", "skip", "error")
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(TITLE)}</title><style>{STYLE}</style></head><body>",
        f"<header><h1>{escape(TITLE)}</h1>",
        f'<p class="meta">{n} report{"s" if n != 1 else ""}, {len(matrix.rows)} requirements; '
        f"made by {escape(generated_by)} on {escape(when)}.</p>",
        f'<p class="legend">{legend} — fail: a MUST failed; warn: a SHOULD or MAY failed; '
        "skip kinds: absent (not there or not applicable), limit (the configuration cannot "
        "exercise it), blocked (a requirement it builds on failed). Click a cell to see why.</p>",
        "</header>",
        '<section id="servers"><h2>Servers</h2><div class="servers">',
        *(_server(i, c) for i, c in enumerate(matrix.columns, 1)),
        "</div></section>",
        '<section id="requirements"><h2>Requirements</h2>',
        '<table class="matrix"><thead><tr><th scope="col">Requirement</th>'
        '<th scope="col">Level</th>',
        *(
            f'<th scope="col"><a href="#server-{i}"><span class="num">{i}</span></a>'
            f"{escape(c.label)}</th>"
            for i, c in enumerate(matrix.columns, 1)
        ),
        "</tr></thead>",
        *(_group(g) for g in matrix.groups),
        "</table></section>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _server(index: int, column: Column) -> str:
    """A server's section: what it does differently first, then who it is and its limits."""
    s = column.summary
    facts = [
        *([("product", column.product_text)] if column.product else []),
        ("level", column.level_text),
        ("base URL", column.base_url),
        ("server", column.server),
        ("profile", column.profile or "—"),
        ("detected", ", ".join(column.detected_features) or "nothing"),
        ("claimed", ", ".join(column.claimed_features) or "nothing"),
        ("kit", _suite_text(column)),
        ("started", f"{column.started_at} ({column.duration_s:.1f} s)"),
    ]
    counts = (
        f"{s.get('passed', 0)} passed, {s.get('failed', 0)} failed, "
        f"{s.get('warnings', 0)} warnings, {s.get('skipped', 0)} skipped "
        f"({s.get('skipped_for_limits', 0)} for limits), {s.get('errors', 0)} errors"
    )
    return "\n".join(
        [
            f'<article class="server" id="server-{index}">',
            f'<h3><span class="num">{index}</span>{escape(column.label)}'
            f'<span class="verdict {column.verdict}">{column.verdict}</span></h3>',
            _differences(column),
            "<dl>",
            *(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts),
            "</dl>",
            _limits(column),
            f'<p class="counts">{escape(counts)}</p>',
            "</article>",
        ]
    )


def _suite_text(column: Column) -> str:
    suite = column.suite
    text = f"{suite.get('name', '')} {suite.get('version', '')}, spec {suite.get('spec_version')}"
    if suite.get("document_sha256"):
        text += f" (document sha256 {suite['document_sha256'][:12]})"
    return text


def _differences(column: Column) -> str:
    """The report's own short list of what to fix; absent from older reports, then omitted."""
    if column.differences is None:
        return ""
    if not column.differences:
        return '<div class="differences none"><h4>No differences from the document</h4></div>'
    items = "".join(
        f'<li><a href="#req-{escape(d.requirement)}"><code>{escape(d.requirement)}</code></a> '
        f'<span class="level">{escape(d.level)}</span> {escape(d.title)}: '
        f"{escape(d.evidence)}</li>"
        for d in column.differences
    )
    return (
        f'<div class="differences"><h4>Differences from the document '
        f"({len(column.differences)})</h4><ol>{items}</ol></div>"
    )


def _limits(column: Column) -> str:
    if not column.limits:
        return '<p class="meta">limits: not reported</p>'
    cells = "".join(
        f"<tr><th>{escape(k)}</th><td>{escape(limit_text(k, column.limits[k]))}</td></tr>"
        for k in LIMIT_KEYS
        if k in column.limits
    )
    return f'<table class="limits"><caption>limits</caption>{cells}</table>'


def _group(group: Group) -> str:
    columns = len(group.rows[0].cells) if group.rows else 0
    tallies = []
    for i in range(columns):
        counts = Counter(row.cells[i].status for row in group.rows)
        tallies.append(" · ".join(f"{counts[s]} {s}" for s in STATUS_ORDER if counts[s]))
    head = (
        f'<tr class="group"><th colspan="2" scope="rowgroup">{escape(group.feature)}</th>'
        + "".join(f"<td>{escape(t)}</td>" for t in tallies)
        + "</tr>"
    )
    return "<tbody>" + head + "\n" + "\n".join(_row(r) for r in group.rows) + "</tbody>"


def _row(row: Row) -> str:
    return (
        f'<tr id="req-{escape(row.id)}"><th scope="row" title="{escape(row.text)}">'
        f"<code>{escape(row.id)}</code> {escape(row.title)}</th>"
        f'<td class="level">{escape(row.level)}</td>'
        + "".join(_cell(c) for c in row.cells)
        + "</tr>"
    )


def _cell(cell: Cell) -> str:
    label = escape(cell.label)
    if not cell.expandable:
        return f'<td class="cell {cell.status}">{label}</td>'
    word = label.upper() if cell.status in ("fail", "error") else label
    return (
        f'<td class="cell {cell.status}"><details><summary>{word}</summary>'
        f'<div class="evidence">{_evidence(cell)}</div></details></td>'
    )


def _evidence(cell: Cell) -> str:
    """Why: the reason, then each check's message and the curl line that reproduces it."""
    parts = [f"<p>{escape(cell.reason)}</p>"] if cell.reason else []
    for check in cell.evidence:
        if check.message and check.message != cell.reason:
            parts.append(f"<p><code>{escape(check.name)}</code>: {escape(check.message)}</p>")
        else:
            parts.append(f"<p><code>{escape(check.name)}</code></p>")
        if check.reproducer:
            parts.append(f'<pre class="reproducer">{escape(check.reproducer)}</pre>')
    return "".join(parts) or "<p>(no detail recorded)</p>"
