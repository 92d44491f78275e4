"""`tito-conformance report --badge PATH`: the level a report reached, as a shields.io-like SVG.

Hand-written SVG text, no fetch and no font metrics: text widths come from a fixed per-character
table, so the same report always gives the same bytes (a badge committed to a repository does
not churn). It says what the level object says and nothing more: "core ✓" and each extended
feature that passed, or "failed" when Core was not reached.
"""

from __future__ import annotations

import re
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from conformance.reporting.matrix import Column
from conformance.verdicts.levels import FAILED, INCOMPLETE, PASSED, REACHED

LABEL = "TITO"
GREEN, YELLOW, RED, GREY = "#4c1", "#dfb317", "#e05d44", "#9f9f9f"
_NARROW = set("fijlrtI.,:;'!|()[] ")
_WIDE = set("mwMW@%")
PAD = 10  # px either side of each half's text


def message(column: Column) -> tuple[str, str]:
    """The right half's words and colour: green when Core and every present extended feature
    passed, yellow when Core was reached but an extended feature failed, red below Core."""
    level = column.level
    if not level:
        return "no level reported", GREY
    if level.get("core") != REACHED:
        return FAILED, RED
    extended = dict(level.get("extended") or {})
    words = ["core ✓", *(f"+{name}" for name, state in extended.items() if state == PASSED)]
    short = any(state in (FAILED, INCOMPLETE) for state in extended.values())
    return " ".join(words), YELLOW if short else GREEN


def text_width(text: str) -> int:
    """Verdana 11 px, roughly: enough for a badge, identical on every machine."""
    return sum(4 if c in _NARROW else 10 if c in _WIDE else 7 for c in text)


def svg(label: str, words: str, color: str) -> str:
    """A flat two-part badge: `label` on grey, `words` on `color`."""
    left, right = text_width(label) + 2 * PAD, text_width(words) + 2 * PAD
    total = left + right
    title = f"{label}: {words}"
    texts = "".join(
        f'<text x="{x}" y="150" fill="#010101" fill-opacity=".3" transform="scale(.1)" '
        f'textLength="{width * 10}">{escape(t)}</text>'
        f'<text x="{x}" y="140" transform="scale(.1)" textLength="{width * 10}">'
        f"{escape(t)}</text>"
        for t, x, width in (  # x: the half's centre, in tenths of a pixel (scale(.1))
            (label, left * 5, text_width(label)),
            (words, left * 10 + right * 5, text_width(words)),
        )
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="20" role="img" '
        f"aria-label={quoteattr(title)}><title>{escape(title)}</title>"
        '<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" '
        'stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>'
        f'<clipPath id="r"><rect width="{total}" height="20" rx="3" fill="#fff"/></clipPath>'
        f'<g clip-path="url(#r)"><rect width="{left}" height="20" fill="#555"/>'
        f'<rect x="{left}" width="{right}" height="20" fill="{color}"/>'
        f'<rect width="{total}" height="20" fill="url(#s)"/></g>'
        '<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" '
        f'text-rendering="geometricPrecision" font-size="110">{texts}</g></svg>\n'
    )


def badge(column: Column) -> str:
    return svg(LABEL, *message(column))


def paths(columns: tuple[Column, ...], path: Path) -> list[Path]:
    """`path` for one report; for several, one file each beside it, named by its report:
    `badge.svg` → `badge-vllm.svg`, `badge-mock-scale-out.svg`."""
    if len(columns) == 1:
        return [path]
    out: list[Path] = []
    for column in columns:
        name = "-".join(p for p in (Path(column.source).stem, column.profile) if p)
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "report"
        candidate = path.with_name(f"{path.stem}-{slug}{path.suffix}")
        n = 2
        while candidate in out:  # two reports of the same name in different folders
            candidate = path.with_name(f"{path.stem}-{slug}-{n}{path.suffix}")
            n += 1
        out.append(candidate)
    return out
