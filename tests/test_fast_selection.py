"""The README's test command (`tox -e py`) stays fast and still tests every module.

`tests/selection.py` moves cases out of the fast command; these guard that table. The one
that matters, `test_every_module_is_imported_by_the_fast_selection`, is a static import scan,
not coverage data: coverage would need the whole fast run instrumented (every subprocess
too) before the check could run, while the scan reads ~370 files' syntax trees in about a
second and gives the same answer every time, whatever the machine's load. What it proves is
the floor a guard needs: a module it calls unreached is imported by no fast test, by any path
(a moved test's own imports do not count). What it cannot prove is that a reached module's
code runs: an import inside a function counts as soon as its file is reached (the house
imports lazily, "nothing clever at import time"), so coverage of lines stays the tests' job.

What counts as an import, in a file the fast selection reaches:
- `import` and `from ... import` statements at any depth, except under `if TYPE_CHECKING:`
  (never executed), and except inside a test function `selection.py` moves whole; importing
  `a.b.c` imports `a` and `a.b` too;
- the pytest plugins of pyproject's `pytest11` entry points (pytest loads them in every
  session), and the targets of an entry-point group named in the file (`entry_points(group=)`);
- `python -m X` spelled in the file, as argv items (`"-m", "X"`) or in a string (a script it
  writes): X, and `X.__main__` when X is a package;
- a module a script imports as its sibling (`from simcore import ...` in live/frontend/serve.py,
  which runs by path: its own folder is first on sys.path);
- the suite's check modules (`conformance/checks/test_*.py`), which the inner pytest session
  of `conformance.run.runner` collects by path (its `CHECKS_DIR`).
"""

from __future__ import annotations

import ast
import configparser
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import selection

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
PACKAGES = ("openapi", "loopback", "conformance", "mock_server", "live")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

NOT_IMPORTED_BY_ANY_TEST = {
    "live.prefetch": "CI's own step (.ci/run makes the release environments beside the tests); "
    "the live stages that use them are its test",
    "live.drift.__main__": "`python -m live.drift`, two lines around live.drift.cli's main, "
    "which the drift tests call (`tito-conformance drift` is the same main)",
}
"""Modules no test of the kit imports, fast or slow, each with who runs it instead. An entry
here that a fast test reaches fails the guard too: the list cannot go stale."""


def _name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


KIT = {_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}
HELPERS = {p.stem: p for p in TESTS.glob("*.py")}
"""Test files and their helpers, imported as `x` (tests/ is on sys.path) or as `tests.x`."""


def _moved_whole(path: Path) -> set[str]:
    return (
        {m.function for m in selection.MOVED if m.module == path.name and not m.keep}
        if path.parent == TESTS
        else set()
    )


def _statements(tree: ast.AST, skip: set[str]) -> Iterator[ast.AST]:
    """Every node, but not under `if TYPE_CHECKING:` nor in a function named in `skip`."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for other in node.orelse:
                yield other
                yield from _statements(other, skip)
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in skip:
            continue
        yield node
        yield from _statements(node, skip)


def _with_parents(dotted: str) -> Iterator[str]:
    parts = dotted.split(".")
    for i in range(1, len(parts) + 1):
        yield ".".join(parts[:i])


def _group_targets() -> dict[str, set[str]]:
    groups = PYPROJECT["project"]["entry-points"]
    return {g: {ref.split(":")[0] for ref in eps.values()} for g, eps in groups.items()}


GROUPS = _group_targets()
MINUS_M = re.compile(r"-m ([A-Za-z_][\w.]*)")


def imports(path: Path) -> set[str]:
    """The kit modules and test helpers that `path`, once imported, imports (see above)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    me = _name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()
    run: set[str] = set()  # `python -m X`
    for node in _statements(tree, _moved_whole(path)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, *([node.module] if node.module else [])])
            found |= {base, *(f"{base}.{a.name}" for a in node.names)}
            if not node.level and (path.parent / f"{base}.py").exists():
                found.add(_name(path.parent / f"{base}.py"))  # a script's sibling
        elif isinstance(node, ast.List | ast.Tuple):
            items = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            run |= {b for a, b in zip(items, items[1:], strict=False) if a == "-m"}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            run |= set(MINUS_M.findall(node.value))
            found |= GROUPS.get(node.value, set())
    found |= {f"{m}.__main__" if f"{m}.__main__" in KIT else m for m in run if isinstance(m, str)}
    return {
        name
        for dotted in found
        for name in _with_parents(dotted.removeprefix("tests."))
        if name in KIT or name in HELPERS
    }


def _checks_modules() -> set[str]:
    from conformance.run.runner import CHECKS_DIR

    return {_name(p) for p in CHECKS_DIR.glob("test_*.py")}


def _file(name: str) -> Path:
    return KIT[name] if name in KIT else HELPERS[name]


