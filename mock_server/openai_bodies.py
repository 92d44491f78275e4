"""The bodies and stream chunks of /v1/completions and /v1/chat/completions, in vLLM 0.32's
key order (read from its answers; see openai_compat). Logprobs go through derender's own
conversion, so they read exactly as derender would turn generate's logprobs."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from mock_server.derender import chat_logprobs, completion_logprobs
from mock_server.engine import Engine, Job
from mock_server.sequence import Sequence, TokenRecord
from mock_server.tokenizer import Tokenizer

MESSAGE_NULLS = ("refusal", "annotations", "audio", "function_call", "reasoning")


def _usage(prompt: int, completion: int, details: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {
        "prompt_tokens": prompt,
        "total_tokens": prompt + completion,
        "completion_tokens": completion,
    }
    if details:
        out |= {"prompt_tokens_details": None, "completion_tokens_details": None}
    return out


def _text(seq: Sequence, final: bool) -> str:
    """The new text of a sequence (all of it once final); "" without a tokenizer."""
    return seq.detok.delta(final) if seq.detok is not None else ""


class Answer:
    """What every body and chunk of one OpenAI request shares."""

    def __init__(self, tok: Tokenizer, rid: str, model: str, fp: str, k: int | None) -> None:
        self.tok, self.rid, self.model, self.fp, self.k = tok, rid, model, fp, k
        self.created = int(time.time())
        self.offsets: dict[tuple[int, int], int] = {}

    def head(self, obj: str) -> dict[str, Any]:
        return {"id": self.rid, "object": obj, "created": self.created, "model": self.model}

    def _raw(self, records: list[TokenRecord], completions: bool) -> dict[str, Any]:
        """Generate's integer-id logprobs; for completions the sampled token plus the top k."""
        k = self.k or 0
        return {
            "content": [
                {
                    "token_id": rec.token_id,
                    "logprob": rec.logprob,
                    "top_logprobs": [
                        {"token_id": t, "logprob": lp}
                        for i, (t, rank, lp) in enumerate(rec.top)
                        if not completions or i == 0 or rank <= k
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
                    }
                )
        return self.head("text_completion") | {
            "choices": choices,
            "service_tier": None,
            "system_fingerprint": self.fp,
            "usage": _usage(prompt, completion),
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
                    "message": message | dict.fromkeys(MESSAGE_NULLS),
                    "logprobs": self.chat_lp(seq.records),
                    "finish_reason": seq.finish_reason or "stop",
                    "stop_reason": seq.stop_reason,
                    "token_ids": seq.token_ids if echo else None,
                    "routed_experts": None,
                }
            )
        completion = sum(len(seq.records) for seq in job.sequences)
        return self.head("chat.completion") | {
            "choices": choices,
            "service_tier": None,
            "system_fingerprint": self.fp,
            "usage": _usage(len(job.req.token_ids), completion),
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
                }
                yield _dump(answer.head("text_completion") | {"choices": [choice]})
        base += len(job.sequences)
    if jobs and jobs[0].req.include_usage:
        usage = {"choices": [], "usage": _usage(prompt, completion, False)}
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
            tail = {"system_fingerprint": answer.fp} if ev.finished else {}
            yield _dump(head | {"choices": [choice]} | tail)
    if job.req.include_usage:
        usage = _usage(len(job.req.token_ids), completion, False)
        yield _dump(head | {"choices": [], "usage": usage})
