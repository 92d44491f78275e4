"""The drift of several releases: one text block per release, and the JSON matrix.

A difference seen in an earlier release of the same run is marked `(since V)`, so what a
release adds stands out from what the spec has lacked all along (the 0.32.0 run, which the
spec was written from, shows the latter).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .compare import Difference

_GROUPS = (
    ("routes", ("route-", "body-")),
    ("fields", ("field-", "required-", "nullable-", "default-")),
    ("enums", ("enum-",)),
    ("models", ("model-",)),
)


@dataclass
class ReleaseDrift:
    version: str
    source: str = ""
    error: str | None = None
    note: str | None = None
    differences: list[Difference] = field(default_factory=list)


def first_seen(drifts: list[ReleaseDrift]) -> dict[str, str]:
    """Difference key -> the first release of the run that shows it."""
    seen: dict[str, str] = {}
    for drift in drifts:
        for diff in drift.differences:
            seen.setdefault(diff.key, drift.version)
    return seen


def render_text(drifts: list[ReleaseDrift], spec_version: str) -> str:
    seen = first_seen(drifts)
    lines: list[str] = []
    for drift in drifts:
        head = f"vLLM {drift.version}" + (f" ({drift.source})" if drift.source else "")
        if drift.error is not None:
            lines += [f"{head}: error: {drift.error}", ""]
            continue
        if drift.note is not None:
            lines += [f"{head}: {drift.note}", ""]
            continue
        count = len(drift.differences)
        lines.append(f"{head}: {count} difference{'s' * (count != 1)} from the spec {spec_version}")
        for title, prefixes in _GROUPS:
            group = [d for d in drift.differences if d.kind.startswith(prefixes)]
            if group:
                lines.append(f"  {title}")
            for diff in group:
                since = seen[diff.key]
                mark = f"  (since {since})" if since != drift.version else ""
                lines.append(f"    {_sign(diff.kind)} {diff.subject}: {diff.detail}{mark}")
        lines.append("")
    return "\n".join(lines)


def to_json(drifts: list[ReleaseDrift], spec_version: str) -> dict[str, Any]:
    """Per release its differences; `matrix`: each difference key -> release -> shown."""
    seen = first_seen(drifts)
    ran = [d for d in drifts if d.error is None]
    return {
        "spec_version": spec_version,
        "releases": [
            {
                "version": d.version,
                "source": d.source,
                "error": d.error,
                "note": d.note,
                "differences": [
                    {
                        "kind": x.kind,
                        "subject": x.subject,
                        "detail": x.detail,
                        "since": seen[x.key],
                    }
                    for x in d.differences
                ],
            }
            for d in drifts
        ],
        "matrix": {
            key: {d.version: any(x.key == key for x in d.differences) for d in ran} for key in seen
        },
    }


def _sign(kind: str) -> str:
    if kind.endswith("-added"):
        return "+"
    if kind.endswith(("-removed", "-missing")):
        return "-"
    return "~"
