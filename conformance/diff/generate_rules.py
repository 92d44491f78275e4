"""The list lengths and counts a generate request determines, whatever the model samples.

`len(choices) == n`, `len(prompt_token_ids) == len(token_ids)`, `len(top_logprobs) ==
max(logprobs, 1)`; when both servers stop by `length` they return the same number of tokens;
`len(logprobs.content) == len(token_ids)` and `usage.completion_tokens == tokens returned` hold
on each side (a relation that holds on one side only is a difference).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from conformance.diff.answer import Difference, Request

NON_STREAM_LENGTHS = frozenset(
    {
        "$.choices",
        "$.prompt_token_ids",
        "$.prompt_logprobs",
        "$.choices[*].logprobs.content[*].top_logprobs",
    }
)


def length_patterns(request: Request) -> frozenset[str]:
    return NON_STREAM_LENGTHS if request.is_generate else frozenset()


def finish_reason_determined(request: Request) -> bool:
    """Only `ignore_eos` without stop strings or stop ids makes every choice end by `length`.

    Otherwise the model decides (EOS, a stop string in the text): the suite checks those
    semantics; the structure diff compares only whether finish_reason is set.
    """
    if not request.is_generate:
        return True  # derender echoes the finish_reason it was given
    params = request.sampling_params
    if request.timing_dependent or params.get("ignore_eos") is not True:
        return False
    return not params.get("stop") and not params.get("stop_token_ids")


def tokens_of(choice: dict[str, Any]) -> list[Any]:
    tokens = choice.get("token_ids")
    return tokens if isinstance(tokens, list) else []


def content_of(choice: dict[str, Any]) -> list[Any] | None:
    logprobs = choice.get("logprobs")
    if isinstance(logprobs, dict) and isinstance(logprobs.get("content"), list):
        content: list[Any] = logprobs["content"]
        return content
    return None


def relation(holds: bool | None) -> str:
    return {True: "holds", False: "broken", None: "n/a"}[holds]


def compare_relation(
    location: str, what: str, ref: bool | None, cand: bool | None
) -> Iterator[Difference]:
    if ref is not None and cand is not None and ref != cand:
        yield Difference(location, f"relation {what}", relation(ref), relation(cand))


def both_by_length(request: Request, ref: dict[str, Any], cand: dict[str, Any]) -> bool:
    if request.timing_dependent:
        return False
    return ref.get("finish_reason") == "length" and cand.get("finish_reason") == "length"


def compare_body(request: Request, ref: Any, cand: Any) -> Iterator[Difference]:
    """The request-determined rules on a non-streamed generate answer."""
    if not (request.is_generate and isinstance(ref, dict) and isinstance(cand, dict)):
        return
    ref_choices, cand_choices = ref.get("choices"), cand.get("choices")
    if not (isinstance(ref_choices, list) and isinstance(cand_choices, list)):
        return
    for index, (left, right) in enumerate(zip(ref_choices, cand_choices, strict=False)):
        if not (isinstance(left, dict) and isinstance(right, dict)):
            continue
        loc = f"$.choices[{index}]"
        if both_by_length(request, left, right) and len(tokens_of(left)) != len(tokens_of(right)):
            yield Difference(
                f"{loc}.token_ids",
                "length (finish_reason length on both)",
                str(len(tokens_of(left))),
                str(len(tokens_of(right))),
            )
        yield from compare_relation(
            f"{loc}.logprobs.content",
            "len(logprobs.content) == len(token_ids)",
            _content_matches(left),
            _content_matches(right),
        )
    yield from compare_usage(request, ref, cand, _total(ref_choices), _total(cand_choices), "$")


def _content_matches(choice: dict[str, Any]) -> bool | None:
    content = content_of(choice)
    return None if content is None else len(content) == len(tokens_of(choice))


def _total(choices: list[Any]) -> int:
    return sum(len(tokens_of(c)) for c in choices if isinstance(c, dict))


def compare_usage(
    request: Request,
    ref: dict[str, Any],
    cand: dict[str, Any],
    ref_total: int,
    cand_total: int,
    loc: str,
) -> Iterator[Difference]:
    """`prompt_tokens` is the prompt's length; `completion_tokens` counts the tokens sent."""
    ref_usage, cand_usage = ref.get("usage"), cand.get("usage")
    if not (isinstance(ref_usage, dict) and isinstance(cand_usage, dict)):
        return
    prompt = request.body.get("token_ids") if isinstance(request.body, dict) else None
    if isinstance(prompt, list) and ref_usage.get("prompt_tokens") != cand_usage.get(
        "prompt_tokens"
    ):
        yield Difference(
            f"{loc}.usage.prompt_tokens",
            "value (the prompt's length)",
            repr(ref_usage.get("prompt_tokens")),
            repr(cand_usage.get("prompt_tokens")),
        )
    yield from compare_relation(
        f"{loc}.usage.completion_tokens",
        "completion_tokens == tokens returned",
        ref_usage.get("completion_tokens") == ref_total,
        cand_usage.get("completion_tokens") == cand_total,
    )
