"""The house's plan: each package in layers whose imports only go down, a few modules at the
top, and no module name said twice. Read with `ast` (tests/test_profiles.py's import graph),
nothing imported."""

from __future__ import annotations

from collections import Counter

import pytest

import conformance
import mock_server
from tests.test_profiles import ROOT, import_graph

LAYERS = {"conformance": conformance.LAYERS, "mock_server": mock_server.LAYERS}
"""Each package's plan, its rooms from the bottom up: a module may import its own room and the
rooms below it, never one above."""

TOP_MODULES_AT_MOST = 12
REPEATABLE = {"__init__", "__main__", "cli"}
"""Module names every package may have more than one of: a package's face, `python -m`, a
subcommand's arguments."""


def _room(package: str, module: str) -> str:
    rest = module.removeprefix(package).lstrip(".")
    return rest.split(".")[0]


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_imports_only_go_down(package: str) -> None:
    order = {room: i for i, room in enumerate(LAYERS[package])}
    graph = import_graph((package,))
    rooms = {_room(package, m) for m in graph}
    assert rooms <= set(order), f"rooms not in the plan: {sorted(rooms - set(order))}"
    upward = sorted(
        (module, target)
        for module, targets in graph.items()
        for target in targets
        if order[_room(package, target)] > order[_room(package, module)]
    )
    assert not upward, f"imports that go up: {upward}"


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_few_modules_at_the_top(package: str) -> None:
    top = sorted(p.stem for p in (ROOT / package).glob("*.py") if p.stem != "__init__")
    assert len(top) <= TOP_MODULES_AT_MOST, top


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_no_module_name_repeats(package: str) -> None:
    names = Counter(
        p.stem for p in (ROOT / package).rglob("*.py") if p.stem not in REPEATABLE
    ) + Counter(p.name for p in (ROOT / package).rglob("*") if (p / "__init__.py").exists())
    repeated = {name: n for name, n in names.items() if n > 1}
    assert not repeated, repeated


def test_the_plan_lists_every_room_there_is() -> None:
    for package, layers in LAYERS.items():
        there = {
            p.stem if p.is_file() else p.name
            for p in (ROOT / package).iterdir()
            if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()
        }
        assert there <= set(layers), sorted(there - set(layers))
        assert set(layers) - {""} - there <= {"options"}, sorted(set(layers) - {""} - there)
