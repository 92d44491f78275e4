"""The requests `drift --behaviour` sends to each release: the diff corpus, and what it lacks.

The diff corpus (`conformance/diff`) is the kit's one named set of requests, so drift reuses
its scale-out cases (without the abort-in-flight flows, which time a second request). It
stays as it is: what it sends is judged against the mock elsewhere. The cases below add what
it does not send, each for a behaviour a release is known to have changed: the abort body
(validated by a model from 0.34), `prompt_logprob_start` (0.34 allows it with
`prompt_logprobs` and checks it against the prompt length), an empty `tools` array (0.34
stops rejecting it) and the weight-version endpoints (dev mode, as the scale-out profile has).
"""

from __future__ import annotations

from typing import Any

from conformance.diff.case import ABORT, SCALE_OUT, Case, gen
from conformance.diff.corpus import cases_for
from conformance.diff.corpus_render import CHAT_RENDER

PROFILE = "scale-out"
"""The profile whose flags and environment each release is started with."""
UPDATE_VERSION = "/update_weight_version"
FINISH_UPDATE = "/finish_weight_update"
HI = [{"role": "user", "content": "hi"}]
ROW = [[5]]
"""One scored row's ids: the five-token prompt from `prompt_logprob_start` 3 has one."""
TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}


def _post(name: str, path: str, body: Any, covers: str) -> Case:
    return Case(name, SCALE_OUT, path=path, body=body, covers=covers)


def _start(name: str, start: int, **sampling: Any) -> Case:
    """`prompt_logprob_start` over gen()'s five-token prompt, where `prompt_len - 1` is 4."""
    body = {"max_tokens": 1, "prompt_logprob_start": start, **sampling}
    return gen(name, SCALE_OUT, "prompt_logprob_start", body)


EXTRA_CASES: tuple[Case, ...] = (
    _post("abort-integer-ids", ABORT, {"request_ids": [1, 2]}, "abort: ids are strings"),
    _post("abort-integer-id", ABORT, {"request_ids": 7}, "abort: ids are strings"),
    _post("abort-null-ids", ABORT, {"request_ids": None}, "abort (400)"),
    _post("abort-body-array", ABORT, ["x"], "abort: body is an object"),
    _start("prompt-logprob-start", 1, prompt_logprobs=1),
    _start("prompt-logprob-start-last-row", 4, prompt_logprobs=1),
    _start("prompt-logprob-start-ids", 3, prompt_logprob_token_ids=ROW),
    _start("prompt-logprob-start-ids-last-row", 4, prompt_logprob_token_ids=ROW),
    _start("prompt-logprob-start-negative", -1, prompt_logprobs=1),
    _post("render-chat-tools-empty", CHAT_RENDER, {"messages": HI, "tools": []}, "tools"),
    _post(
        "render-chat-tools-empty-auto",
        CHAT_RENDER,
        {"messages": HI, "tools": [], "tool_choice": "auto"},
        "tools",
    ),
    _post("render-chat-tools", CHAT_RENDER, {"messages": HI, "tools": [TOOL]}, "tools"),
    _post("update-weight-version", UPDATE_VERSION, {"new_version": "drift-2"}, "weights"),
    _post("update-weight-version-missing", UPDATE_VERSION, {}, "weights (400)"),
    _post("update-weight-version-number", UPDATE_VERSION, {"new_version": 2}, "weights (400)"),
    _post("finish-weight-update", FINISH_UPDATE, {"weight_version": "drift-3"}, "weights"),
    _post("finish-weight-update-empty", FINISH_UPDATE, {}, "weights"),
    Case("weight-info", SCALE_OUT, method="GET", path="/weight_info", content_type=None),
)


def behaviour_corpus() -> list[Case]:
    """The diff corpus's scale-out cases without abort flows, then the ones above."""
    base = [c for c in cases_for(PROFILE) if c.abort is None]
    names = {c.name for c in base}
    clash = [c.name for c in EXTRA_CASES if c.name in names]
    if clash:
        raise ValueError(f"drift cases named like diff cases: {', '.join(clash)}")
    return base + list(EXTRA_CASES)


def to_json(cases: list[Case]) -> list[dict[str, Any]]:
    """What `probe.py` reads: one object per request."""
    return [
        {
            "name": c.name,
            "method": c.method,
            "path": c.path,
            "body": c.body,
            "raw": c.raw,
            "content_type": c.content_type,
            "headers": c.headers,
        }
        for c in cases
    ]
