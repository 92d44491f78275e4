"""What the server under test supports, probed once before any check runs.

Features are detected from the server, never configured: the user may *claim* features with
`--expect`, and a claimed feature the server does not show makes every check that needs it fail.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from conformance.requirements import all_requirements
from conformance.server.dp_rank import MAX_DP_PROBE, pinned, rejected
from conformance.server.engine_state import read_stats
from conformance.server.limits import queued_wait
from conformance.tito.outputs import FLAG_OUTPUTS, detected
from conformance.wire import Client, Reply, ServerBroke
from loopback.timeouts import WARMUP_TIMEOUT_S

GENERATE = "/inference/v1/generate"
ABORT = "/inference/v1/abort_requests"
LEGACY_ABORT = "/abort_requests"
RENDER = "/v1/completions/render"
CHAT_RENDER = "/v1/chat/completions/render"
DERENDER = "/v1/completions/derender"
PROBE_PROMPT = [10, 11, 12]
WAVE = MAX_DP_PROBE + 7  # the probe's generates sent at once: one per rank, text, logprobs, stop,
# and the three of the release extensions (DERENDER_PROBES)
DERENDER_MODE = {"output_mode": "derender"}
DERENDER_PROBES = (
    DERENDER_MODE,  # vLLM 0.33+: a parsed message per choice
    DERENDER_MODE | {"stream": True},  # 0.34+: a chat delta per chunk
    DERENDER_MODE | {"parse_context": {"return_tokens_as_token_ids": True}},  # 0.34+
)
DERENDER_PARTS = ("derender-stream", "parse-context")  # the later parts of the derender mode

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
    "engine-state",  # in flight and finished, read from every engine (/metrics, /mock/stats)
    "router",  # the run knows its topology: --engine URLs behind --base-url (issue 20)
    "routed-experts",  # started with --enable-return-routed-experts (see `outputs`)
    "sampling-mask",  # started with --return-sampling-mask
    # release extensions past the document's 0.32 (`checks/test_release_extensions.py`)
    "output-mode-derender",  # output_mode "derender" (0.33+)
    "derender-stream",  # ... streamed (0.34+)
    "parse-context",  # parse_context.return_tokens_as_token_ids (0.34+)
)
GENERATING = ("scale-out", "tokens-only")  # the claims that promise a working generate


@cache
def anchors() -> Mapping[str, str]:
    """The requirement that states each feature is there (`Requirement.anchor`). A claimed
    feature the server lacks fails that one; every other check needing the feature is blocked
    naming it (one defect, one requirement), unless the run does not include it. Read when first
    asked, never at import: the modules that declare the catalogue import this one."""
    return {r.anchor: r.id for r in all_requirements() if r.anchor}


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
    engine_state: bool = False
    engines: tuple[str, ...] = ()  # the engines behind the server under test (a router)
    flag_outputs: tuple[str, ...] = ()  # per-token outputs of start flags, seen in their form
    derender: bool = False  # output_mode "derender" answered a parsed message
    derender_stream: bool = False  # ... and answered streamed
    parse_context: bool = False  # ... and took parse_context.return_tokens_as_token_ids
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
            "engine-state": self.engine_state,
            "router": bool(self.engines),
            **{o.feature: o.feature in self.flag_outputs for o in FLAG_OUTPUTS},
            "output-mode-derender": self.derender,
            "derender-stream": self.derender and self.derender_stream,
            "parse-context": self.derender and self.parse_context,
        }
        return [name for name in KNOWN_FEATURES if found[name]]

    def generating_claim(self, claims: frozenset[str]) -> str | None:
        """The claim promising a generate this server does not serve, if any."""
        if self.generate == "enabled":
            return None
        return next((c for c in GENERATING if c in claims), None)

    def anchor(self, name: str, claims: frozenset[str]) -> str | None:
        """The requirement to fail when `name` is claimed but absent: the root cause, so a
        scale-out server whose generate is missing fails GEN-003, not every abort check."""
        root = self.generating_claim(claims)
        if root is not None and name != root:
            return anchors()[root]
        if name == "text-mode" and self.tokenizer and not self.output_mode_echo:
            return anchors()["output-mode-echo"]
        if name in DERENDER_PARTS and not self.derender and "output-mode-derender" in claims:
            return anchors()["output-mode-derender"]
        return anchors().get(name)

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
            "engine-state": "no engine answers /metrics with vLLM's request gauges, nor "
            "/mock/stats",
            "router": "no engines were given (--engine URL, one per engine behind the router)",
            **{o.feature: f"the server was not started with {o.flag}" for o in FLAG_OUTPUTS},
            "output-mode-derender": 'output_mode "derender" is not served (vLLM 0.33+)',
            "derender-stream": 'a streamed output_mode "derender" is not served (vLLM 0.34+)',
            "parse-context": "parse_context.return_tokens_as_token_ids is not taken in derender "
            "mode (vLLM 0.34+)",
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


def probe(client: Client, warmup_timeout: float = WARMUP_TIMEOUT_S) -> Features:
    """Detect the features. Raises ProbeError when the server cannot be tested at all.

    A feature is present when any one of its signals is: a server that shows a feature on one
    path and hides it on another must fail the other path's checks, never skip them.
    """
    ev: dict[str, str] = {}
    version = _reachable(client)
    started = time.monotonic()
    bare = _try(client, "POST", GENERATE, _minimal(), auth=False, timeout=warmup_timeout)
    reply = bare
    if bare is not None and bare.status == 401:
        if not client.api_key:
            raise ProbeError("the server requires an API key (401 without one): pass --api-key")
        started = time.monotonic()
        reply = _try(client, "POST", GENERATE, _minimal(), timeout=warmup_timeout)
    took = time.monotonic() - started
    unkeyed: dict[str, Reply | None] = {GENERATE: bare}
    if reply is None or reply.status != 200 or not isinstance(_json(reply), dict):
        if not client.api_key:  # a gated or broken generate: abort is the other guarded prefix
            unkeyed[ABORT] = _try(client, "POST", ABORT, {"request_ids": []})
        api_key = _api_key(client, unkeyed, ev)
        return _without_generate(client, reply, api_key, version, ev)
    body = _json(reply)
    model = body.get("model") if isinstance(body.get("model"), str) else None
    # The generates below are independent: sent at once, a slow server's waits overlap. Its
    # capacity is not known yet, so each may wait behind all the others in its queue.
    wait = queued_wait(client.timeout, took, WAVE)
    with ThreadPoolExecutor(WAVE) as pool:
        asked_text = pool.submit(
            _try, client, "POST", GENERATE, _minimal(output_mode="text"), timeout=wait
        )
        with_logprobs = {"sampling_params": {"max_tokens": 1, "logprobs": 1}}
        asked_logprobs = pool.submit(
            _try, client, "POST", GENERATE, _minimal(**with_logprobs), timeout=wait
        )
        ranks = [
            pool.submit(_try, client, "POST", GENERATE, _minimal(), headers=pinned(r), timeout=wait)
            for r in range(MAX_DP_PROBE + 1)
        ]
        derender = [
            pool.submit(_try, client, "POST", GENERATE, _minimal(**extra), timeout=wait)
            for extra in DERENDER_PROBES
        ]
    text = asked_text.result()
    text_tokenizer = _text_tokenizer(text, ev)
    logprobs = _json(asked_logprobs.result())
    whole, streamed, parsed = _derender([asked.result() for asked in derender], ev)
    # Only once they have ended: a dev-mode server's /abort_requests aborts every request.
    aborts = _aborts(client, text_tokenizer, ev, wait)
    renders = _renders(client, model)
    if not client.api_key:  # every request so far went without a key: a 401 is a key signal
        unkeyed.update({ABORT: aborts.v1, **renders})
    tokenizer = _tokenizer(text_tokenizer, renders[CHAT_RENDER], aborts.tokens_only, ev)
    echo = _echo([body, _json(text), logprobs], ev)
    if tokenizer and not echo:
        ev["text-mode"] += "; but no response echoed output_mode"
    stats = read_stats(client)
    return Features(
        generate="enabled",
        api_key_required=_api_key(client, unkeyed, ev),
        abort=aborts.abort,
        legacy_abort=aborts.legacy,
        dev_mode=_weight_labels(client, ev),
        tokenizer=tokenizer,
        output_mode_echo=echo,
        logprob_form=_logprob_form(logprobs),
        tokens_only=aborts.tokens_only,
        render=_render(renders, ev),
        dp_size=rejected(rank.result() for rank in ranks),
        # A 404 `{"detail": "Not Found"}` is a dict too: only the counters themselves count.
        mock_stats=stats is not None and "in_flight" in stats,
        flag_outputs=detected(body, ev),
        derender=whole,
        derender_stream=streamed,
        parse_context=parsed,
        version=version,
        model=model,
        evidence=ev,
    )


def _reachable(client: Client) -> str | None:
    """The server's version; raises ProbeError when /health does not answer at all."""
    health = _try(client, "GET", "/health", auth=False)
    if health is None:
        first = client.log[-1] if client.log else None
        raise ProbeError(
            f"server not reachable at {client.base_url}: {first.received() if first else '?'}"
        )
    body = _json(_try(client, "GET", "/version", auth=False))
    version = body.get("version") if isinstance(body, dict) else None
    return version if isinstance(version, str) else None


