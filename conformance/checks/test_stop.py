"""Stop handling: stop_token_ids, EOS, stop strings and stop_reason."""

from __future__ import annotations

from typing import Any

from conformance import api
from conformance.grounds import builds_on
from conformance.outcomes import Absent, Blocked
from conformance.registry import checks
from conformance.requirements.model import MUST, Feature, Requirement
from conformance.session import Session
from conformance.tito.semantics import as_bytes, choices_of, fail, ids_of

REQUIREMENTS = [
    Requirement(
        "STOP-001",
        MUST,
        Feature.STOP,
        "Stop token ID or string",
        "a matched stop_token_ids entry ends the choice: finish_reason stop, stop_reason the id",
        needs=("generate",),
        diff=("stop-token-ids-include", "stream-stop-token-ids-seeded"),
        fields=("stop_reason",),
    ),
    Requirement(
        "STOP-002",
        MUST,
        Feature.STOP,
        "token_ids keeps every generated token",
        "the matched stop token stays in token_ids",
        needs=("generate",),
        diff=("stop-token-ids-include",),
    ),
    Requirement(
        "STOP-003",
        MUST,
        Feature.STOP,
        "`null` on EOS, length and abort.",
        "stop_reason is null when EOS ended the choice",
        needs=("generate",),
    ),
    Requirement(
        "STOP-004",
        MUST,
        Feature.STOP,
        "`null` on EOS, length and abort.",
        "stop_reason is null when max_tokens ended the choice",
        needs=("generate",),
        fields=("stop_reason",),
    ),
    Requirement(
        "STOP-006",
        MUST,
        Feature.STOP,
        "A matched stop string is cut from text unless include_stop_str_in_output is set.",
        "a matched stop string is cut from text",
        needs=("text-mode",),
    ),
    Requirement(
        "STOP-007",
        MUST,
        Feature.STOP,
        "A matched stop string is cut from text unless include_stop_str_in_output is set.",
        "include_stop_str_in_output keeps the stop string in text",
        needs=("text-mode",),
        diff=("text-stop-include",),
    ),
    Requirement(
        "STOP-008",
        MUST,
        Feature.STOP,
        "token_ids keeps every generated token, so decoding token_ids yourself brings the stop "
        "string back.",
        "a stop string is not trimmed from token_ids",
        needs=("text-mode",),
    ),
    Requirement(
        "STOP-009",
        MUST,
        Feature.STOP,
        "Stop token ID or string",
        "a matched stop string is the stop_reason",
        needs=("text-mode",),
    ),
    Requirement(
        "STOP-010",
        MUST,
        Feature.STOP,
        "That covers text held back for stop string matching",
        "a streamed request with a stop string sends the held-back text: the deltas give the "
        "non-streamed text",
        needs=("text-mode",),
        diff=("text-stream-stop",),
    ),
]


def stop_token_case(s: Session) -> tuple[list[int], int, int, dict[str, Any]]:
    """A seeded run, a token of it that appears once, and the run again stopped there."""

    def make() -> tuple[list[int], int, int, dict[str, Any]]:
        ref = ids_of(choices_of(api.generate(s, api.seeded(12, ignore_eos=True)))[0])
        for position in range(2, len(ref)):
            if ref[position] not in ref[:position]:
                break
        else:
            raise Absent("not applicable: the seeded output repeats one token; no stop token")
        stopped = api.generate(s, api.seeded(12, ignore_eos=True, stop_token_ids=[ref[position]]))
        return ref, position, ref[position], choices_of(stopped)[0]

    return s.remember("stop-token", make)


def finish_or_blocked(s: Session, choice: dict[str, Any], expected: str) -> Any:
    """The finish_reason; a missing one, or another than `expected`, may be GEN-RESP-002's
    (blocked where its probe shows the reasons misnamed)."""
    if choice.get("finish_reason") != expected:
        builds_on(s, "GEN-RESP-002")
    return choice.get("finish_reason")


@checks("STOP-001", builds_on=("GEN-REQ-007", "GEN-RESP-001"))
def test_stop_token_reason(tito: Session) -> None:
    _, _, token, choice = stop_token_case(tito)
    finish_or_blocked(tito, choice, "stop")
    if choice.get("finish_reason") == "stop" and "stop_reason" not in choice:
        fail(f"no stop_reason: stop_token_ids [{token}] matched, finish_reason 'stop' and no key")
    if choice.get("finish_reason") != "stop" or choice.get("stop_reason") != token:
        fail(
            f"stop_token_ids [{token}] matched: finish_reason {choice.get('finish_reason')!r}, "
            f"stop_reason {choice.get('stop_reason')!r} (expected 'stop', {token})"
        )


@checks("STOP-002", builds_on=("GEN-REQ-007", "GEN-RESP-001", "GEN-RESP-003"))
def test_stop_token_kept(tito: Session) -> None:
    ref, position, token, choice = stop_token_case(tito)
    if len(ids_of(choice)) > position + 1 and choice.get("finish_reason") != "stop":
        raise Blocked("STOP-001", f"the output ran past stop token {token}")
    if ids_of(choice) != ref[: position + 1]:
        fail(
            f"stopped on {token}: token_ids {choice.get('token_ids')}, expected the stop token "
            f"kept: {ref[: position + 1]}"
        )


