"""The registry of output defects: named transformers of an otherwise correct answer.

The correct path builds vLLM's answer and never asks which defect is on; each defect that
only changes what is sent is one small function registered here under its catalogue name and
the kinds of answer it rewrites. The active transformers are looked up once per defect set, so
the correct mock pays one empty loop per answer.

An older vLLM release (`--mock-vllm-version`, `mock_server.behaviour.releases`) registers its
rewrites here too, under the names its `Release.rewrites` lists: they run after the defects, so a
defect is applied to 0.32's shape and the release then reshapes the result. 0.32 has none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

from mock_server.behaviour.defects import DEFECTS
from mock_server.behaviour.releases import REWRITES

if TYPE_CHECKING:
    from mock_server.behaviour.config import MockConfig
    from mock_server.engine.sequence import Sequence
    from mock_server.engine.tokenizer import Tokenizer
    from mock_server.parsing.request import GenerateRequest

Json = dict[str, Any]
F = TypeVar("F", bound=Callable[..., Any])

# What each kind rewrites, and the signature its transformers have:
KINDS = (
    "body",  # the non-streamed generate body:          (body, ctx) -> body
    "chunk",  # one token chunk of a stream:            (chunk, ctx) -> chunk
    "usage",  # the final usage-only chunk:             (chunk, ctx) -> chunk | None (dropped)
    "frame",  # one SSE event as sent:                  (data, framed) -> framed bytes
    "wire",  # the non-streamed 200 body as sent:       (raw) -> raw bytes
    "error",  # an error answer:                        (status, body, err) -> (status, body)
    "disabled",  # the scale-out-disabled answer:      (status, body) -> (status, body)
    "unauthorized",  # the API-key middleware's 401:  (status, body) -> (status, body)
)
_REGISTRY: dict[str, dict[str, Callable[..., Any]]] = {kind: {} for kind in KINDS}
_RELEASE: dict[str, dict[str, Callable[..., Any]]] = {kind: {} for kind in KINDS}
_ORDER = {name: i for i, name in enumerate(DEFECTS)}


@dataclass
class Context:
    """What a transformer may read besides the answer: the request, its sequences as the
    engine left them, and `state` that lives as long as one stream."""

    cfg: MockConfig
    req: GenerateRequest
    tokenizer: Tokenizer
    sequences: list[Sequence]
    text: bool  # the answer is in text mode (choices carry `text`)
    logprobs_shape: str  # "tokens", "text" or "legacy"
    state: dict[str, Any] = field(default_factory=dict)


def _filer(
    table: dict[str, dict[str, Callable[..., Any]]], name: str, kinds: tuple[str, ...]
) -> Callable[[F], F]:
    """The decorator that files `fn` in `table` under `name`, for each of `kinds`."""

    def register(fn: F) -> F:
        for kind in kinds:
            table[kind][name] = fn
        return fn

    return register


def transformer(name: str, *kinds: str) -> Callable[[F], F]:
    """Register `fn` as defect `name`'s transformer for `kinds`; the name must be catalogued."""
    if name not in DEFECTS:  # a typo must not silently leave a defect without effect
        raise KeyError(name)
    return _filer(_REGISTRY, name, kinds)


def release_transformer(name: str, *kinds: str) -> Callable[[F], F]:
    """Register `fn` as the release rewrite `name` (a name some `Release.rewrites` lists)."""
    if name not in REWRITES:
        raise KeyError(name)
    return _filer(_RELEASE, name, kinds)


def key_dropper(name: str, key: str, *kinds: str) -> Callable[[Json, Context], Json]:
    """Register defect `name` as one that only leaves `key` out of the answers of `kinds`
    (where it is there); the transformer is returned."""

    def drop(obj: Json, ctx: Context) -> Json:
        obj.pop(key, None)
        return obj

    drop.__name__ = drop.__qualname__ = f"drop_{key}"
    return transformer(name, *kinds)(drop)


def registered(kind: str) -> Iterable[str]:
    """The defect names with a transformer of `kind` (tests read it)."""
    return tuple(_REGISTRY[kind])


@lru_cache(maxsize=64)
def _active(
    defects: frozenset[str], rewrites: tuple[str, ...], kind: str
) -> tuple[Callable[..., Any], ...]:
    table, release = _REGISTRY[kind], _RELEASE[kind]
    chosen = sorted(defects & table.keys(), key=_ORDER.__getitem__)
    return (*(table[name] for name in chosen), *(release[n] for n in rewrites if n in release))


def active(cfg: MockConfig, kind: str) -> tuple[Callable[..., Any], ...]:
    """The transformers of `kind` the configured defects turn on, in catalogue order, then
    the configured release's rewrites."""
    if not cfg.defects and not cfg.release.rewrites:
        return ()
    return _active(cfg.defects, cfg.release.rewrites, kind)


def apply(kind: str, ctx: Context, obj: Json) -> Json | None:
    """Run the `body`, `chunk` or `usage` transformers; None means: send nothing."""
    out: Json | None = obj
    for fn in active(ctx.cfg, kind):
        if out is None:
            break
        out = fn(out, ctx)
    return out


def apply_frame(cfg: MockConfig, data: str, framed: bytes) -> bytes:
    for fn in active(cfg, "frame"):
        framed = fn(data, framed)
    return framed


def apply_wire(cfg: MockConfig, raw: bytes) -> bytes:
    for fn in active(cfg, "wire"):
        raw = fn(raw)
    return raw


def apply_status(
    cfg: MockConfig, kind: str, status: int, body: Json, *args: Any
) -> tuple[int, Json]:
    """Run the `error` (args: the ApiError), `disabled` or `unauthorized` transformers."""
    for fn in active(cfg, kind):
        status, body = fn(status, body, *args)
    return status, body
