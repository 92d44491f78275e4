"""Each defect breaks what it declares and little else: the suite's checks judge only their own
fields, so one wrong field fails its requirement, not every check that saw the body.

For each defect the whole suite runs against the mock started with it (in the defect's profile,
with its flags) and its MUST/SHOULD failures are compared with the same setting without the
defect (one baseline per setting, shared): the newly failing IDs must include every declared
one, each shown by the exchange that failed it (a curl), stay within the declared set, and
number at most 3, and the run's verdict must follow the level (a MUST fails the run, a SHOULD
warns); across the catalogue the median is 1.
The runs live in `benchmarks/bench_blast_radius.py` (which prints the same figures); they start
together in a few worker processes when the module's first test asks, so each test mostly waits
for its own run.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator

import pytest

from benchmarks.bench_blast_radius import MAX_RADIUS, MEDIAN_RADIUS, Runs, default_workers
from mock_server.behaviour.defects import DEFECTS


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest) -> Iterator[Runs]:
    """The selected defects' runs, all submitted up front, in the order the tests ask."""
    selected = [
        item.callspec.params["defect"]
        for item in request.session.items
        if item.originalname == "test_blast_radius" and hasattr(item, "callspec")
    ]
    with Runs(default_workers()) as started:
        started.submit(selected)
        yield started


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_blast_radius(defect: str, runs: Runs) -> None:
    base = runs.baseline(defect)  # the correct mock passes on its own: test_conformance_mock
    result = runs.radius(defect)
    assert not result.problems(), (
        f"{defect} (declared {', '.join(result.declared)}) failed {', '.join(result.failed)} "
        f"beyond the baseline's {sorted(base.failing)}:\n" + "\n".join(result.problems())
    )
    assert result.size <= MAX_RADIUS


def test_median_blast_radius(runs: Runs) -> None:
    """Runs after the per-defect tests and reuses their runs (each defect runs once)."""
    sizes = [runs.radius(name).size for name in sorted(DEFECTS)]
    assert statistics.median(sizes) <= MEDIAN_RADIUS, sorted(sizes)
