"""Output defects are named transformers; the correct path asks only about behaviour."""

from __future__ import annotations

import re
from pathlib import Path

from mock_server import transforms
from mock_server.behaviour.config import MockConfig
from mock_server.behaviour.defects import DEFECTS
from mock_server.transforms.transformers import KINDS

MOCK = Path(__file__).resolve().parent.parent / "mock_server"
ASKED = re.compile(r'has_defect\("([a-z0-9-]+)"\)')
# What the answer builders may still ask: defects that change what is computed or sent when,
# not how a finished answer reads.
BEHAVIOURAL = {
    "answers/payloads.py": {"logprobs-always"},
    "answers/streaming.py": {
        "stream-multi-choice-chunk",
        "stream-empty-chunk",
        "disconnect-no-abort",
    },
    "endpoints/gating.py": set(),
    "serve/auth.py": {
        "health-guarded",
        "abort-no-auth",
        "legacy-abort-requires-key",
        "api-key-generate-open",
        "api-key-unchecked",
    },
}


def test_every_transformer_is_a_catalogued_defect() -> None:
    names = {name for kind in KINDS for name in transforms.registered(kind)}
    assert names <= set(DEFECTS)
    assert len(names) >= 40


def test_the_correct_mock_runs_no_transformer() -> None:
    assert all(transforms.active(MockConfig(), kind) == () for kind in KINDS)


def test_active_transformers_follow_the_configured_defects() -> None:
    cfg = MockConfig(defects=frozenset({"usage-miscount", "stream-no-done", "seed-ignored"}))
    assert [fn.__name__ for fn in transforms.active(cfg, "body")] == ["usage_miscount"]
    assert [fn.__name__ for fn in transforms.active(cfg, "frame")] == ["stream_no_done"]


def test_answer_builders_ask_only_about_behaviour() -> None:
    for module, allowed in BEHAVIOURAL.items():
        asked = set(ASKED.findall((MOCK / module).read_text()))
        assert asked <= allowed, f"{module} asks about output defects: {asked - allowed}"


def test_no_transformer_defect_is_also_asked_for() -> None:
    """A defect is a transformer or a branch, never both (one place to read it)."""
    names = {name for kind in KINDS for name in transforms.registered(kind)}
    asked = set()
    for path in MOCK.rglob("*.py"):
        asked |= set(ASKED.findall(path.read_text()))
    both = names & asked - {"output-mode-not-echoed"}  # also lets tokens-only accept text
    assert not both, both
