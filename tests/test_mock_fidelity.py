"""Mock fidelity: replay every vLLM 0.32 capture against the mock and compare structure.

Status, media type, JSON key structure (keys, order, types, nulls, request-determined
lengths) and SSE event structure must match the capture, except the differences listed with a
reason in `tests/fidelity_differences.py`. A listed difference that no longer occurs fails.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from captures import exchanges
from fidelity_differences import LISTED, MOCK_BUG, Listed, listed_for
from fidelity_replay import SERVERS, reference_answer, replay, replay_plan, request_of

from conformance.diff.structure import Difference, compare_answers
from mock_server.harness.testing import running_server

CAPTURES = {exchange.name: exchange for exchange in exchanges()}


def _param(name: str) -> pytest.param:  # type: ignore[valid-type]
    bugs = [entry for entry in listed_for(name) if entry.label == MOCK_BUG]
    marks = [pytest.mark.xfail(strict=True, reason=bugs[0].reason)] if bugs else []
    return pytest.param(name, id=name, marks=marks)


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    """One mock per captured server configuration, on loopback, for the whole module."""
    with contextlib.ExitStack() as stack:
        yield {
            name: stack.enter_context(running_server(list(argv))) for name, argv in SERVERS.items()
        }


def _unlisted(name: str, found: list[Difference], tolerated: list[Listed]) -> list[Difference]:
    return [d for d in found if not any(entry.covers(name, d.pattern) for entry in tolerated)]


@pytest.mark.parametrize("name", [_param(name) for name in CAPTURES])
def test_capture_structure_matches(name: str, servers: dict[str, str]) -> None:
    exchange = CAPTURES[name]
    plan = replay_plan(exchange)
    candidate = replay(servers[plan.server], exchange, plan)
    found = compare_answers(request_of(exchange, plan), reference_answer(exchange), candidate)
    intended = [entry for entry in listed_for(name) if entry.label != MOCK_BUG]
    unexpected = _unlisted(name, found, intended)
    stale = [e for e in intended if not any(e.covers(name, d.pattern) for d in found)]
    assert not unexpected, f"{name} on the mock ({plan.server}):\n" + "\n".join(
        f"  {d}" for d in unexpected
    )
    assert not stale, f"{name}: listed differences no longer occur: " + "; ".join(
        e.pattern for e in stale
    )


def test_every_listed_capture_exists() -> None:
    assert not [entry.capture for entry in LISTED if entry.capture not in CAPTURES]


def test_every_capture_is_replayed() -> None:
    """Every fixture file (and every step of the derender sequence) is one case above."""
    assert len(CAPTURES) == len(exchanges()) >= 139
