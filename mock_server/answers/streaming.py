"""SSE framing exactly as vLLM sends it: `data: <compact json>\\n\\n` ... `data: [DONE]\\n\\n`."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from mock_server import transforms
from mock_server.answers.payloads import Builder
from mock_server.behaviour.config import MockConfig
from mock_server.engine.core import Engine, Event, Job
from mock_server.engine.fields import weight_spans
from mock_server.engine.sequence import Sequence
from mock_server.transforms import apply_frame
from mock_server.wire.asgi import Send
from mock_server.wire.errors import ApiError

SSE_HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8")]
_background: set[asyncio.Task[None]] = set()
STREAM_FAILURE = ApiError(500, "Internal server error", "InternalServerError")


def frame(cfg: MockConfig, data: str) -> bytes:
    """One SSE event; framing defects rewrite it (or leave nothing to send)."""
    return apply_frame(cfg, data, f"data: {data}\n\n".encode())


def compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


async def _start(send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})


async def _body(send: Send, data: bytes, more: bool = True) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": more})


async def _finish(send: Send, cfg: MockConfig) -> None:
    await _body(send, frame(cfg, "[DONE]"), more=False)


async def stream_single_error(send: Send, cfg: MockConfig, err: ApiError) -> None:
    """An engine-side rejection of a streamed request: 200, one error event, [DONE]."""
    await _start(send)
    await _body(send, frame(cfg, json.dumps(err.body())))
    await _finish(send, cfg)


class _Chunker:
    """Builds the chunks of one stream from the engine's events."""

    def __init__(self, cfg: MockConfig, builder: Builder) -> None:
        self.cfg = cfg
        self.b = builder
        self.first = True
        self.counts: dict[int, int] = {}
        req = builder.req
        # Most chunks differ only in their token ids: those are written into bytes rendered
        # once per choice (see `framed`), unless something else in them varies per token.
        self.templated = cfg.fast.templates and not (
            not {"build", "frame"} <= cfg.policies.plain
            or transforms.active(cfg, "chunk")
            or transforms.active(cfg, "frame")
            or builder.text
            or req.sampling.logprobs is not None
            or cfg.return_sampling_mask
            or (req.include_usage and req.continuous_usage)
        )
        self.templates: dict[int, tuple[bytes, bytes]] = {}

    def framed(self, ev: Event) -> bytes | None:
        """The SSE event for one engine event (None: a defect dropped it).

        A chunk in the middle of a templated stream is its template with the new token ids
        written in: the bytes `compact` and `frame` would give, without building and encoding
        a dict per token (tests/test_mock_templates.py proves them equal).
        """
        if not (self.templated and not self.first and not ev.finished):
            data = self.chunk([ev])
            return None if data is None else frame(self.cfg, data)
        seq = ev.seq
        self.counts[seq.index] = len(seq.records)
        head, tail = self.templates.get(seq.index) or self._template(seq)
        ids = ",".join([str(rec.token_id) for rec in seq.records[ev.start :]])
        return head + ids.encode() + tail

    def _template(self, seq: Sequence) -> tuple[bytes, bytes]:
        """A middle chunk of `seq` split around its (empty) token id list."""
        choice = self.b.choice(seq, [], None, None, None)
        choice["stop_reason"] = None
        body = self.b.chunk(None, False, [choice])
        head, key, tail = frame(self.cfg, compact(body)).rpartition(b'"token_ids":[]')
        assert key, "every chunk names its token ids"
        self.templates[seq.index] = (head + b'"token_ids":[', b"]" + tail)
        return self.templates[seq.index]

    def choice(self, ev: Event) -> dict[str, Any]:
        seq = ev.seq
        self.counts[seq.index] = len(seq.records)
        finish = seq.finish_reason if ev.finished else None
        spans = weight_spans(seq.records, self.b.job.skewed) if ev.finished else None
        text = None
        if self.b.text:
            text = seq.detok.delta(final=ev.finished) if seq.detok is not None else ""
        out = self.b.choice(seq, seq.records[ev.start :], finish, spans, text)
        if not ev.finished:
            out["stop_reason"] = None
        return out

    def chunk(self, events: list[Event]) -> str | None:
        return self.grouped([self.choice(ev) for ev in events], events[-1])

    def grouped(self, choices: list[dict[str, Any]], last: Event) -> str | None:
        """One chunk of already built choices (several only under stream-multi-choice-chunk);
        None when a defect drops it."""
        usage = None
        if self.b.req.include_usage and self.b.req.continuous_usage:
            usage = self.b.usage(self.counts.get(last.seq.index, 0))
        body = self.b.chunk(usage, self.first, choices)
        self.first = False
        return None if body is None else compact(body)


