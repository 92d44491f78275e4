"""The profile registry is the only place server flags live, and the packages import one way.

`conformance.profiles` spells each profile once; the mock reads its flags as meant, the live
backends start vLLM and the mock with exactly those flags, and the live package never defines
its own. The import graphs (every `import`, function-level ones included) are checked with
`ast`, without importing anything.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.profiles import (
    ALL_PROFILES,
    API_KEY,
    DEV_MODE_VAR,
    MAIN_PROFILES,
    MOCK_KNOBS,
    PROFILES,
    SPEC_PROFILE_FLAGS,
    Profile,
)
from live.profiles import BACKENDS, LIVE_PROFILES, Backend, live_profile, profiles_for
from mock_server.behaviour.config import parse_args

ROOT = Path(__file__).parents[1]

# ----------------------------------------------------------------------------- the registry


def test_registry_names_and_views() -> None:
    assert all(name == p.name for name, p in ALL_PROFILES.items())
    assert set(PROFILES) == {n for n, p in ALL_PROFILES.items() if not p.gpu_only}
    assert set(MAIN_PROFILES) <= set(PROFILES)
    assert set(LIVE_PROFILES) <= set(ALL_PROFILES)
    assert [n for n in ALL_PROFILES if ALL_PROFILES[n].gpu_only] == ["dp"]


@pytest.mark.parametrize("profile", ALL_PROFILES.values(), ids=lambda p: p.name)
def test_claims_follow_the_profile(profile: Profile) -> None:
    assert profile.spec_profile in profile.claims
    assert ("api-key" in profile.claims) == (profile.api_key is not None)
    assert ("data-parallel" in profile.claims) == (profile.data_parallel > 1)
    if profile.api_key is not None:
        assert profile.api_key == API_KEY


@pytest.mark.parametrize("profile", ALL_PROFILES.values(), ids=lambda p: p.name)
def test_the_mock_reads_each_profile_as_meant(profile: Profile) -> None:
    config = parse_args([*profile.flags, *MOCK_KNOBS], profile.env)
    assert config.enable_scale_out == (profile.spec_profile == "scale-out")
    assert config.tokens_only == (profile.spec_profile == "tokens-only")
    assert tuple(config.api_keys) == ((profile.api_key,) if profile.api_key else ())
    assert config.data_parallel_size == profile.data_parallel
    assert config.dev_mode == profile.dev_mode


def test_unknown_spec_profile_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown spec profile"):
        Profile("x", "scale-in", frozenset())


# ------------------------------------------------------------- live derives from the registry


def test_live_profiles_are_the_registrys() -> None:
    assert all(live_profile(name) is ALL_PROFILES[name] for name in LIVE_PROFILES)
    for kind in BACKENDS:
        assert [p.name for p in profiles_for(kind)] == list(MAIN_PROFILES)


@pytest.mark.parametrize("name", LIVE_PROFILES)
@pytest.mark.parametrize("kind", BACKENDS)
def test_every_backend_starts_the_registry_flags(kind: str, name: str) -> None:
    profile = ALL_PROFILES[name]
    backend = Backend(kind, "m", extra_args=("--extra",))
    if kind in ("cpu", "frontend") and profile.gpu_only:
        with pytest.raises(ValueError, match="GPU"):
            backend.argv(profile, 1)
        return
    tail = [*profile.flags, "--extra"]
    assert backend.argv(profile, 1)[-len(tail) :] == tail
    assert backend.env(profile).items() >= profile.env.items()


@pytest.mark.parametrize("name", [n for n in LIVE_PROFILES if not ALL_PROFILES[n].gpu_only])
def test_mock_and_vllm_get_the_same_flags(name: str) -> None:
    profile = live_profile(name)
    mock = Backend("mock", "tiny").argv(profile, 1)
    cpu = Backend("cpu", "tiny").argv(profile, 1)
    assert mock[1:3] == ["-m", "mock_server"] and cpu[2] == "vllm.entrypoints.openai.api_server"
    assert mock[3:] == cpu[3:]
    assert Backend("mock", "tiny").env(profile) == Backend("cpu", "tiny").env(profile)


FLAG_LITERALS = {*(f for flags in SPEC_PROFILE_FLAGS.values() for f in flags)}
FLAG_LITERALS |= {"--data-parallel-size", "-dp", DEV_MODE_VAR}
DERIVED = [
    *sorted((ROOT / "live").glob("*.py")),
    *(ROOT / "tests" / n for n in ("test_diff_cli.py", "test_fuzz_mock.py", "fidelity_replay.py")),
    ROOT / "tests" / "test_live_profiles.py",
]


@pytest.mark.parametrize("path", DERIVED, ids=lambda p: p.name)
def test_no_profile_flag_is_spelled_outside_the_registry(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    spelled = {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in FLAG_LITERALS
    }
    assert not spelled, f"{path.name} spells {sorted(spelled)}: read conformance.profiles"


# ------------------------------------------------------------------------------ import graphs


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> Iterator[str]:
    """Every module of `modules` that `path` imports, at any depth of its code (function-level
    and `if TYPE_CHECKING:` imports included: a cycle through them is still a tangle).

    `from pkg import name` is an edge to `pkg.name` when that is a module, else to `pkg`.
    """
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            if node.level:
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            for alias in node.names:
                if f"{source}.{alias.name}" in modules:
                    yield f"{source}.{alias.name}"
                elif source in modules:
                    yield source


PACKAGES = ("openapi", "loopback", "conformance", "mock_server", "live")
MAY_IMPORT = {
    "openapi": set(),
    "loopback": set(),
    "conformance": {"openapi", "loopback"},
    "mock_server": {"openapi", "loopback"},
    "live": {"openapi", "loopback", "conformance", "mock_server"},
}
"""STYLE.md section 6: openapi and loopback import nothing of ours; conformance and mock_server
never import each other; live composes them."""


def import_graph(packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """Module -> the modules of `packages` it imports."""
    paths = sorted(p for package in packages for p in (ROOT / package).rglob("*.py"))
    modules = {_module_name(p) for p in paths}
    return {_module_name(p): set(_imports(p, modules)) - {_module_name(p)} for p in paths}


def cycles(graph: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[tuple[str, ...]] = set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.add(tuple(sorted(component)))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {("a", "b", "c")}
    assert cycles({"a": {"b"}, "b": set()}) == set()


def test_live_imports_go_one_way() -> None:
    graph = import_graph(("live",))
    assert "live.orchestrate" in graph["live.cli"], "the graph misses function-level imports"
    importers = {m for m, targets in graph.items() if "live.cli" in targets}
    assert importers <= {"live.__main__"}, "only `python -m live` imports the entry point"
    assert cycles(graph) == set()


def test_conformance_has_no_import_cycle() -> None:
    """Kept apart from the test below: collector <-> runner was one until the report assembly
    moved to `conformance.verdicts.assemble`."""
    assert cycles(import_graph(("conformance",))) == set()


def test_no_import_cycle_anywhere() -> None:
    assert cycles(import_graph()) == set()


def test_packages_import_in_the_house_direction() -> None:
    wrong = {
        (module, target)
        for module, targets in import_graph().items()
        for target in targets
        if target.split(".")[0] not in MAY_IMPORT[module.split(".")[0]] | {module.split(".")[0]}
    }
    assert not wrong, sorted(wrong)


def test_profiles_are_feature_sets_others_select_by() -> None:
    """The diff, the fuzzer and the benchmarks pick profiles by feature, not by a list."""
    from conformance.profiles import ALL_PROFILES, PROFILES, profiles_with

    assert profiles_with("scale-out") == {"scale-out", "api-key"}
    assert profiles_with("tokens-only") == {"tokens-only", "tokens-only-api-key"}
    assert profiles_with("api-key") == {"api-key", "tokens-only-api-key"}
    assert profiles_with("scale-out", among=ALL_PROFILES) == {"scale-out", "api-key", "dp"}
    assert "weight-labels" in PROFILES["scale-out"].features  # dev mode serves the labels
    assert "weight-labels" not in PROFILES["api-key"].features
    assert profiles_with("no-such-feature") == frozenset()
