"""The drift of several releases: one text block per release, and the JSON matrix.

A difference seen in an earlier release of the same run is marked `(since V)`, so what a
release adds stands out from what the spec has lacked all along (the 0.32.0 run, which the
spec was written from, shows the latter); one the release before showed and this one does not
is listed under "no longer", so what a release fixed or brought (a model for a body read by
hand) is named too, not only left out.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .behaviour import Behaviour, Change
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


def gone(drifts: list[ReleaseDrift]) -> dict[str, tuple[str, list[Difference]]]:
    """Per release: the release read before it, and its differences this one no longer shows
    (a model that arrived, a field the spec had that came back)."""
    found: dict[str, tuple[str, list[Difference]]] = {}
    read = [d for d in drifts if d.error is None and d.note is None]
    for before, after in zip(read, read[1:], strict=False):
        now = {d.key for d in after.differences}
        found[after.version] = (before.version, [d for d in before.differences if d.key not in now])
    return found


def render_text(drifts: list[ReleaseDrift], spec_version: str) -> str:
    seen = first_seen(drifts)
    went = gone(drifts)
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
        before, dropped = went.get(drift.version, ("", []))
        if dropped:
            lines.append(f"  no longer (shown by {before})")
        for diff in dropped:
            lines.append(f"    = {diff.kind} {diff.subject}: {diff.detail}")
        lines.append("")
    return "\n".join(lines)


def to_json(drifts: list[ReleaseDrift], spec_version: str) -> dict[str, Any]:
    """Per release its differences; `matrix`: each difference key -> release -> shown."""
    seen = first_seen(drifts)
    went = gone(drifts)
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
                "gone": [
                    {"kind": x.kind, "subject": x.subject, "detail": x.detail}
                    for x in went.get(d.version, ("", []))[1]
                ],
            }
            for d in drifts
        ],
        "matrix": {
            key: {d.version: any(x.key == key for x in d.differences) for d in ran} for key in seen
        },
    }


def render_behaviour(behaviour: Behaviour) -> str:
    """Who answered, then per pair of releases each request answered differently."""
    lines = [
        f"Behaviour: {len(behaviour.cases)} requests (live/drift/corpus.py) answered by each "
        "release's own app over a simulated engine core"
    ]
    for release in behaviour.releases:
        if release.skipped is not None:
            lines.append(f"  vLLM {release.version}: skipped: {release.skipped}")
        else:
            took = f" in {release.seconds:.0f} s" if release.seconds else ""
            lines.append(f"  vLLM {release.version}: {len(release.outcomes)} answers{took}")
    by_pair: dict[tuple[str, str], list[Change]] = {}
    for change in behaviour.changes:
        by_pair.setdefault((change.before, change.after), []).append(change)
    for (before, after), found in by_pair.items():
        count = f"{len(found)} request{'s' * (len(found) != 1)}"
        lines.append(f"  {before} -> {after}: {count} answered differently")
        for change in found:
            lines.append(f"    ~ {change.kind} {change.case} ({change.request})")
            lines.append(f"        {before}: {change.was.describe()}")
            lines.append(f"        {after}: {change.now.describe()}")
    if not by_pair and sum(r.skipped is None for r in behaviour.releases) > 1:
        lines.append("  every request answered alike by every release")
    return "\n".join(lines) + "\n"


def behaviour_json(behaviour: Behaviour) -> dict[str, Any]:
    """Every release's answers (status, message, type, param), and the changes between them."""
    return {
        "requests": len(behaviour.cases),
        "releases": [
            {
                "version": r.version,
                "skipped": r.skipped,
                "seconds": r.seconds,
                "answers": {name: asdict(o) for name, o in r.outcomes.items()},
            }
            for r in behaviour.releases
        ],
        "changes": [
            {
                "request": c.case,
                "route": c.request,
                "kind": c.kind,
                "from": c.before,
                "to": c.after,
                "before": asdict(c.was),
                "after": asdict(c.now),
            }
            for c in behaviour.changes
        ],
    }


def _sign(kind: str) -> str:
    if kind.endswith("-added"):
        return "+"
    if kind.endswith(("-removed", "-missing")):
        return "-"
    return "~"
