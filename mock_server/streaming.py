"""SSE framing exactly as vLLM sends it: `data: <compact json>\\n\\n` ... `data: [DONE]\\n\\n`."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from mock_server.asgi import Send
from mock_server.config import MockConfig
from mock_server.engine import Engine, Event, Job
from mock_server.errors import ApiError
from mock_server.payloads import Builder, weight_spans
from mock_server.sequence import Sequence

SSE_HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8")]
_background: set[asyncio.Task[None]] = set()
STREAM_FAILURE = ApiError(500, "Internal server error", "InternalServerError")


def frame(cfg: MockConfig, data: str) -> bytes:
    sep = "\n" if cfg.has_defect("stream-bad-framing") else "\n\n"
    return f"data: {data}{sep}".encode()


def compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


async def _start(send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})


async def _body(send: Send, data: bytes, more: bool = True) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": more})


async def _finish(send: Send, cfg: MockConfig) -> None:
    tail = b"" if cfg.has_defect("stream-no-done") else frame(cfg, "[DONE]")
    await _body(send, tail, more=False)


async def stream_single_error(send: Send, cfg: MockConfig, err: ApiError) -> None:
    """An engine-side rejection of a streamed request: 200, one error event, [DONE]."""
    await _start(send)
    await _body(send, frame(cfg, json.dumps(err.body())))
    await _finish(send, cfg)


class _Chunker:
    def __init__(self, cfg: MockConfig, builder: Builder) -> None:
        self.cfg = cfg
        self.b = builder
        self.first = True
        self.counts: dict[int, int] = {}
        self.early_done = False
        self.lossy_sent: dict[int, int] = {}

    def choice(self, ev: Event) -> dict[str, Any]:
        cfg, seq = self.cfg, ev.seq
        records = (
            seq.records if cfg.has_defect("stream-cumulative-deltas") else seq.records[ev.start :]
        )
        self.counts[seq.index] = len(seq.records)
        finish = seq.finish_reason if ev.finished else None
        if not ev.finished and not self.early_done and cfg.has_defect("stream-finish-reason-early"):
            finish, self.early_done = "length", True
        spans = None
        final_spans = ev.finished and not cfg.has_defect("stream-no-final-weight-versions")
        if final_spans or cfg.has_defect("stream-weight-versions-every-chunk"):
            short = ev.finished and cfg.has_defect("stream-weight-versions-short")
            spans = weight_spans(seq.records[:-1] if short else seq.records, cfg)
        text = None
        if self.b.text:
            text = seq.detok.delta(final=ev.finished) if seq.detok is not None else ""
            if self.b.req.sampling.stop and cfg.has_defect("stream-held-text-lost"):
                text = self._lossy(seq)
            if seq.detok is not None and cfg.has_defect("stream-text-cumulative"):
                text = seq.detok.emitted
        out = self.b.choice(seq, records, finish, spans, text)
        if not ev.finished:
            out["stop_reason"] = None
        return out

    def _lossy(self, seq: Sequence) -> str:
        """stream-held-text-lost: the last held-back character is never flushed."""
        shown = seq.detok.emitted[:-1] if seq.detok is not None else ""
        start = self.lossy_sent.get(seq.index, 0)
        self.lossy_sent[seq.index] = max(start, len(shown))
        return shown[start:]

    def chunk(self, events: list[Event]) -> str:
        return self.grouped([self.choice(ev) for ev in events], events[-1])

    def grouped(self, choices: list[dict[str, Any]], last: Event) -> str:
        """One chunk of already built choices (several only under stream-multi-choice-chunk)."""
        usage = None
        if self.b.req.include_usage and self.b.req.continuous_usage:
            usage = self.b.usage(self.counts.get(last.seq.index, 0))
        body = self.b.chunk_head(usage, self.first)
        self.first = False
        body["choices"] = choices
        return compact(body)


async def stream_job(
    send: Send, cfg: MockConfig, engine: Engine, job: Job, builder: Builder, gone: asyncio.Event
) -> None:
    chunker = _Chunker(cfg, builder)
    group = cfg.has_defect("stream-multi-choice-chunk")
    gen = engine.run(job)
    await _start(send)
    pending: list[tuple[Event, dict[str, Any]]] = []
    empty: list[Any] = []
    try:
        async for ev in gen:
            if gone.is_set():
                break
            if group:  # each choice built as its event comes, several sent in one chunk
                if any(p.seq is ev.seq for p, _ in pending):
                    await _body(send, frame(cfg, chunker.grouped([c for _, c in pending], ev)))
                    pending = []
                pending.append((ev, chunker.choice(ev)))
                continue
            await _body(send, frame(cfg, chunker.chunk([ev])))
            if not ev.finished and cfg.has_defect("stream-empty-chunk") and ev.seq not in empty:
                empty.append(ev.seq)  # one chunk with nothing in it, once per choice
                await _body(
                    send, frame(cfg, chunker.chunk([Event(ev.seq, len(ev.seq.records), False)]))
                )
        else:
            if pending:
                last = pending[-1][0]
                await _body(send, frame(cfg, chunker.grouped([c for _, c in pending], last)))
            if builder.req.include_usage and not cfg.has_defect("stream-no-usage-chunk"):
                total = sum(len(s.records) for s in job.sequences)
                await _body(send, frame(cfg, compact(builder.usage_chunk(total))))
            await _finish(send, cfg)
            return
    except Exception:
        # The status line is sent: as vLLM does, an error after the start is one error
        # event, and the stream still ends with [DONE].
        job.abort()
        await _drain(gen)
        with contextlib.suppress(Exception):  # unless the client is gone
            await _body(send, frame(cfg, compact(STREAM_FAILURE.body())))
            await _finish(send, cfg)
        return
    except BaseException:  # cancelled: nobody is left to answer
        job.abort()
        await _drain(gen)
        raise
    # the client went away
    if cfg.has_defect("disconnect-no-abort"):
        task = asyncio.ensure_future(_drain(gen))
        _background.add(task)
        task.add_done_callback(_background.discard)
    else:
        job.abort()
        await _drain(gen)


async def _drain(gen: Any) -> None:
    async for _ in gen:
        pass