def _without_generate(
    client: Client, reply: Reply | None, api_key: bool, version: str | None, ev: dict[str, str]
) -> Features:
    """Generate is gated (403/404) or broken: nothing else can be probed through it."""
    if reply is None:
        ev["scale-out"] = f"generate: {client.log[-1].received()}"
        status = "broken"
    elif reply.status in (403, 404):
        ev["scale-out"] = ev["disabled"] = f"generate answered {reply.status}"
        status = "disabled"
    else:
        ev["scale-out"] = f"generate answered {reply.status}"
        status = "broken"
    return Features(generate=status, api_key_required=api_key, version=version, evidence=ev)


def _served(reply: Reply | None) -> bool:
    """A route exists: it answered anything but 404/405 (a 400 or 401 still shows it), and
    not a 5xx: a 502 or 503 is what a router or proxy answers for an upstream it could not
    reach or route, and a 500 shows no more than that something broke."""
    return reply is not None and reply.status not in (404, 405) and reply.status < 500


def _api_key(client: Client, unkeyed: dict[str, Reply | None], ev: dict[str, str]) -> bool:
    """The key is required if it was given (it then applies to every guarded prefix) or if any
    guarded path answered 401 to a request sent without one."""
    signals = ["--api-key was given (it applies to every guarded prefix)"] if client.api_key else []
    signals += [
        f"{path} without a key answered 401"
        for path, reply in unkeyed.items()
        if reply is not None and reply.status == 401
    ]
    ev["api-key"] = "; ".join(signals) or (
        f"no guarded path answered 401 without a key ({', '.join(unkeyed)})"
    )
    return bool(signals)


