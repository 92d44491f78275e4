"""Abort, access (API key, gating, informational) requests of the diff corpus."""

from __future__ import annotations

from typing import Any

from conformance.diff.case import (
    ABORT,
    DISABLED,
    EVERY,
    KEYED,
    LEGACY_ABORT,
    SCALE_OUT,
    SERVED,
    TOKENS_ONLY,
    AbortFlow,
    Case,
    gen,
)

LONG = {"max_tokens": 400, "ignore_eos": True}
"""Long enough for an abort to land mid-generation on a slow server."""
TINY = {"token_ids": [1], "sampling_params": {"max_tokens": 1}}
"""The least a generate can ask, where only whether it was let in counts."""
SOME_ID = {"request_ids": ["x"]}
"""An abort naming no running request, where only whether it was let in counts."""


def _abort_flow(
    name: str,
    number: int,
    profiles: frozenset[str],
    covers: str,
    sampling: dict[str, Any],
    path: str = ABORT,
    **top: Any,
) -> Case:
    """A generate that is aborted by its returned id on `path` while it runs; its own request
    id (`diff-abort-<number>`) keeps the flows apart."""
    abort = AbortFlow(path=path)
    return gen(
        name, profiles, covers, sampling, **top, request_id=f"diff-abort-{number}", abort=abort
    )


def _get(name: str, profiles: frozenset[str], path: str, covers: str, **fields: Any) -> Case:
    """A GET: it sends no body, so no Content-Type either."""
    return Case(name, profiles, method="GET", path=path, content_type=None, covers=covers, **fields)


ABORT_CASES: tuple[Case, ...] = (
    Case(
        "abort-unknown-id",
        SERVED,
        path=ABORT,
        body={"request_ids": ["generate-tokens-nope"]},
        covers="abort",
    ),
    Case("abort-missing-ids", SERVED, path=ABORT, body={}, covers="abort (400)"),
    Case("abort-invalid-json", SERVED, path=ABORT, raw="{bad", covers="abort (400)"),
    Case("abort-string-ids", SERVED, path=ABORT, body={"request_ids": "x"}, covers="abort"),
    Case("abort-empty-list", SERVED, path=ABORT, body={"request_ids": []}, covers="abort"),
    Case(
        "abort-text-plain",
        SERVED,
        path=ABORT,
        raw='{"request_ids": ["x"]}',
        content_type="text/plain",
        covers="abort",
    ),
    _get("abort-get", SERVED, ABORT, "abort (405)"),
    _abort_flow("abort-flow-stream", 1, SERVED, "abort flow", LONG, stream=True),
    _abort_flow("abort-flow-nonstream", 2, SERVED, "abort flow", {**LONG, "logprobs": 0}),
    _abort_flow(
        "abort-flow-stream-n2-usage",
        3,
        SERVED,
        "abort flow+n+usage",
        {**LONG, "n": 2},
        stream=True,
        stream_options={"include_usage": True},
    ),
    _abort_flow(
        "abort-flow-legacy", 4, TOKENS_ONLY, "legacy abort flow", LONG, LEGACY_ABORT, stream=True
    ),
    Case(
        "legacy-abort",
        TOKENS_ONLY,
        path=LEGACY_ABORT,
        body=SOME_ID,
        covers="legacy abort",
    ),
    Case(
        "legacy-abort-missing", TOKENS_ONLY, path=LEGACY_ABORT, body={}, covers="legacy abort (400)"
    ),
    Case(
        "legacy-abort-not-served",
        SCALE_OUT | DISABLED,
        path=LEGACY_ABORT,
        body=SOME_ID,
        covers="legacy abort (404)",
    ),
)

ACCESS_CASES: tuple[Case, ...] = (
    _get("health", EVERY, "/health", "health", auth="none"),
    _get("version", EVERY, "/version", "info"),
    _get("models", EVERY, "/v1/models", "info"),
    gen("disabled-generate", DISABLED, "gating (403)"),
    Case("disabled-invalid-body", DISABLED, body={"token_ids": []}, covers="gating (403)"),
    Case("disabled-abort", DISABLED, path=ABORT, body=SOME_ID, covers="gating (403)"),
    *(
        Case(f"{key}-key-generate", KEYED, body=TINY, auth=auth, covers="api key (401)")
        for key, auth in (("no", "none"), ("wrong", "wrong"))
    ),
    Case(
        "no-key-abort",
        KEYED,
        path=ABORT,
        body=SOME_ID,
        auth="none",
        covers="api key (401)",
    ),
    Case(
        "no-key-legacy-abort",
        frozenset({"tokens-only-api-key"}),
        path=LEGACY_ABORT,
        body=SOME_ID,
        auth="none",
        covers="api key (legacy abort needs none)",
    ),
    _get("no-key-health", KEYED, "/health", "api key (health needs none)", auth="none"),
    Case(
        "no-key-stream",
        KEYED,
        body={"token_ids": [1], "stream": True, "sampling_params": {"max_tokens": 1}},
        auth="none",
        covers="api key (401) on a stream",
    ),
)
