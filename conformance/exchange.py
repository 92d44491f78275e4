"""A record of one HTTP exchange: what was sent, what came back, and how to replay it."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field

from .credentials import HEADER

SNIPPET = 600
SECRET_HEADERS = ("authorization",)


@dataclass
class Exchange:
    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None
    stream: bool = False
    status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    response_body: bytes = b""
    events: list[str] = field(default_factory=list)
    error: str = ""
    elapsed_s: float | None = None  # from sending to the status line
    body_sent_at: float | None = None
    """`time.monotonic()` once the whole request was written to the socket (httpcore's trace;
    None in-process or before then): when the server can first have it, whatever the client's
    threads did before."""
    head_at: float | None = None
    """`time.monotonic()` once the answer's head was read (httpcore's trace, as above): a
    non-streamed answer's head leaves the server once its generation has ended, so the two
    together time the server, not how fast the client reads the body."""

    def curl(self) -> str:
        """A curl command that replays the request (the API key is left as $TITO_API_KEY)."""
        parts = ["curl", "-sS", "-i"]
        if self.stream:
            parts.append("-N")
        parts += ["-X", self.method, shlex.quote(self.url)]
        for name, value in self.headers.items():
            if name.lower() in SECRET_HEADERS:
                parts += ["-H", HEADER]
            else:
                parts += ["-H", shlex.quote(f"{name}: {value}")]
        if self.body is not None:
            parts += ["--data-binary", shlex.quote(self.body.decode("utf-8", "replace"))]
        return " ".join(parts)

    def received(self) -> str:
        """One paragraph on what came back."""
        if self.error and self.status is None:
            return f"no response: {self.error}"
        text = f"HTTP {self.status}"
        ctype = self.response_headers.get("content-type")
        if ctype:
            text += f" ({ctype})"
        if self.events:
            shown = self.events[:3] + (["..."] if len(self.events) > 4 else []) + self.events[-1:]
            text += f", {len(self.events)} events: " + " | ".join(_cut(e) for e in shown)
        elif self.response_body:
            text += ": " + _cut(self.response_body.decode("utf-8", "replace"))
        if self.error:
            text += f"; then {self.error}"
        return text

    def sent(self) -> str:
        body = self.body.decode("utf-8", "replace") if self.body is not None else ""
        return f"{self.method} {self.url} {_cut(body)}".rstrip()

    def reproducer(self) -> str:
        return f"{self.curl()}\n# sent: {self.sent()}\n# received: {self.received()}"


def _cut(text: str) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= SNIPPET else text[:SNIPPET] + f"... ({len(text)} chars)"


def dumps(body: object) -> bytes:
    """Compact JSON, as clients usually send it."""
    return json.dumps(body, separators=(",", ":")).encode()


def stated_error(status: int | None, body: bytes) -> int | None:
    """The error code an answer states in its body (`{"error": {"code": 400, ...}}`) when it
    is not the answer's HTTP status (a 200, or a router's 502, carrying an engine's 400): a
    rejection answered with the wrong status, which is ERR-002's to judge."""
    if status is None or status == 401:  # vLLM's 401 body is flat: AUTH-004's
        return None
    if b'"error"' not in body[:200]:  # most answers: not parsed at all
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return None
    error = data.get("error") if isinstance(data, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, int) and code >= 400 and code != status else None