def fast_reach() -> set[str]:
    """Every kit module the fast selection imports: from the test files with a fast test
    (all of them but those `selection.py` moves whole), conftest and pytest's plugins."""
    seeds = {p.stem for p in TESTS.glob("test_*.py") if _has_fast_test(p)} | {"conftest"}
    seeds.discard(Path(__file__).stem)  # this file spells modules as data, and runs none
    seeds |= GROUPS["pytest11"]
    seen: set[str] = set()
    todo = sorted(seeds)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        found = imports(_file(name))
        if name == "conformance.run.runner":
            found |= _checks_modules()
        todo.extend(sorted(found - seen))
    return {name for name in seen if name in KIT}


def _has_fast_test(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    tests = {
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test")
    }
    return bool(tests - _moved_whole(path))


def test_every_module_is_imported_by_the_fast_selection() -> None:
    reached = fast_reach()
    missing = sorted(set(KIT) - reached - set(NOT_IMPORTED_BY_ANY_TEST))
    assert not missing, f"no test of the fast selection imports {missing}"
    stale = sorted(set(NOT_IMPORTED_BY_ANY_TEST) & reached)
    assert not stale, f"{stale} are imported now: take them off NOT_IMPORTED_BY_ANY_TEST"


def test_the_scan_sees_each_kind_of_import() -> None:
    """The rules above, each on a module that needs it (a rule lost would hide modules)."""
    assert "conformance.checks.test_core" in fast_reach(), "the suite's checks, by path"
    assert "mock_server.__main__" in imports(KIT["conformance.server.process"]), "-m argv"
    assert "live.standin" in imports(KIT["live.standin.install"]), "-m in a script"
    assert "live.frontend.simcore" in imports(KIT["live.frontend.serve"]), "a script's sibling"
    assert "live.fleet" in imports(KIT["live.cli"]), "function-level"
    assert "live.frontend.run" in imports(KIT["mock_server.cli"]), "an entry-point group"
    moved = selection.BY_TEST["test_live_gpu_standin.py", "test_the_gpu_path_end_to_end_with_dp"]
    assert not moved.keep, "a test moved whole: its own imports do not count"


MARKS = """
import sys, pytest
class Show:
    def pytest_collection_finish(self, session):
        for item in session.items:
            envs = sorted({m.name for m in item.iter_markers()} & set(sys.argv[1:]))
            print("MARKS", item.nodeid, *envs, sep="\\t")
sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *MODULES], [Show()]))
"""


@pytest.fixture(scope="module")
def marks() -> dict[str, list[str]]:
    """Node id -> its environment markers, for every case of the modules the table names
    (one collection in a subprocess, as `tox -e py` would collect them)."""
    modules = sorted({f"tests/{m.module}" for m in selection.MOVED})
    done = subprocess.run(
        [sys.executable, "-c", MARKS.replace("*MODULES", repr(modules)[1:-1]), *selection.ENVS],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = [line.split("\t")[1:] for line in done.stdout.splitlines() if line.startswith("MARKS\t")]
    return {row[0]: row[1:] for row in rows}


def test_each_moved_case_runs_in_its_environment_and_only_there(
    marks: dict[str, list[str]],
) -> None:
    """Every function the table names exists; its `keep` cases carry no environment's marker
    (the fast command runs them), every other case exactly its environment's."""
    for moved in selection.MOVED:
        prefix = f"tests/{moved.module}::{moved.function}"
        cases = {
            node[len(prefix) :].strip("[]"): envs
            for node, envs in marks.items()
            if re.match(re.escape(prefix) + r"($|\[)", node)
        }
        assert cases, f"{prefix} collects nothing"
        assert {c for c, envs in cases.items() if not envs} == set(moved.keep), prefix
        assert all(envs == [moved.env] for c, envs in cases.items() if c not in moved.keep)
        assert len(cases) > len(moved.keep), f"{prefix}: nothing moved"
    moved_functions = {(m.module, m.function) for m in selection.MOVED}
    strays = [
        node
        for node, envs in marks.items()
        if envs and tuple(node.split("/")[-1].split("[")[0].split("::")) not in moved_functions
    ]
    assert not strays, "marked, but not by the table"


def test_tox_runs_the_fast_selection_and_ci_runs_the_rest() -> None:
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(ROOT / "tox.ini", encoding="utf-8")
    assert f'-m "{selection.FAST}"' in ini["testenv"]["commands"]
    for env in selection.ENVS:
        assert f"-m {env} " in ini[f"testenv:{env}"]["commands"], env
    slow = " or ".join(selection.ENVS)
    assert f'-m "{slow}"' in ini["testenv:slow"]["commands"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^(TITO_TEST_WORKERS=\d+ )?stage python3 bootstrap\.py -e slow$", ci, re.M), (
        "CI runs the rest"
    )
    markers = {line.split(":")[0] for line in PYPROJECT["tool"]["pytest"]["ini_options"]["markers"]}
    assert markers == set(selection.ENVS)
