"""Response and stream-chunk bodies, with vLLM 0.32's key order and null-vs-omitted rules.

This is the correct answer only: output defects rewrite it afterwards (`transforms`), at one
place per kind (`finish` for the body, `chunk` / `usage_chunk` for a stream).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from mock_server import transforms
from mock_server.behaviour.config import MockConfig
from mock_server.engine.core import Job
from mock_server.engine.fields import routed_experts, usage, weight_spans
from mock_server.engine.logprobs import LogprobsRenderer
from mock_server.engine.sequence import Sequence, TokenRecord


class Builder:
    """Renders one request's outputs; holds what every chunk shares."""

    def __init__(self, cfg: MockConfig, job: Job, lp: LogprobsRenderer, model_name: str) -> None:
        self.cfg = cfg
        self.job = job
        self.req = job.req
        self.lp = lp
        self.model_name = model_name
        self.request_id = job.request_id
        self.text = self.req.output_mode == "text" and cfg.has_tokenizer
        self.echo = "text" if self.text else "tokens"
        self.created = int(time.time())
        self.ctx = transforms.Context(cfg, self.req, lp.tok, job.sequences, self.text, lp.shape)

    def _logprobs(self, records: list[TokenRecord]) -> dict[str, Any] | None:
        k = self.req.sampling.logprobs
        if k is None and self.cfg.policies.build.logprobs_always:  # renders what was not asked
            k = 0
        if k is None:
            return None
        return {"content": self.lp.content(records, k)}

    def choice(
        self,
        seq: Sequence,
        records: list[TokenRecord],
        finish: str | None,
        spans: list[dict[str, Any]] | None,
        text: str | None,
    ) -> dict[str, Any]:
        cfg = self.cfg
        experts = None
        if cfg.enable_return_routed_experts and finish:
            experts = routed_experts(self.req.token_ids, seq.records)
        out: dict[str, Any] = {
            "index": seq.index,
            "finish_reason": finish,
            "stop_reason": seq.stop_reason if finish is not None else None,
            "token_ids": [r.token_id for r in records],
            "routed_experts": experts,
            "sampling_mask": [r.support or [] for r in records]
            if cfg.return_sampling_mask
            else None,
            "weight_versions": spans,
        }
        if self.text and text is not None:
            out["text"] = text
        out["logprobs"] = self._logprobs(records)
        return self.shaped(seq, out)

    def shaped(self, seq: Sequence, choice: dict[str, Any]) -> dict[str, Any]:
        """A choice as this level's answer carries it (a release's or a mode's shape)."""
        return choice

    def usage(self, completion: int, details: bool = True) -> dict[str, Any]:
        keys = self.cfg.release.usage_details if details else ()
        return usage(len(self.req.token_ids), completion, keys)

    def full(self, prompt_logprobs: Any, prompt_scores: str | None = None) -> dict[str, Any]:
        """The non-streamed body, output defects applied; `prompt_scores`: the base64 `.npy`
        of prompt_logprob_token_ids (0.34)."""
        choices = []
        total = 0
        first_only = self._first_choice_usage()
        for seq in self.job.sequences:
            records = seq.records
            if not (first_only and seq.index > 0):
                total += len(records)
            text = None
            if self.text:
                text = seq.detok.text if seq.detok is not None else ""
                if seq.detok is not None:
                    seq.detok.delta(final=True)
                    text = seq.detok.text
            finish = seq.finish_reason or "stop"
            spans = weight_spans(records, self.job.skewed)
            choices.append(self.choice(seq, records, finish, spans, text))
        body: dict[str, Any] = {
            "request_id": self.request_id,
            "model": self.model_name,
            "created": self.created,
            "usage": self.usage(total),
            "prompt_logprobs": prompt_logprobs,
            "prompt_token_id_logprobs": prompt_scores,
            "prompt_token_ids": list(self.req.token_ids) if self.req.return_token_ids else None,
            "mm_placeholders": None,
            "metrics": None,
            "kv_transfer_params": None,
            "ec_transfer_params": None,
            "output_mode": self.echo,
            "choices": choices,
        }
        out = transforms.apply("body", self.ctx, body)
        assert out is not None  # body transformers rewrite, never drop
        return out

    def _first_choice_usage(self) -> bool:
        """`Build.usage_first_choice_above`: an n > 1 body, opened when more than that many
        requests were in flight, counts its first choice's tokens only."""
        above = self.cfg.policies.build.usage_first_choice_above
        return above is not None and len(self.job.sequences) > 1 and self.job.crowd > above

    def chunk(self, usage: dict[str, Any] | None, first: bool, choices: list[Any]) -> Any:
        """One token chunk, output defects applied."""
        body: dict[str, Any] = {"request_id": self.request_id, "usage": usage}
        if first and self.req.return_token_ids:
            body["prompt_token_ids"] = list(self.req.token_ids)
        body["output_mode"] = self.echo
        body["choices"] = choices
        return transforms.apply("chunk", self.ctx, body)

    def usage_chunk(self, completion: int) -> dict[str, Any] | None:
        """The final usage-only chunk (None: not sent)."""
        body: dict[str, Any] = {
            "request_id": self.request_id,
            "usage": self.usage(completion, False),
            "output_mode": self.echo,
            "choices": [],
        }
        return transforms.apply("usage", self.ctx, body)


