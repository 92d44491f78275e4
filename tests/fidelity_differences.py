"""Every difference the mock may show against a vLLM 0.32 capture, with its reason. ONE place.

Keyed by capture name and difference pattern (`Difference.pattern`: the location with list
indices as `[*]`; a pattern ending in `.*` covers everything below it). An entry that no longer
occurs fails `tests/test_mock_fidelity.py`, so this list cannot go stale. `label`:
- `intended`: the mock differs on purpose (see `mock_server/DIFFERENCES.md`, row number given);
- `mock-bug`: the mock is wrong; the test of that capture is a strict xfail until it is fixed.
"""

from __future__ import annotations

from dataclasses import dataclass

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


_NOT_TITO = (
    "outside the TITO API: the mock does not serve the OpenAI endpoints /v1/completions, "
    "/tokenize, /detokenize (404) (DIFFERENCES.md #13)"
)
_STREAM_STATE = (
    "derender stream_state is opaque to clients (they only echo it): the mock keeps its own "
    "detokenizer state, not vLLM's (DIFFERENCES.md #14)"
)

LISTED: tuple[Listed, ...] = (
    Listed(
        "tokonly_token_id_out_of_vocab",
        "status",
        "vLLM 0.32 bug: with --tokens-only an out-of-vocabulary id skips the check, the engine "
        "raises, 500 and the whole server exits; the mock answers the clean 400 vLLM gives with "
        "a tokenizer (DIFFERENCES.md #1; `--mock-defect oov-token-500` reproduces the crash)",
    ),
    Listed("tokenize", "status", _NOT_TITO),
    Listed("detokenize", "status", _NOT_TITO),
    Listed("tokonly_tokenize", "status", _NOT_TITO + "; vLLM answers 400 without a tokenizer"),
    Listed("noflag_completions_ok", "status", _NOT_TITO),
    Listed("tokonly_completions", "status", _NOT_TITO),
    *(
        Listed(f"derender_completions_stream_sequence[{step}]", "$.stream_state.*", _STREAM_STATE)
        for step in range(8)
    ),
)


def listed_for(capture: str) -> list[Listed]:
    return [entry for entry in LISTED if entry.capture == capture]
