"""An older vLLM release's answers, rewritten from 0.32's (`mock_server.behaviour.releases`).

`release-shape` gives a body, a stream chunk and its choices the release's keys in its order
(0.30 and 0.31 send no `output_mode`, `stop_reason` or `weight_versions`);
`release-no-abort-chunk` drops the terminal `finish_reason: "abort"` chunk of an aborted
stream, which those releases never send (the stream just stops, then `data: [DONE]`).
"""

from __future__ import annotations

from functools import lru_cache

from mock_server.behaviour.releases import DEFAULT, Release
from mock_server.transforms.transformers import Context, Json, release_transformer

_CHUNK_032 = ("request_id", "usage", "prompt_token_ids", "output_mode", "choices")


@lru_cache(maxsize=16)
def _dropped(keys: tuple[str, ...], of_032: tuple[str, ...]) -> frozenset[str]:
    return frozenset(of_032) - frozenset(keys)


def _reshape(obj: Json, keys: tuple[str, ...], of_032: tuple[str, ...]) -> Json:
    """`keys` first, in that order; 0.32's keys the release lacks left out; any other key (a
    defect's) kept after them."""
    dropped = _dropped(keys, of_032)
    out = {k: obj[k] for k in keys if k in obj}
    out.update((k, v) for k, v in obj.items() if k not in out and k not in dropped)
    return out


def _choices(obj: Json, release: Release) -> None:
    if isinstance(obj.get("choices"), list):
        obj["choices"] = [
            _reshape(ch, release.choice_keys, DEFAULT.choice_keys) if isinstance(ch, dict) else ch
            for ch in obj["choices"]
        ]


@release_transformer("release-shape", "body")
def release_shape_body(body: Json, ctx: Context) -> Json:
    release = ctx.cfg.release
    _choices(body, release)
    return _reshape(body, release.body_keys, DEFAULT.body_keys)


@release_transformer("release-shape", "chunk", "usage")
def release_shape_chunk(chunk: Json, ctx: Context) -> Json:
    release = ctx.cfg.release
    _choices(chunk, release)
    return _reshape(chunk, release.chunk_keys, _CHUNK_032)


@release_transformer("release-no-abort-chunk", "chunk")
def release_no_abort_chunk(chunk: Json, ctx: Context) -> Json | None:
    """The choices an abort ended are not sent; a chunk left with none is not sent at all."""
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices:
        return chunk
    kept = [ch for ch in choices if not (isinstance(ch, dict) and ch["finish_reason"] == "abort")]
    if not kept:
        return None
    chunk["choices"] = kept
    return chunk