_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


_json_str: Callable[[str], str] = lru_cache(maxsize=256)(_encode)
"""A JSON string of the few a server repeats (reasons, modes, labels, model names)."""


@lru_cache(maxsize=8)
def _nulls(keys: tuple[str, ...]) -> str:
    """`,"key":null` for each of the usage's null detail keys."""
    return "".join(f",{_json_str(key)}:null" for key in keys)


def _spans_bytes(records: list[TokenRecord]) -> str:
    if records and len({rec.version for rec in records}) == 1:  # one label: one span
        return f'{{"version":{_json_str(records[0].version)},"start":0,"end":{len(records)}}}'
    return ",".join(
        f'{{"version":{_json_str(span["version"])},"start":{span["start"]},"end":{span["end"]}}}'
        for span in weight_spans(records)
    )


def _choice_bytes(seq: Sequence) -> str:
    records = seq.records
    ids = ",".join([str(rec.token_id) for rec in records])
    stop = seq.stop_reason
    stop_json = "null" if stop is None else str(stop) if type(stop) is int else _encode(stop)
    return (
        f'{{"index":{seq.index},"finish_reason":{_json_str(seq.finish_reason or "stop")},'
        f'"stop_reason":{stop_json},"token_ids":[{ids}],"routed_experts":null,'
        f'"sampling_mask":null,"weight_versions":[{_spans_bytes(records)}],"logprobs":null}}'
    )


def plain_full(b: Builder) -> bytes | None:
    """`full(None)` as sent (compact JSON), written directly for the common answer: no
    defects, tokens mode, no logprobs, sampling mask, routed experts or transfer params.
    None for anything else. (tests/test_mock_fastpath.py compares it with json.dumps.)"""
    cfg, req = b.cfg, b.req
    if (
        "build" not in cfg.policies.plain
        or b.job.skewed  # a defect's spans (label_skew_above)
        or transforms.active(cfg, "body")  # a defect's or an older release's rewrite of it
        or b.text
        or req.sampling.logprobs is not None
        or cfg.return_sampling_mask
        or cfg.enable_return_routed_experts
        or req.kv_transfer_params is not None
        or req.ec_transfer_params is not None
    ):
        return None
    seqs = b.job.sequences
    prompt = len(req.token_ids)
    total = sum(len(seq.records) for seq in seqs)
    prompt_ids = _encode(list(req.token_ids)) if req.return_token_ids else "null"
    choices = ",".join([_choice_bytes(seq) for seq in seqs])
    return (
        f'{{"request_id":{_encode(b.request_id)},"model":{_json_str(b.model_name)},'
        f'"created":{b.created},"usage":{{"prompt_tokens":{prompt},'
        f'"total_tokens":{prompt + total},"completion_tokens":{total}'
        f"{_nulls(cfg.release.usage_details)}}},"
        f'"prompt_logprobs":null,"prompt_token_id_logprobs":null,'
        f'"prompt_token_ids":{prompt_ids},"mm_placeholders":null,"metrics":null,'
        f'"kv_transfer_params":null,"ec_transfer_params":null,"output_mode":{_json_str(b.echo)},'
        f'"choices":[{choices}]}}'
    ).encode()
