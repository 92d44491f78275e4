"""The real vLLM 0.32 captures copied into `tests/fixtures/vllm-0.32/`, as plain exchanges.

The captures come in four layouts (one request/response pair; a list of pairs for the
derender stream sequence; abort-timing runs holding the generate request and its events;
bare `.sse` files of curl runs). This module flattens them into `Exchange`s so every test
that replays real traffic (spec conformance, mock fidelity) reads them the same way.
SSE bytes are decoded by httpx-sse, not by hand.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from conformance.diff.answer import sse_events

FIXTURES = Path(__file__).parent / "fixtures" / "vllm-0.32"
ISSUE11 = Path(__file__).parent / "fixtures" / "vllm-0.32-issue11"
TINY_ARGV = ["--enable-scale-out", "--max-model-len", "512", "--max-num-seqs", "4"]
TINY_ARGV += ["--mock-vocab-size", "2048", "--served-model-name", "tiny-qwen3"]
"""The mock started as the real server of `ISSUE11` was (the tiny model, its limits)."""
GENERATE = "/inference/v1/generate"
SSE = "text/event-stream"


@dataclass(frozen=True)
class Exchange:
    """One HTTP request and the answer real vLLM gave to it."""

    name: str
    method: str
    path: str
    request_headers: dict[str, str]
    request_body: Any
    """The parsed JSON body, or None when the body was absent or not JSON."""
    request_raw: str | None
    """The raw body when it was sent as text (invalid JSON, wrong Content-Type)."""
    status: int
    response_headers: dict[str, str]
    response_body: Any
    response_raw: str | None
    events: list[dict[str, Any]] | None = None
    """SSE events as `{"data": ...}` objects (the OpenAPI 3.2 item shape); None if not SSE."""
    server: str = ""
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def content_type(self) -> str | None:
        """The response media type without parameters (`text/event-stream; charset=utf-8`)."""
        for key, value in self.response_headers.items():
            if key.lower() == "content-type":
                return value.split(";")[0].strip().lower()
        return "text/event-stream" if self.events is not None else None

    @property
    def request_content_type(self) -> str | None:
        for key, value in self.request_headers.items():
            if key.lower() == "content-type":
                return value.split(";")[0].strip().lower()
        return None


def capture(name: str) -> dict[str, Any]:
    """One recorded exchange as stored, from either captures folder."""
    for folder in (FIXTURES, ISSUE11):
        path = folder / f"{name}.json"
        if path.exists():
            return dict(json.loads(path.read_text(encoding="utf-8")))
    raise FileNotFoundError(name)


def parse_sse(raw: bytes) -> list[dict[str, Any]]:
    """Decode raw SSE bytes into event objects `{"data", "event"?, "id"?, "retry"?}`."""
    return list(sse_events(raw))


def _events_from_strings(items: list[Any]) -> list[dict[str, Any]]:
    """Timing captures store events as JSON strings (or parsed dicts) without the sentinel."""
    return [{"data": item if isinstance(item, str) else json.dumps(item)} for item in items]


def _pair(name: str, data: dict[str, Any], **extra: Any) -> Exchange:
    request, response = data["request"], data["response"]
    events = None
    sse_file = response.get("raw_sse_file")
    if sse_file:
        events = parse_sse((FIXTURES / sse_file).read_bytes())
    return Exchange(
        name=name,
        method=request["method"].upper(),
        path=request["path"],
        request_headers=dict(request.get("headers") or {}),
        request_body=request.get("body"),
        request_raw=request.get("raw_body"),
        status=int(response["status"]),
        response_headers=dict(response.get("headers") or {}),
        response_body=response.get("body"),
        response_raw=response.get("raw_body"),
        events=events,
        server=str(data.get("server", "")),
        notes=str(data.get("notes", "")),
        extra=dict(extra),
    )


def _sequence(name: str, steps: list[dict[str, Any]], path: str) -> Iterator[Exchange]:
    for index, step in enumerate(steps):
        yield Exchange(
            name=f"{name}[{index}]",
            method="POST",
            path=path,
            request_headers={"Content-Type": "application/json"},
            request_body=step["request"],
            request_raw=None,
            status=int(step["status"]),
            response_headers={"content-type": "application/json"},
            response_body=step["response"],
            response_raw=None,
        )


def _timing(name: str, data: dict[str, Any]) -> Exchange:
    """An abort-timing run: the streamed generate request and its recorded events."""
    items = data.get("events") or []
    events = _events_from_strings([item for item in items if item != "..."])
    return Exchange(
        name=name,
        method="POST",
        path=GENERATE,
        request_headers={"Content-Type": "application/json"},
        request_body=data["request"],
        request_raw=None,
        status=int(data.get("stream_status", 200)),
        response_headers={"content-type": SSE},
        response_body=None,
        response_raw=None,
        events=events,
        notes=str(data.get("notes", "")),
        extra={"abort": data.get("abort"), "abort_path": data.get("abort_path")},
    )


def _bare_sse(path: Path) -> Exchange:
    """A curl run saved as `.sse` only: the answer to a streamed generate request."""
    return Exchange(
        name=path.stem,
        method="POST",
        path=GENERATE,
        request_headers={},
        request_body=None,
        request_raw=None,
        status=200,
        response_headers={"content-type": SSE},
        response_body=None,
        response_raw=None,
        events=parse_sse(path.read_bytes()),
    )


@cache
def exchanges() -> tuple[Exchange, ...]:
    """Every exchange of every capture, in file-name order."""
    found: list[Exchange] = []
    referenced: set[str] = set()
    for path in sorted(FIXTURES.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        name = path.stem
        if isinstance(data, list):
            found.extend(_sequence(name, data, "/v1/completions/derender"))
        elif isinstance(data.get("response"), dict):
            sse_file = data["response"].get("raw_sse_file")
            if sse_file:
                referenced.add(sse_file)
            found.append(_pair(name, data))
        else:
            found.append(_timing(name, data))
    for path in sorted(FIXTURES.glob("*.sse")):
        if path.name not in referenced:
            found.append(_bare_sse(path))
    return tuple(found)


def by_name(name: str) -> Exchange:
    """One exchange by its name (the capture file stem, `[i]` for sequence steps)."""
    for exchange in exchanges():
        if exchange.name == name:
            return exchange
    raise KeyError(name)
