"""Draw each operation's cases once and replay them in every profile.

Drawing (hypothesis under schemathesis) is most of a fuzz run's cost: a derender body, a nested
generate response full of open objects, takes ~0.1 s to draw. With one seed hypothesis draws the
same cases whatever the server answers (nothing the replay does feeds back into it: no failure
is raised, no `target()` is called), so a second profile drawing them again would only repeat
the same work. The cases are drawn from a profile-neutral copy of the schema and re-bound to
the profile's own schema (its expected statuses, its app or base URL) when replayed.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import hypothesis
import hypothesis.errors
import schemathesis
from hypothesis import HealthCheck, Phase
from schemathesis import GenerationMode

import openapi
from conformance.fuzz import draw_cache
from conformance.fuzz.expectations import operations

UNSATISFIABLE = "schemathesis can generate no such case for this operation"
_spent = [0.0]


def drawing_seconds() -> float:
    """Time spent drawing in this process so far (what the sharing saves is the rest)."""
    return _spent[0]


@dataclass(frozen=True)
class Drawn:
    """The cases of one (operation, mode), in draw order; `skipped` says why there are none."""

    cases: tuple[Any, ...]
    skipped: str = ""


def settings(examples: int) -> hypothesis.settings:
    """Generation only: no shrinking (a failure is recorded, not minimised), no database (the
    seed is the reproducer), no deadline or health checks (slow draws are expected)."""
    return hypothesis.settings(
        max_examples=examples,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        derandomize=False,
        report_multiple_bugs=False,
    )


@contextlib.contextmanager
def pinned_draws() -> Iterator[None]:
    """Hypothesis draws now and then from the string and number constants of every "local"
    module in `sys.modules`, so the same seed drew other cases depending on what the process
    had imported (a full pytest run, `tito-conformance run`, CI's tox env). While drawing, the
    pool of local constants is empty: a seed (with PYTHONHASHSEED) is then a reproducer. If a
    future hypothesis moves this internal, draws only lose that guarantee."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - a hypothesis without the internal
        yield
        return
    original = getattr(providers, "_get_local_constants", None)
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if original is None or cache is None:  # pragma: no cover
        yield
        return
    empty = providers.Constants()
    cache.cache.clear()
    providers._get_local_constants = lambda: empty
    try:
        yield
    finally:
        providers._get_local_constants = original
        cache.cache.clear()


@functools.cache
def neutral_schema(security: bool) -> Any:
    """The spec with only the generation settings a profile can change (security parameters:
    only a server with `--api-key` checks them)."""
    config = schemathesis.Config.from_dict(
        {
            "generation": {
                "deterministic": True,
                "allow-x00": False,
                "with-security-parameters": security,
            }
        }
    )
    return schemathesis.openapi.from_dict(copy.deepcopy(openapi.load_spec()), config=config)


@functools.cache
def drawn(op_id: str, mode: GenerationMode, security: bool, seed: int, examples: int) -> Drawn:
    """Up to `examples` cases (fewer when the operation has fewer distinct ones), from the
    draw cache when `TITO_DRAW_CACHE` names one (`draw_cache`)."""
    method, path, _ = operations()[op_id]
    op = neutral_schema(security)[path][method]
    key = draw_cache.key(op_id, mode.value, security, seed, examples)
    found = draw_cache.load(key, op)
    if found is not None:
        return Drawn(*found)
    result = _draw(op, mode, security, seed, examples)
    draw_cache.store(key, result.cases, result.skipped)
    return result


def _draw(op: Any, mode: GenerationMode, security: bool, seed: int, examples: int) -> Drawn:
    out: list[Any] = []

    @settings(examples)
    @hypothesis.seed(seed)
    @hypothesis.given(op.as_strategy(generation_mode=mode))
    def collect(case: Any) -> None:
        out.append(bound(case, case.operation))

    started = time.monotonic()
    try:
        with pinned_draws():
            boundary = coverage_cases(op, mode, security)
            collect()
    except hypothesis.errors.Unsatisfiable:
        return Drawn(boundary, UNSATISFIABLE if not boundary else "")
    finally:
        _spent[0] += time.monotonic() - started
    return Drawn(boundary + tuple(out))


def coverage_cases(op: Any, mode: GenerationMode, security: bool) -> tuple[Any, ...]:
    """Schemathesis's coverage phase: the schema's boundaries, systematically (an empty
    `token_ids`, a negative id, `logprobs: 21`, ...), drawn first. Random draws reach them only
    by luck, and which ones they reach varies with the process (import order shifts them)."""
    schema = neutral_schema(security)
    cases = schema.iter_coverage_cases(
        op, generation_modes=[mode], generation_config=schema.config.generation_for(operation=op)
    )
    return tuple(
        bound(case, case.operation)
        for case in cases
        if mode is GenerationMode.POSITIVE or not _lax_type(case)
    )


def _lax_type(case: Any) -> bool:
    """An "incorrect type" boundary case (`min_tokens: false`, `ignore_eos: 0`, `[false]` for
    `list[int]`): invalid JSON Schema, but pydantic's lax mode (vLLM's validation) coerces
    many of them, so a vLLM-faithful server accepts them. The coverage phase's type cases are
    left out; the random negative draws still send wrong types (those pydantic rejects)."""
    data = getattr(case.meta.phase, "data", None)
    return getattr(data, "scenario", None) == "incorrect_type"


def bound(case: Any, operation: Any) -> Any:
    """A private deep copy of a drawn case, on `operation` (the profile's schema) instead.

    Slot by slot, past `Case.__setattr__` (which tracks edits for revalidation and cannot run
    on a half-built copy); the copied metadata keeps the hashes of the equal copied parts.
    """
    memo: dict[int, Any] = {id(case.operation): operation}
    copied = object.__new__(type(case))
    for slot in type(case).__slots__:
        object.__setattr__(copied, slot, copy.deepcopy(getattr(case, slot), memo))
    return copied
