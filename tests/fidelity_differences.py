"""Every difference the mock may show against a vLLM 0.32 capture, with its reason.

The intended ones come from `live/intended_differences.yaml` (its `captures`): ONE list for the
replay test and the live fidelity diff, so the same difference has the same reason in both.
Keyed by capture name and difference pattern (`Difference.pattern`: the location with list
indices as `[*]`; a pattern ending in `.*` covers everything below it). An entry that no longer
occurs fails `tests/test_mock_fidelity.py`, so this list cannot go stale. `label`:
- `intended`: the mock differs on purpose (see `mock_server/DIFFERENCES.md`, row number given);
- `mock-bug`: the mock is wrong; the test of that capture is a strict xfail until it is fixed.
  Mock bugs are listed here only (`MOCK_BUGS`): they are not part of the live list.
"""

from __future__ import annotations

from dataclasses import dataclass

from live.fidelity import load_intended

INTENDED = "intended"
MOCK_BUG = "mock-bug"


@dataclass(frozen=True)
class Listed:
    capture: str
    pattern: str
    reason: str
    label: str = INTENDED

    def covers(self, capture: str, pattern: str) -> bool:
        if capture != self.capture:
            return False
        if self.pattern.endswith(".*"):
            return pattern.startswith(self.pattern[:-1])
        return pattern == self.pattern


MOCK_BUGS: tuple[Listed, ...] = ()

LISTED: tuple[Listed, ...] = (
    *(
        Listed(capture, entry.pattern, f"{entry.reason} (DIFFERENCES.md #{entry.row})")
        for entry in load_intended()
        for capture in entry.captures
    ),
    *MOCK_BUGS,
)


def listed_for(capture: str) -> list[Listed]:
    return [entry for entry in LISTED if entry.capture == capture]
