"""The three logprobs shapes vLLM has sent on generate, prompt_logprobs, and the prompt id
scores of `prompt_logprob_token_ids`."""

from __future__ import annotations

import math
from typing import Any

from mock_server.behaviour.config import MockConfig
from mock_server.engine.fields import npy_b64
from mock_server.engine.model import ToyModel
from mock_server.engine.sequence import TokenRecord
from mock_server.engine.tokenizer import Tokenizer


class LogprobsRenderer:
    """Picks the shape once per request: tokens (integer ids), text, or legacy strings."""

    def __init__(self, config: MockConfig, tokenizer: Tokenizer, output_mode: str) -> None:
        self.cfg = config
        self.tok = tokenizer
        slot = config.policies.build
        text = output_mode == "text" and config.has_tokenizer and slot.text_logprobs
        self.shape = "text" if text else "tokens"
        if self.shape == "tokens" and (
            config.mock_logprobs_format == "legacy" or slot.legacy_logprobs
        ):
            self.shape = "legacy"
        self.wrong_count = slot.top_logprobs_wrong_count

    def _entry(self, token_id: int, rank: int, logprob: float) -> dict[str, Any]:
        if self.shape == "tokens":
            return {"token_id": token_id, "logprob": logprob, "rank": rank}
        if self.shape == "legacy" or self.cfg.return_tokens_as_token_ids:
            return {"token": f"token_id:{token_id}", "logprob": logprob, "bytes": None}
        text = self.tok.token_text(token_id)
        return {
            "token": text,
            "logprob": logprob,
            "bytes": list(text.encode("utf-8", errors="replace")),
        }

    def content(self, records: list[TokenRecord], k: int) -> list[dict[str, Any]]:
        out = []
        for rec in records:
            top = rec.top
            if self.wrong_count:  # an entry the model never ranked there
                extra = (rec.token_id + 1, rec.rank + 1, rec.logprob)
                top = [] if k == 0 else [*top, extra]
            entry = self._entry(rec.token_id, rec.rank, rec.logprob)
            entry["top_logprobs"] = [self._entry(t, r, lp) for t, r, lp in top]
            out.append(entry)
        return out


def prompt_logprobs(
    config: MockConfig,
    model: ToyModel,
    tokenizer: Tokenizer,
    prompt: list[int],
    k: int,
    start: int = 0,
) -> list[dict[str, dict[str, Any]] | None]:
    """`[null, {"<id>": {logprob, rank, decoded_token}}, ...]`: the actual token first; the
    positions up to `prompt_logprob_start` (0.34) null too."""
    decode = config.has_tokenizer
    want = k if k >= 0 else model.vocab_size

    def item(token_id: int, rank: int) -> dict[str, Any]:
        return {
            "logprob": model.logprob_of_rank(rank),
            "rank": rank,
            "decoded_token": tokenizer.token_text(token_id) if decode else None,
        }

    out: list[dict[str, dict[str, Any]] | None] = []
    if config.policies.build.prompt_logprobs_leading_null:
        out.append(None)
    else:
        out.append({str(prompt[0]): item(prompt[0], 1)})
    out += [None] * min(start, len(prompt) - 1)
    for i in range(1 + start, len(prompt)):
        ctx = model.context_for(prompt[max(0, i - 2) : i])
        actual = prompt[i]
        rank = ctx.rank_of(actual)
        entry = {str(actual): item(actual, rank)}
        for r in range(1, want + 1):
            token = ctx.token_at(r)
            entry.setdefault(str(token), item(token, r))
        out.append(entry)
    return out


def prompt_id_scores(model: ToyModel, prompt: list[int], rows: list[list[int]], start: int) -> str:
    """`prompt_token_id_logprobs` (0.34): the logprob of each id of row i at prompt position
    `start + i + 1`, as a base64 float32 `.npy` of shape [rows, longest row]; -1 and the
    padding of a shorter row score -inf."""
    width = max(map(len, rows))
    values: list[float] = []
    for i, row in enumerate(rows):
        p = start + i + 1
        ctx = model.context_for(prompt[max(0, p - 2) : p])
        scores = [-math.inf if t < 0 else model.logprob_of_rank(ctx.rank_of(t)) for t in row]
        values += scores + [-math.inf] * (width - len(row))
    return npy_b64((len(rows), width), values, "f")
