"""Abort, access (API key, gating, informational) requests of the diff corpus."""

from __future__ import annotations

from .case import (
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
    Case("abort-get", SERVED, method="GET", path=ABORT, content_type=None, covers="abort (405)"),
    gen(
        "abort-flow-stream",
        SERVED,
        "abort flow",
        LONG,
        stream=True,
        request_id="diff-abort-1",
        abort=AbortFlow(),
    ),
    gen(
        "abort-flow-nonstream",
        SERVED,
        "abort flow",
        {**LONG, "logprobs": 0},
        request_id="diff-abort-2",
        abort=AbortFlow(),
    ),
    gen(
        "abort-flow-stream-n2-usage",
        SERVED,
        "abort flow+n+usage",
        {**LONG, "n": 2},
        stream=True,
        stream_options={"include_usage": True},
        request_id="diff-abort-3",
        abort=AbortFlow(),
    ),
    gen(
        "abort-flow-legacy",
        TOKENS_ONLY,
        "legacy abort flow",
        LONG,
        stream=True,
        request_id="diff-abort-4",
        abort=AbortFlow(path=LEGACY_ABORT),
    ),
    Case(
        "legacy-abort",
        TOKENS_ONLY,
        path=LEGACY_ABORT,
        body={"request_ids": ["x"]},
        covers="legacy abort",
    ),
    Case(
        "legacy-abort-missing", TOKENS_ONLY, path=LEGACY_ABORT, body={}, covers="legacy abort (400)"
    ),
    Case(
        "legacy-abort-not-served",
        SCALE_OUT | DISABLED,
        path=LEGACY_ABORT,
        body={"request_ids": ["x"]},
        covers="legacy abort (404)",
    ),
)

ACCESS_CASES: tuple[Case, ...] = (
    Case(
        "health",
        EVERY,
        method="GET",
        path="/health",
        content_type=None,
        auth="none",
        covers="health",
    ),
    Case("version", EVERY, method="GET", path="/version", content_type=None, covers="info"),
    Case("models", EVERY, method="GET", path="/v1/models", content_type=None, covers="info"),
    gen("disabled-generate", DISABLED, "gating (403)"),
    Case("disabled-invalid-body", DISABLED, body={"token_ids": []}, covers="gating (403)"),
    Case(
        "disabled-abort", DISABLED, path=ABORT, body={"request_ids": ["x"]}, covers="gating (403)"
    ),
    Case(
        "no-key-generate",
        KEYED,
        body={"token_ids": [1], "sampling_params": {"max_tokens": 1}},
        auth="none",
        covers="api key (401)",
    ),
    Case(
        "wrong-key-generate",
        KEYED,
        body={"token_ids": [1], "sampling_params": {"max_tokens": 1}},
        auth="wrong",
        covers="api key (401)",
    ),
    Case(
        "no-key-abort",
        KEYED,
        path=ABORT,
        body={"request_ids": ["x"]},
        auth="none",
        covers="api key (401)",
    ),
    Case(
        "no-key-legacy-abort",
        frozenset({"tokens-only-api-key"}),
        path=LEGACY_ABORT,
        body={"request_ids": ["x"]},
        auth="none",
        covers="api key (legacy abort needs none)",
    ),
    Case(
        "no-key-health",
        KEYED,
        method="GET",
        path="/health",
        content_type=None,
        auth="none",
        covers="api key (health needs none)",
    ),
    Case(
        "no-key-stream",
        KEYED,
        body={"token_ids": [1], "stream": True, "sampling_params": {"max_tokens": 1}},
        auth="none",
        covers="api key (401) on a stream",
    ),
)
