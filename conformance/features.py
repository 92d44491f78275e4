"""What the server under test supports, probed once before any check runs.

Features are detected from the server, never configured: the user may *claim* features with
`--expect`, and a claimed feature the server does not show makes every check that needs it fail.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .http import Client, Reply, ServerBroke

GENERATE = "/inference/v1/generate"
ABORT = "/inference/v1/abort_requests"
LEGACY_ABORT = "/abort_requests"
PROBE_PROMPT = [10, 11, 12]
MAX_DP_PROBE = 8

# Names a user may claim with --expect, and the report lists as detected.
KNOWN_FEATURES = (
    "scale-out",
    "tokens-only",
    "disabled",
    "api-key",
    "abort",
    "legacy-abort",
    "text-mode",
    "output-mode-echo",
    "render",
    "weight-labels",
    "data-parallel",
    "mock-stats",
    "routed-experts",  # claim-only: started with --enable-return-routed-experts
    "sampling-mask",  # claim-only: started with --return-sampling-mask
)
# No probe can tell a start flag from a server that sends the field by mistake.
CLAIM_ONLY = ("routed-experts", "sampling-mask")


class ProbeError(Exception):
    """The server could not be probed at all (unreachable, or needs a key we were not given)."""


@dataclass(frozen=True)
class Features:
    generate: str  # "enabled" | "disabled" | "broken"
    api_key_required: bool = False
    abort: bool = False
    legacy_abort: bool = False
    dev_mode: bool = False
    tokenizer: bool = False
    output_mode_echo: bool = False
    logprob_form: str = "unknown"  # "integer" | "legacy" | "unknown"
    tokens_only: bool = False
    render: bool = False
    dp_size: int | None = None  # None: no rank was rejected up to MAX_DP_PROBE
    mock_stats: bool = False
    version: str | None = None
    model: str | None = None
    evidence: dict[str, str] = field(default_factory=dict)

    def names(self) -> list[str]:
        """The detected features, by the names --expect uses."""
        found = {
            "scale-out": self.generate == "enabled" and not self.tokens_only,
            "tokens-only": self.generate == "enabled" and self.tokens_only,
            "disabled": self.generate == "disabled",
            "api-key": self.api_key_required,
            "abort": self.abort,
            "legacy-abort": self.legacy_abort,
            "text-mode": self.tokenizer and self.output_mode_echo,
            "output-mode-echo": self.output_mode_echo,
            "render": self.render,
            "weight-labels": self.dev_mode,
            "data-parallel": (self.dp_size or 0) > 1,
            "mock-stats": self.mock_stats,
            **dict.fromkeys(CLAIM_ONLY, False),
        }
        return [name for name in KNOWN_FEATURES if found[name]]

    def why_not(self, name: str) -> str:
        """Why a feature is absent, for skip reasons."""
        reasons = {
            "scale-out": f"generate is {self.generate}"
            + (" (server is tokens-only)" if self.tokens_only else ""),
            "tokens-only": "not a tokens-only server (tokenizer present or no /abort_requests)",
            "disabled": f"generate is {self.generate}, not gated",
            "api-key": "the server does not ask for an API key",
            "abort": "POST /inference/v1/abort_requests is not served",
            "legacy-abort": "POST /abort_requests is not served",
            "text-mode": "server has no tokenizer"
            if not self.tokenizer
            else "server predates output_mode (no echo), so text mode cannot be trusted",
            "output-mode-echo": "server predates output_mode (responses do not echo it)",
            "render": "render endpoints are not served",
            "weight-labels": "no dev endpoints (/update_weight_version, /weight_info)",
            "data-parallel": f"data_parallel_size is {self.dp_size}",
            "mock-stats": "server exposes no /mock/stats",
            **dict.fromkeys(CLAIM_ONLY, "claim-only (--expect): a start flag cannot be probed"),
        }
        evidence = self.evidence.get(name)
        reason = reasons.get(name, name)
        return f"{reason} [{evidence}]" if evidence else reason


def _try(client: Client, method: str, path: str, body: Any = None, **kw: Any) -> Reply | None:
    try:
        if body is None:
            return client.request(method, path, **kw)
        return client.request(method, path, body, **kw)
    except ServerBroke:
        return None


def _minimal(**extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "token_ids": PROBE_PROMPT,
        "sampling_params": {"max_tokens": 2, "temperature": 0},
    }
    body.update(extra)
    return body


def _json(reply: Reply | None) -> Any:
    if reply is None:
        return None
    try:
        return reply.json()
    except ServerBroke:
        return None


def probe(client: Client, warmup_timeout: float = 30.0) -> Features:
    """Detect the features. Raises ProbeError when the server cannot be tested at all."""
    ev: dict[str, str] = {}
    health = _try(client, "GET", "/health", auth=False)
    if health is None:
        first = client.log[-1] if client.log else None
        raise ProbeError(
            f"server not reachable at {client.base_url}: {first.received() if first else '?'}"
        )
    version_body = _json(_try(client, "GET", "/version", auth=False))
    version = version_body.get("version") if isinstance(version_body, dict) else None

    api_key_required = False
    bare = _try(client, "POST", GENERATE, _minimal(), auth=False, timeout=warmup_timeout)
    if bare is not None and bare.status == 401:
        api_key_required = True
        ev["api-key"] = "generate without a key answered 401"
        if not client.api_key:
            raise ProbeError("the server requires an API key (401 without one): pass --api-key")
    reply = (
        _try(client, "POST", GENERATE, _minimal(), timeout=warmup_timeout)
        if api_key_required
        else bare
    )
    if reply is None:
        status = "broken"
        ev["scale-out"] = f"generate: {client.log[-1].received()}"
        return Features(
            generate=status, api_key_required=api_key_required, version=version, evidence=ev
        )
    if reply.status in (403, 404):
        ev["scale-out"] = f"generate answered {reply.status}"
        ev["disabled"] = f"generate answered {reply.status}"
        return Features(
            generate="disabled", api_key_required=api_key_required, version=version, evidence=ev
        )
    body = _json(reply)
    if reply.status != 200 or not isinstance(body, dict):
        ev["scale-out"] = f"generate answered {client.log[-1].received()}"
        return Features(
            generate="broken", api_key_required=api_key_required, version=version, evidence=ev
        )
    model = body.get("model") if isinstance(body.get("model"), str) else None
    echo = "output_mode" in body
    if not echo:
        ev["output-mode-echo"] = "a tokens-mode response carried no output_mode"

    text = _try(client, "POST", GENERATE, _minimal(output_mode="text"))
    text_body = _json(text)
    tokenizer = False
    if text is not None and text.status == 400:
        ev["text-mode"] = 'output_mode "text" answered 400'
    elif text is not None and text.status == 200 and isinstance(text_body, dict):
        choices = text_body.get("choices") or [{}]
        tokenizer = isinstance(choices[0], dict) and "text" in choices[0]
        if not tokenizer:
            ev["text-mode"] = 'output_mode "text" answered 200 without text'
    echo = echo or (isinstance(text_body, dict) and "output_mode" in text_body)

    logprob_form = _logprob_form(client)
    abort = _try(client, "POST", ABORT, {"request_ids": []})
    has_abort = abort is not None and abort.status not in (404, 405)
    if not has_abort:
        ev["abort"] = f"abort answered {abort.status if abort else 'nothing'}"
    legacy = _try(client, "POST", LEGACY_ABORT, {"request_ids": []}, auth=False)
    legacy_body = _json(legacy) if legacy is not None and legacy.body else None
    dev_abort = isinstance(legacy_body, dict) and "aborted" in legacy_body
    has_legacy = legacy is not None and legacy.status not in (404, 405) and not dev_abort
    weight = _json(_try(client, "GET", "/weight_info", auth=False))
    dev_mode = isinstance(weight, dict) and "weight_version" in weight

    stop_refused = False
    if has_legacy:
        stop = _try(
            client, "POST", GENERATE, _minimal(sampling_params={"max_tokens": 2, "stop": ["zz"]})
        )
        stop_refused = stop is not None and stop.status == 400
    tokens_only = has_legacy and (not tokenizer or stop_refused)
    if not tokens_only:
        ev["tokens-only"] = (
            f"/abort_requests {'served' if has_legacy else 'absent'}, tokenizer "
            f"{'present' if tokenizer else 'absent'}"
        )
    render = _try(
        client, "POST", "/v1/completions/render", {"model": model, "prompt": PROBE_PROMPT}
    )
    has_render = render is not None and render.status not in (404, 405)
    stats_answer = _try(client, "GET", "/mock/stats", auth=False)
    stats = _json(stats_answer) if stats_answer is not None and stats_answer.status == 200 else None
    return Features(
        generate="enabled",
        api_key_required=api_key_required,
        abort=has_abort,
        legacy_abort=has_legacy,
        dev_mode=dev_mode,
        tokenizer=tokenizer,
        output_mode_echo=echo,
        logprob_form=logprob_form,
        tokens_only=tokens_only,
        render=has_render,
        dp_size=_dp_size(client),
        # A 404 `{"detail": "Not Found"}` is a dict too: only the counters themselves count.
        mock_stats=isinstance(stats, dict) and "in_flight" in stats,
        version=version,
        model=model,
        evidence=ev,
    )


def _logprob_form(client: Client) -> str:
    body = _json(
        _try(client, "POST", GENERATE, _minimal(sampling_params={"max_tokens": 1, "logprobs": 1}))
    )
    try:
        entry = body["choices"][0]["logprobs"]["content"][0]
    except (KeyError, IndexError, TypeError):
        return "unknown"
    token_id = entry.get("token_id") if isinstance(entry, dict) else None
    if isinstance(token_id, int) and not isinstance(token_id, bool):
        return "integer"
    token = entry.get("token") if isinstance(entry, dict) else None
    if isinstance(token_id, str) or (isinstance(token, str) and token.startswith("token_id:")):
        return "legacy"
    return "unknown"


def _dp_size(client: Client) -> int | None:
    """The first rank the server rejects is its data_parallel_size."""
    for rank in range(MAX_DP_PROBE + 1):
        reply = _try(
            client, "POST", GENERATE, _minimal(), headers={"X-data-parallel-rank": str(rank)}
        )
        if reply is None or reply.status != 200:
            return rank if reply is not None and reply.status == 400 else None
    return None