def _text_tokenizer(text: Reply | None, ev: dict[str, str]) -> bool:
    """Output mode "text" gave text."""
    body = _json(text)
    if text is not None and text.status == 200 and isinstance(body, dict):
        choices = body.get("choices") or [{}]
        if isinstance(choices[0], dict) and "text" in choices[0]:
            return True
        ev["text-mode"] = 'output_mode "text" answered 200 without text'
    else:
        ev["text-mode"] = f'output_mode "text" answered {text.status if text else "nothing"}'
    return False


def _tokenizer(
    text_tokenizer: bool, chat: Reply | None, tokens_only: bool, ev: dict[str, str]
) -> bool:
    """Text mode gave text, or chat render tokenized messages (a tokenizer is loaded)."""
    body = _json(chat) if chat is not None and chat.status == 200 else None
    token_ids = body.get("token_ids") if isinstance(body, dict) else None
    rendered = not tokens_only and isinstance(token_ids, list) and bool(token_ids)
    if text_tokenizer:
        ev["text-mode"] = 'output_mode "text" gave text'
    elif rendered:
        ev["text-mode"] = f"{CHAT_RENDER} tokenized messages ({ev.get('text-mode', '')})"
    elif chat is not None:
        ev["text-mode"] = f"{ev.get('text-mode', '')}; {CHAT_RENDER} answered {chat.status}"
    return text_tokenizer or rendered


def _echo(bodies: list[Any], ev: dict[str, str]) -> bool:
    """Any response (tokens or text mode) echoed output_mode."""
    echo = any(isinstance(b, dict) and "output_mode" in b for b in bodies)
    ev["output-mode-echo"] = (
        "a response echoed output_mode" if echo else "no response carried output_mode"
    )
    return echo


def _derender(replies: list[Reply | None], ev: dict[str, str]) -> tuple[bool, bool, bool]:
    """The release extensions, from DERENDER_PROBES' answers. The mode is there when any of
    the three answered as it does (a 200 with a `message`, or a stream of `delta`s): a release
    without it answers 400, one that predates output_mode answers tokens. Each later part is
    there when the mode is and its request answered 200, whatever the answer then held: its
    requirement judges that, so partial support fails instead of being skipped."""
    whole, stream, parsed = replies
    mode = _a_message(whole) or _a_delta(stream) or _a_message(parsed)
    shape = " with a message" if _a_message(whole) else " without a message" if _ok(whole) else ""
    ev["output-mode-derender"] = f'output_mode "derender" {_status(whole)}{shape}'
    ev["derender-stream"] = f'a streamed output_mode "derender" {_status(stream)}'
    ev["parse-context"] = (
        f'output_mode "derender" with parse_context.return_tokens_as_token_ids {_status(parsed)}'
    )
    if not mode:
        for part in DERENDER_PARTS:
            ev[part] += "; no answer was a derender one"
    return mode, mode and _ok(stream), mode and _ok(parsed)


def _ok(reply: Reply | None) -> bool:
    return reply is not None and reply.status == 200


