"""The mock as one staged pipeline (issue 19): every defect is a registered policy or
transformer, no module asks for a defect by name, and a defect run takes the fast paths a
clean run takes (same bytes as the general paths) unless its own stage's slot says otherwise."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

from mock_server import transforms
from mock_server.behaviour.config import GENERAL, FastPaths, parse_args
from mock_server.behaviour.defects import DEFECTS
from mock_server.behaviour.policies import STAGES, Policies, registered
from mock_server.harness.testing import asgi_client
from mock_server.transforms.transformers import KINDS

MOCK = Path(__file__).resolve().parent.parent / "mock_server"
ASKS = re.compile(r"has_defect\(|\.defects\b")
MAY_ASK = {
    "behaviour/config.py",
    "behaviour/defects.py",
    "harness/tito_mock.py",
    "behaviour/policies.py",
    "transforms/transformers.py",
}
PROFILES = {
    "scale-out": ["--enable-scale-out"],
    "tokens-only": ["--tokens-only"],
    "api-key": ["--enable-scale-out", "--api-key", "k"],
    "tokens-only-api-key": ["--tokens-only", "--api-key", "k"],
    "disabled": [],
}
CREATED = re.compile(rb'"created":\d+,?')
IDS = re.compile(rb"generate-tokens-[0-9a-f]{16}")


def test_no_module_outside_the_registries_asks_for_a_defect() -> None:
    for path in MOCK.rglob("*.py"):
        name = str(path.relative_to(MOCK))
        if name not in MAY_ASK:
            assert not ASKS.search(path.read_text()), f"{name} asks which defects are on"


def test_every_defect_has_one_policy_or_its_transformers() -> None:
    policies = registered()
    transformed = {name for kind in KINDS for name in transforms.registered(kind)}
    assert set(policies) | transformed == set(DEFECTS)
    # the one defect both bent and rewritten: text mode served as tokens, and no echo
    assert set(policies) & transformed == {"output-mode-not-echoed"}
    assert set(policies.values()) <= set(STAGES)


def test_one_slot_per_stage_and_the_clean_mock_is_plain() -> None:
    assert [f.name for f in fields(Policies) if f.init] == list(STAGES)
    assert parse_args([]).policies.plain == frozenset(STAGES)
    for name, stage in registered().items():
        bent = parse_args(["--mock-defect", name]).policies
        assert bent.plain == frozenset(STAGES) - {stage}, name


def _requests() -> list[tuple[list[str], dict[str, Any]]]:
    out = []
    for d in DEFECTS.values():
        if d.name == "hang-generate":
            continue
        argv = [*PROFILES[d.profile], *d.flags, "--mock-defect", d.name]
        for sp, stream in (({"max_tokens": 8, "seed": 3}, False), ({"max_tokens": 6}, True)):
            body = {"token_ids": [1, 2, 3], "sampling_params": sp, "stream": stream}
            out.append((argv, body))
    return out


async def _answers(fast: FastPaths) -> list[tuple[int, bytes]]:
    out = []
    for argv, body in _requests():
        async with asgi_client(argv, fast=fast) as c:
            headers = {"Authorization": "Bearer k", "X-Request-Id": "r"}
            r = await c.post(
                "/inference/v1/generate",
                content=json.dumps(body),
                headers={"Content-Type": "application/json", **headers},
            )
            out.append((r.status_code, IDS.sub(b"", CREATED.sub(b"", r.content))))
    return out


def test_defect_runs_answer_the_same_on_the_fast_and_general_paths() -> None:
    fast = asyncio.run(_answers(FastPaths()))
    general = asyncio.run(_answers(GENERAL))
    for (argv, body), a, b in zip(_requests(), fast, general, strict=True):
        assert a == b, (argv, body)