@checks("STOP-003")
def test_eos_stop_reason_null(tito: Session) -> None:
    n = tito.limits.n(8)
    for seed in range(32 // n):  # 32 sampled choices, whatever n the server allows
        payload = api.body(48, temperature=1.0, seed=seed, n=n)
        for choice in choices_of(api.generate(tito, payload)):
            if choice.get("finish_reason") == "stop":
                if choice.get("stop_reason") is not None:
                    fail(
                        f"a choice ended by EOS (no stop criteria sent) has stop_reason "
                        f"{choice.get('stop_reason')!r}, expected null"
                    )
                return
    raise Absent("not applicable: no sampled choice reached EOS within 32 x 48 tokens")


@checks("STOP-004")
def test_length_stop_reason_null(tito: Session) -> None:
    choice = choices_of(api.generate(tito, api.body(3, ignore_eos=True)))[0]
    finish_or_blocked(tito, choice, "length")
    if choice.get("finish_reason") != "length" or choice.get("stop_reason") is not None:
        fail(
            f"max_tokens reached: finish_reason {choice.get('finish_reason')!r}, stop_reason "
            f"{choice.get('stop_reason')!r} (expected 'length', null)"
        )


def stop_string_case(s: Session) -> dict[str, Any]:
    """A seeded text run, a stop string from its middle, and the run again with it."""

    def make() -> dict[str, Any]:
        payload = api.seeded(16, ignore_eos=True, logprobs=0) | {"output_mode": "text"}
        ref = choices_of(api.generate(s, payload))[0]
        text: str = ref.get("text") or ""
        content = (ref.get("logprobs") or {}).get("content") or []
        spelled = all(isinstance(e, dict) and as_bytes(e.get("bytes")) is not None for e in content)
        pieces = [(as_bytes(e.get("bytes")) if spelled else None) or b"" for e in content]
        stop = None
        for start in range(max(1, len(text) // 3), len(text) - 2):
            candidate = text[start : start + 2]
            if "\ufffd" not in candidate and candidate.strip() and text.find(candidate) > 0:
                stop = candidate
                break
        if stop is None:
            raise Absent(f"not applicable: no usable stop string in {text!r}")
        assert stop is not None
        at = text.find(stop)
        needed: int | None = None
        joined = b""
        for count, piece in enumerate(pieces if spelled else [], start=1):
            joined += piece
            if stop in joined.decode("utf-8", "replace"):
                needed = count
                break
        cut = dict(payload, sampling_params={**payload["sampling_params"], "stop": [stop]})
        kept = dict(
            cut, sampling_params={**cut["sampling_params"], "include_stop_str_in_output": True}
        )
        return {
            "ref": ref,
            "text": text,
            "stop": stop,
            "at": at,
            "needed": needed,
            "cut_payload": cut,
            "cut": choices_of(api.generate(s, cut))[0],
            "kept": choices_of(api.generate(s, kept))[0],
        }

    return s.remember("stop-string", make)


def _text_ends(case: dict[str, Any], answer: str, end: int, how: str = "") -> None:
    """STOP-006 and STOP-007 judge alike: the text of `case[answer]` is the reference's text up
    to `end` (where the stop string starts, or, kept, where it ends)."""
    want = case["text"][:end]
    if case[answer].get("text") != want:
        fail(f"stop {case['stop']!r}{how}: text {case[answer].get('text')!r}, expected {want!r}")


@checks("STOP-006", builds_on=("GEN-REQ-007",))
def test_stop_string_cut(tito: Session) -> None:
    case = stop_string_case(tito)
    _text_ends(case, "cut", case["at"])


@checks("STOP-007", builds_on=("GEN-REQ-007",))
def test_include_stop_str(tito: Session) -> None:
    case = stop_string_case(tito)
    _text_ends(case, "kept", case["at"] + len(case["stop"]), " with include_stop_str_in_output")


@checks("STOP-008", builds_on=("GEN-REQ-007", "GEN-RESP-003"))
def test_stop_string_tokens_kept(tito: Session) -> None:
    case = stop_string_case(tito)
    if case["needed"] is None:  # the reference's logprobs cannot say which tokens spell it
        content = (case["ref"].get("logprobs") or {}).get("content") or []
        if any(str(e.get("token", "")).startswith("token_id:") for e in content):
            raise Absent(
                "not applicable: logprobs name tokens as token_id:N placeholders "
                "(--return-tokens-as-token-ids), so the tokens spelling the stop string are unknown"
            )
        raise Blocked("TEXT-002", "text-mode logprobs carry no bytes to spell with")
    ids = ids_of(case["cut"])
    ref = ids_of(case["ref"])
    if ids != ref[: len(ids)] or len(ids) < case["needed"]:
        fail(
            f"stop {case['stop']!r}: token_ids {ids} must keep the {case['needed']} tokens "
            f"that spell it (reference {ref[: case['needed']]})"
        )


@checks("STOP-009", builds_on=("GEN-REQ-007",))
def test_stop_string_reason(tito: Session) -> None:
    case = stop_string_case(tito)
    cut = case["cut"]
    finish_or_blocked(tito, cut, "stop")
    if cut.get("finish_reason") != "stop" or cut.get("stop_reason") != case["stop"]:
        fail(
            f"stop {case['stop']!r} matched: finish_reason {cut.get('finish_reason')!r}, "
            f"stop_reason {cut.get('stop_reason')!r}"
        )


@checks("STOP-010", builds_on=("GEN-REQ-007", "STREAM-001", "TEXT-009"))
def test_stop_string_stream(tito: Session) -> None:
    case = stop_string_case(tito)
    got = api.stream(tito, case["cut_payload"]).choices().get(0)
    if got is None or got.text != case["cut"].get("text"):
        fail(
            f"streamed with stop {case['stop']!r}: text {got.text if got else None!r}, "
            f"non-streamed {case['cut'].get('text')!r}"
        )