def _status(reply: Reply | None) -> str:
    return f"answered {reply.status}" if reply is not None else "got no answer"


def _a_message(reply: Reply | None) -> bool:
    """A 200 whose first choice carries a parsed `message`."""
    body = _json(reply) if _ok(reply) else None
    choices = body.get("choices") if isinstance(body, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    return isinstance(first, dict) and "message" in first


def _a_delta(reply: Reply | None) -> bool:
    """A 200 stream whose chunks carry `delta`s."""
    return reply is not None and reply.status == 200 and b'"delta"' in reply.body


@dataclass(frozen=True)
class _Aborts:
    v1: Reply | None
    abort: bool
    legacy: bool
    tokens_only: bool


def _aborts(client: Client, tokenizer: bool, ev: dict[str, str], wait: float) -> _Aborts:
    """Both abort paths, and tokens-only mode, which must serve both.

    A tokens-only server that serves one path has both paths' rules: the missing one then
    fails its checks instead of skipping them.
    """
    v1 = _try(client, "POST", ABORT, {"request_ids": []})
    legacy = _try(client, "POST", LEGACY_ABORT, {"request_ids": []}, auth=False)
    legacy_body = _json(legacy) if legacy is not None and legacy.body else None
    dev_abort = isinstance(legacy_body, dict) and "aborted" in legacy_body  # dev mode abort-all
    has_v1, has_legacy = _served(v1), _served(legacy) and not dev_abort
    stop_refused, stop_says = False, False
    if has_legacy or not tokenizer:
        stop_body = _minimal(sampling_params={"max_tokens": 2, "stop": ["zz"]})
        stop = _try(client, "POST", GENERATE, stop_body, timeout=wait)
        stop_refused = stop is not None and stop.status == 400
        stop_says = stop is not None and stop_refused and b"tokens-only" in stop.body  # vLLM's
    tokens_only = (has_legacy and (not tokenizer or stop_refused)) or stop_says
    ev["tokens-only"] = (
        f"/abort_requests {'served' if has_legacy else 'absent'}, tokenizer "
        f"{'present' if tokenizer else 'absent'}, stop strings "
        f"{'refused' if stop_refused else 'accepted or not tried'}"
    )
    ev["abort"] = f"{ABORT} answered {v1.status if v1 else 'nothing'}"
    ev["legacy-abort"] = f"{LEGACY_ABORT} answered {legacy.status if legacy else 'nothing'}" + (
        " (the dev-mode abort-all)" if dev_abort else ""
    )
    if tokens_only and has_legacy and not has_v1:
        ev["abort"] += f"; a tokens-only server must serve it as it serves {LEGACY_ABORT}"
    if tokens_only and has_v1 and not has_legacy:
        ev["legacy-abort"] += f"; a tokens-only server must serve it as it serves {ABORT}"
    both = tokens_only and (has_v1 or has_legacy)
    return _Aborts(v1, has_v1 or both, has_legacy or both, tokens_only)


def _renders(client: Client, model: str | None) -> dict[str, Reply | None]:
    """The three render/derender routes, each with a minimal body."""
    bodies: dict[str, Any] = {
        RENDER: {"model": model, "prompt": PROBE_PROMPT},
        CHAT_RENDER: {"model": model, "messages": [{"role": "user", "content": "hi"}]},
        DERENDER: {"generate_responses": []},
    }
    return {path: _try(client, "POST", path, body) for path, body in bodies.items()}


def _render(renders: dict[str, Reply | None], ev: dict[str, str]) -> bool:
    """Any of the three routes is served."""
    served = [path for path, reply in renders.items() if _served(reply)]
    answers = ", ".join(f"{p} {r.status if r else 'nothing'}" for p, r in renders.items())
    ev["render"] = f"served: {', '.join(served)}" if served else f"answered {answers}"
    return bool(served)


def _weight_labels(client: Client, ev: dict[str, str]) -> bool:
    """/weight_info or /update_weight_version answers as the dev endpoints do.

    The update is sent without new_version: a dev server refuses it naming the field (400), so
    the probe never changes the label.
    """
    info = _json(_try(client, "GET", "/weight_info", auth=False))
    update = _try(client, "POST", "/update_weight_version", {}, auth=False)
    signals = []
    if isinstance(info, dict) and "weight_version" in info:
        signals.append("/weight_info answered a weight_version")
    if update is not None and _served(update) and b"new_version" in update.body:
        signals.append(f"/update_weight_version answered {update.status} about new_version")
    ev["weight-labels"] = "; ".join(signals) or (
        f"/weight_info and /update_weight_version: {update.status if update else 'nothing'}"
    )
    return bool(signals)


def _logprob_form(body: Any) -> str:
    """How a tokens-mode logprob entry names its token."""
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