async def _event(send: Send, cfg: MockConfig, data: str | None) -> None:
    """Send one event, unless a defect dropped it."""
    if data is not None:
        await _body(send, frame(cfg, data))


async def _release(send: Send, held: list[bytes]) -> None:
    """Send the events held back, as one body message.

    Without a latency the engine makes up to YIELD_EVERY tokens per turn of the event loop;
    their events go out in one write instead of one each: the bytes and events are the
    same, and a send through Starlette, h11 and the socket cost as much as a token's path.
    """
    if held:
        data = b"".join(held)
        held.clear()
        await _body(send, data)


async def stream_job(
    send: Send, cfg: MockConfig, engine: Engine, job: Job, builder: Builder, gone: asyncio.Event
) -> None:
    chunker = _Chunker(cfg, builder)
    group = cfg.policies.frame.multi_choice_chunks
    empty_chunk = cfg.policies.frame.empty_chunk
    gen = engine.run(job)
    await _start(send)
    pending: list[tuple[Event, dict[str, Any]]] = []
    empty: list[Any] = []
    held: list[bytes] = []  # events of one engine burst, sent as one body message
    try:
        async for ev in gen:
            if gone.is_set():
                break
            if group:  # each choice built as its event comes, several sent in one chunk
                if any(p.seq is ev.seq for p, _ in pending):
                    await _event(send, cfg, chunker.grouped([c for _, c in pending], ev))
                    pending = []
                pending.append((ev, chunker.choice(ev)))
                continue
            data = chunker.framed(ev)
            if data is not None:
                held.append(data)
            if not ev.finished and empty_chunk and ev.seq not in empty:
                empty.append(ev.seq)  # one chunk with nothing in it, once per choice
                blank = chunker.chunk([Event(ev.seq, len(ev.seq.records), False)])
                if blank is not None:
                    held.append(frame(cfg, blank))
            if ev.flush or ev.finished:
                await _release(send, held)
        else:
            await _release(send, held)
            if pending:
                last = pending[-1][0]
                await _event(send, cfg, chunker.grouped([c for _, c in pending], last))
            if builder.req.include_usage:
                usage = builder.usage_chunk(sum(len(s.records) for s in job.sequences))
                await _event(send, cfg, None if usage is None else compact(usage))
            unended = cfg.policies.frame.unended_queue_at
            if unended is not None and job.queued_behind >= unended:
                await gone.wait()  # never ended: held open until the client leaves
                return
            await _finish(send, cfg)
            return
    except Exception:
        # The status line is sent: as vLLM does, an error after the start is one error
        # event, and the stream still ends with [DONE].
        job.abort()
        await _drain(gen)
        with contextlib.suppress(Exception):  # unless the client is gone
            await _release(send, held)
            await _body(send, frame(cfg, compact(STREAM_FAILURE.body())))
            await _finish(send, cfg)
        return
    except BaseException:  # cancelled: nobody is left to answer
        job.abort()
        await _drain(gen)
        raise
    # the client went away
    if not cfg.policies.admit.abort_on_disconnect:
        task = asyncio.ensure_future(_drain(gen))
        _background.add(task)
        task.add_done_callback(_background.discard)
    else:
        job.abort()
        await _drain(gen)


async def _drain(gen: Any) -> None:
    async for _ in gen:
        pass
