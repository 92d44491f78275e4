"""`output_mode: "derender"` on generate (vLLM 0.33+): a parsed assistant message, not text.

vLLM builds it as the text level plus a chat parse of the decoded output (`serving.py`,
`serve_tokens_full_generator` / `serve_tokens_stream_generator`). A server without a tool or
reasoning parser, as the mock is, answers `ChatMessage(role="assistant", content=text)` per
choice (`OnlineDerenderer._derender_text_choices`) and, streamed (0.34), a
`DeltaMessage(content=delta_text)` per chunk, the role on each choice's first one
(`ChatStreamProcessor.step`, dumped without its nulls). The finish reason is the engine's, as
`resolve_finish_reason` leaves it without tool calls.

Logprobs are the chat ones of the text level, cut as `/v1/chat/completions` cuts them
(`chat_top_logprobs_limit`: the first `logprobs` candidates, the sampled token first; all for
-1), with `parse_context.return_tokens_as_token_ids` (0.34) overriding the server's flag.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from mock_server.answers.payloads import Builder
from mock_server.behaviour.config import MockConfig
from mock_server.engine.core import Job
from mock_server.engine.logprobs import LogprobsRenderer
from mock_server.engine.sequence import Sequence, TokenRecord
from mock_server.engine.tokenizer import Tokenizer
from mock_server.parsing import parse_context
from mock_server.parsing.request import GenerateRequest

MODE = "derender"


def engine_request(req: GenerateRequest) -> GenerateRequest:
    """What the engine runs: the text level (vLLM: `text_mode = ... or derender_mode`)."""
    return replace(req, output_mode="text") if req.output_mode == MODE else req


class DerenderLogprobs(LogprobsRenderer):
    """The text level's chat logprobs, top candidates cut to the request's count."""

    def __init__(self, config: MockConfig, tokenizer: Tokenizer, req: GenerateRequest) -> None:
        super().__init__(config, tokenizer, "text")
        self.as_ids = parse_context.tokens_as_ids(
            req.parse_context, config.return_tokens_as_token_ids
        )

    def _entry(self, token_id: int, rank: int, logprob: float) -> dict[str, Any]:
        if self.shape == "text" and self.as_ids:
            return {"token": f"token_id:{token_id}", "logprob": logprob, "bytes": None}
        if self.shape == "text":  # decoded, whatever the server's flag
            text = self.tok.token_text(token_id)
            return {"token": text, "logprob": logprob, "bytes": list(text.encode(errors="replace"))}
        return super()._entry(token_id, rank, logprob)

    def content(self, records: list[TokenRecord], k: int) -> list[dict[str, Any]]:
        out = super().content(records, k)
        if k >= 0:
            for entry in out:
                entry["top_logprobs"] = entry["top_logprobs"][:k]
        return out


class DerenderBuilder(Builder):
    """The text level's answer with each choice's `text` turned into a `message` (whole) or a
    `delta` (streamed); every other field, and their order, as the text level's."""

    def __init__(self, cfg: MockConfig, job: Job, lp: LogprobsRenderer, model_name: str) -> None:
        super().__init__(cfg, job, lp, model_name)
        self.echo = MODE
        self.role_sent: set[int] = set()

    def shaped(self, seq: Sequence, choice: dict[str, Any]) -> dict[str, Any]:
        logprobs = choice.pop("logprobs")
        content = choice.pop("text", "")
        if self.req.stream:
            choice["delta"] = self._delta(seq, content)
        else:
            choice["message"] = self._message(content)
        choice["logprobs"] = logprobs
        return choice

    def _message(self, content: str) -> dict[str, Any]:
        message = {"role": "assistant", "content": content}
        return {key: message.get(key) for key in self.cfg.release.message_keys}

    def _delta(self, seq: Sequence, content: str) -> dict[str, Any]:
        delta: dict[str, Any] = {}
        if seq.index not in self.role_sent:
            self.role_sent.add(seq.index)
            delta["role"] = "assistant"
        if content or seq.records:  # finished without output: `DeltaMessage()`, no content
            delta["content"] = content
        return delta
