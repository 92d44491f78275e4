"""The bodies and stream chunks of /v1/completions and /v1/chat/completions, in vLLM 0.32's
key order (read from its answers; see openai_compat). Logprobs go through derender's own
conversion, so they read exactly as derender would turn generate's logprobs."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from mock_server.behaviour.releases import Release
from mock_server.engine.core import Engine, Job
from mock_server.engine.fields import usage as usage_info
from mock_server.engine.sequence import Sequence, TokenRecord
from mock_server.engine.tokenizer import Tokenizer
from mock_server.rendering.derender import chat_logprobs, completion_logprobs


def _text(seq: Sequence, final: bool) -> str:
    """The new text of a sequence (all of it once final); "" without a tokenizer."""
    return seq.detok.delta(final) if seq.detok is not None else ""


class Answer:
    """What every body and chunk of one OpenAI request shares."""

    def __init__(
        self,
        tok: Tokenizer,
        rid: str,
        model: str,
        fp: str,
        k: int | None,
        release: Release,
    ) -> None:
        self.tok, self.rid, self.model, self.fp, self.k = tok, rid, model, fp, k
        self.release = release  # its shapes: usage details, message keys, trailing nulls
        self.choice_end = dict.fromkeys(release.choice_nulls)
        self.chunk_end = dict.fromkeys(release.chunk_nulls)
        self.created = int(time.time())
        self.offsets: dict[tuple[int, int], int] = {}

    def head(self, obj: str) -> dict[str, Any]:
        return {"id": self.rid, "object": obj, "created": self.created, "model": self.model}

    def _raw(self, records: list[TokenRecord], completions: bool) -> dict[str, Any]:
        """Generate's integer-id logprobs; for completions the sampled token plus the top k,
        for chat the first max(k, 1) of them (a release may record the top k after the
        sampled token, `Release.top_logprobs_cut`)."""
        k = self.k or 0
        return {
            "content": [
                {
                    "token_id": rec.token_id,
                    "logprob": rec.logprob,
                    "top_logprobs": [
                        {"token_id": t, "logprob": lp}
                        for i, (t, rank, lp) in enumerate(rec.top)
                        if ((i == 0 or rank <= k) if completions else (k < 0 or i < max(k, 1)))
                    ],
                }
                for rec in records
            ]
        }

    def completion_lp(self, key: tuple[int, int], records: list[TokenRecord]) -> Any:
        if self.k is None:
            return None
        lp, self.offsets[key] = completion_logprobs(
            self.tok, self._raw(records, True), self.offsets.get(key, 0)
        )
        return lp

    def chat_lp(self, records: list[TokenRecord]) -> Any:
        return None if self.k is None else chat_logprobs(self.tok, self._raw(records, False))

    def completion(self, jobs: list[Job], echo: bool) -> dict[str, Any]:
        choices: list[dict[str, Any]] = []
        prompt, completion = 0, 0
        for i, job in enumerate(jobs):
            prompt += len(job.req.token_ids)
            for seq in job.sequences:
                completion += len(seq.records)
                choices.append(
                    {
                        "index": len(choices),
                        "text": _text(seq, True),
                        "logprobs": self.completion_lp((i, seq.index), seq.records),
                        "finish_reason": seq.finish_reason or "stop",
                        "stop_reason": seq.stop_reason,
                        "token_ids": seq.token_ids if echo else None,
                        "prompt_logprobs": None,
                        "prompt_token_ids": list(job.req.token_ids) if echo else None,
                        "routed_experts": None,
                        **self.choice_end,
                    }
                )
        return self.head("text_completion") | {
            "choices": choices,
            "service_tier": None,
            "system_fingerprint": self.fp,
            "usage": usage_info(prompt, completion, self.release.usage_details),
            "kv_transfer_params": None,
            "ec_transfer_params": None,
            "metrics": None,
        }

    def chat(self, job: Job, echo: bool) -> dict[str, Any]:
        choices = []
        for seq in job.sequences:
            message = {"role": "assistant", "content": _text(seq, True)}
            choices.append(
                {
                    "index": seq.index,
                    "message": {key: message.get(key) for key in self.release.message_keys},
                    "logprobs": self.chat_lp(seq.records),
                    "finish_reason": seq.finish_reason or "stop",
                    "stop_reason": seq.stop_reason,
                    "token_ids": seq.token_ids if echo else None,
                    "routed_experts": None,
                    **self.choice_end,
                }
            )
        completion = sum(len(seq.records) for seq in job.sequences)
        return self.head("chat.completion") | {
            "choices": choices,
            "service_tier": None,
            "system_fingerprint": self.fp,
            "usage": usage_info(len(job.req.token_ids), completion, self.release.usage_details),
            "prompt_logprobs": None,
            "prompt_token_ids": list(job.req.token_ids) if echo else None,
            "prompt_text": None,
            "kv_transfer_params": None,
            "ec_transfer_params": None,
            "metrics": None,
        }


def _dump(obj: dict[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


async def completion_chunks(
    answer: Answer, engine: Engine, jobs: list[Job], echo: bool
) -> AsyncIterator[str]:
    """One chunk per new output of a choice; the usage chunk last when asked for."""
    prompt, completion, base = 0, 0, 0
    for i, job in enumerate(jobs):
        prompt += len(job.req.token_ids)
        async with aclosing(engine.run(job)) as events:
            async for ev in events:
                new = ev.seq.records[ev.start :]
                completion += len(new)
                choice = {
                    "index": base + ev.seq.index,
                    "text": _text(ev.seq, ev.finished),
                    "logprobs": answer.completion_lp((i, ev.seq.index), new),
                    "finish_reason": (ev.seq.finish_reason or "stop") if ev.finished else None,
                    "stop_reason": ev.seq.stop_reason if ev.finished else None,
                    "prompt_token_ids": list(job.req.token_ids) if echo and ev.start == 0 else None,
                    "token_ids": [r.token_id for r in new] if echo else None,
                    **answer.choice_end,
                }
                head = answer.head("text_completion")
                yield _dump(head | {"choices": [choice]} | answer.chunk_end)
        base += len(job.sequences)
    if jobs and jobs[0].req.include_usage:
        usage = {"choices": [], "usage": usage_info(prompt, completion)}
        yield _dump(answer.head("text_completion") | usage | {"system_fingerprint": answer.fp})


async def chat_chunks(
    answer: Answer, engine: Engine, jobs: list[Job], echo: bool
) -> AsyncIterator[str]:
    """The role chunk of each choice first, then its content deltas; the last one carries
    finish and stop reasons and the fingerprint."""
    job = jobs[0]
    head = answer.head("chat.completion.chunk")
    for index in range(job.req.sampling.n):
        role = {"index": index, "delta": {"role": "assistant", "content": ""}}
        first = role | {"logprobs": None, "finish_reason": None}
        yield _dump(head | {"choices": [first], "prompt_token_ids": None, "prompt_text": None})
    completion = 0
    async with aclosing(engine.run(job)) as events:
        async for ev in events:
            new = ev.seq.records[ev.start :]
            completion += len(new)
            text = _text(ev.seq, ev.finished)
            if not (text or ev.finished or answer.k is not None or echo):
                continue  # nothing to say yet (a character split across tokens)
            choice: dict[str, Any] = {
                "index": ev.seq.index,
                "delta": {"content": text},
                "logprobs": answer.chat_lp(new),
                "finish_reason": (ev.seq.finish_reason or "stop") if ev.finished else None,
            }
            if ev.finished:
                choice["stop_reason"] = ev.seq.stop_reason
            choice["token_ids"] = [r.token_id for r in new] if echo else None
            if ev.finished:
                choice |= answer.choice_end
            tail = {"system_fingerprint": answer.fp} if ev.finished else {}
            yield _dump(head | {"choices": [choice]} | tail | answer.chunk_end)
    if job.req.include_usage:
        usage = usage_info(len(job.req.token_ids), completion)
        yield _dump(head | {"choices": [], "usage": usage})
