"""Response and stream-chunk bodies, with vLLM 0.32's key order and null-vs-omitted rules."""

from __future__ import annotations

import base64
import struct
import time
from typing import Any

from mock_server.config import MockConfig
from mock_server.engine import Job
from mock_server.logprobs import LogprobsRenderer
from mock_server.sequence import Sequence, TokenRecord


def weight_spans(records: list[TokenRecord], cfg: MockConfig) -> list[dict[str, Any]] | None:
    """Half-open, contiguous spans of equal labels over the output tokens."""
    if cfg.has_defect("weight-versions-missing"):
        return None
    spans: list[dict[str, Any]] = []
    versions = [rec.version for rec in records]
    if versions and cfg.has_defect("weight-update-no-split"):
        versions = [versions[-1]] * len(versions)
    for i, version in enumerate(versions):
        if spans and spans[-1]["version"] == version:
            spans[-1]["end"] = i + 1
        else:
            spans.append({"version": version, "start": i, "end": i + 1})
    if not records and cfg.has_defect("weight-versions-empty-nonempty"):
        return [{"version": "default", "start": 0, "end": 0}]
    if spans and cfg.has_defect("weight-versions-gap"):
        spans[-1]["end"] -= 1
    return spans


def _npy_b64(shape: tuple[int, ...], values: list[int]) -> str:
    """A base64 `.npy` (int32) like vLLM's routed_experts field."""
    header = f"{{'descr': '<i4', 'fortran_order': False, 'shape': {shape!r}, }}"
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    raw = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1")
    raw += struct.pack(f"<{len(values)}i", *values)
    return base64.b64encode(raw).decode("ascii")


def routed_experts(prompt: list[int], records: list[TokenRecord]) -> str:
    """One row per token the model ran on: the prompt and every output token but the last
    (vLLM's `test_return_routed_experts`: prompt + output - 1 rows of 2 layers x top-2)."""
    ran = [*prompt, *(rec.token_id for rec in records)][:-1]
    values = [(token + layer * 3 + k) % 8 for token in ran for layer in range(2) for k in range(2)]
    return _npy_b64((len(ran), 2, 2), values)


class Builder:
    """Renders one request's outputs; holds what every chunk shares."""

    def __init__(self, cfg: MockConfig, job: Job, lp: LogprobsRenderer, model_name: str) -> None:
        self.cfg = cfg
        self.job = job
        self.req = job.req
        self.lp = lp
        self.model_name = model_name
        prefix = "" if cfg.has_defect("request-id-no-prefix") else "generate-tokens-"
        self.request_id = prefix + job.request_id.removeprefix("generate-tokens-")
        self.text = self.req.output_mode == "text" and cfg.has_tokenizer
        if self.req.output_mode == "text" and cfg.has_defect("output-mode-not-echoed"):
            self.text = False
        self.echo: str | None = "text" if self.text else "tokens"
        if cfg.has_defect("output-mode-wrong-echo"):
            self.echo = "tokens"
        if cfg.has_defect("output-mode-not-echoed"):
            self.echo = None
        self.created = int(time.time())

    def _logprobs(self, records: list[TokenRecord]) -> dict[str, Any] | None:
        k = self.req.sampling.logprobs
        if k is None and self.cfg.has_defect("logprobs-always"):
            k = 0
        if k is None:
            return None
        content = self.lp.content(records, k)
        if self.cfg.has_defect("logprobs-count-mismatch") and content:
            content = content[:-1]
        return {"content": content}

    def choice(
        self,
        seq: Sequence,
        records: list[TokenRecord],
        finish: str | None,
        spans: list[dict[str, Any]] | None,
        text: str | None,
    ) -> dict[str, Any]:
        cfg = self.cfg
        if finish == "abort" and cfg.has_defect("abort-finish-reason-length"):
            finish = "length"
        ids: list[Any] = [r.token_id for r in records]
        experts = None
        if cfg.enable_return_routed_experts and finish:
            experts = routed_experts(self.req.token_ids, seq.records)
        elif cfg.has_defect("routed-experts-always"):
            experts = "AAAA"
        out: dict[str, Any] = {
            "index": str(seq.index) if cfg.has_defect("schema-index-string") else seq.index,
            "finish_reason": finish,
            "stop_reason": seq.stop_reason if finish is not None else None,
            "token_ids": [str(t) for t in ids] if cfg.has_defect("token-ids-as-strings") else ids,
            "routed_experts": experts,
            "sampling_mask": [r.support or [] for r in records]
            if cfg.return_sampling_mask
            else None,
            "weight_versions": spans,
        }
        if self.text and text is not None and not cfg.has_defect("text-missing"):
            out["text"] = text
        if not self.text and cfg.has_defect("tokens-mode-text"):
            out["text"] = self.lp.tok.decode([r.token_id for r in records])
        out["logprobs"] = self._logprobs(records)
        return out

    def usage(self, completion: int, details: bool = True) -> dict[str, Any]:
        prompt = len(self.req.token_ids)
        out: dict[str, Any] = {
            "prompt_tokens": prompt,
            "total_tokens": prompt + completion,
            "completion_tokens": completion,
        }
        if details:
            out["prompt_tokens_details"] = None
            out["completion_tokens_details"] = None
        return out

    def full(self, prompt_logprobs: Any) -> dict[str, Any]:
        cfg = self.cfg
        choices = []
        total = 0
        for seq in self.job.sequences:
            records = seq.records
            if seq.finish_reason == "abort" and cfg.has_defect("abort-no-partial-output"):
                records = []
            total += len(records)
            finish = None if cfg.has_defect("finish-reason-null") else (seq.finish_reason or "stop")
            text = None
            if self.text:
                text = seq.detok.text if seq.detok is not None else ""
                if seq.detok is not None:
                    seq.detok.delta(final=True)
                    text = seq.detok.text
            choices.append(self.choice(seq, records, finish, weight_spans(records, cfg), text))
        if cfg.has_defect("usage-miscount"):
            total += 1
        echo_prompt = self.req.return_token_ids and not cfg.has_defect("prompt-token-ids-missing")
        body: dict[str, Any] = {
            "request_id": self.request_id,
            "model": self.model_name,
            "created": self.created,
            "usage": self.usage(total),
            "prompt_logprobs": prompt_logprobs,
            "prompt_token_id_logprobs": None,
            "prompt_token_ids": list(self.req.token_ids) if echo_prompt else None,
            "mm_placeholders": None,
            "metrics": None,
            "kv_transfer_params": None,
            "ec_transfer_params": None,
        }
        if self.echo is not None:
            body["output_mode"] = self.echo
        body["choices"] = choices
        return body

    def chunk_head(self, usage: dict[str, Any] | None, first: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"request_id": self.request_id, "usage": usage}
        if (
            first
            and self.req.return_token_ids
            and not self.cfg.has_defect("prompt-token-ids-missing")
        ):
            body["prompt_token_ids"] = list(self.req.token_ids)
        if self.echo is not None and not self.cfg.has_defect("stream-chunk-no-output-mode"):
            body["output_mode"] = self.echo
        return body

    def usage_chunk(self, completion: int) -> dict[str, Any]:
        body: dict[str, Any] = {
            "request_id": self.request_id,
            "usage": self.usage(completion, False),
        }
        if self.echo is not None:
            body["output_mode"] = self.echo
        body["choices"] = []
        return body
