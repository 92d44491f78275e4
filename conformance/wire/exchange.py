"""A record of one HTTP exchange (what was sent, what came back, and how to replay it), and
the one rule every record of a run is written through: no credential in any output.

The kit learns a key once, where it spells the header that carries it (`sender.auth_header`),
and every record an output is made from (a check's message and reproducer, `results.CheckResult`;
a fuzz finding's curl and message, `fuzz.findings.Finding`) is redacted when it is made. So the
JSON report, JUnit, the terminal, the HTML/Markdown matrix (rendered from the JSON), the fuzz
summary and the live gate's lines all say `$TITO_API_KEY` where the key was, as the suite's own
curl reproducers always have (`Exchange.curl`).
"""

from __future__ import annotations

import json
import re
import shlex
import threading
from dataclasses import dataclass, field

# ---------------------------------------- no credential in any output

PLACEHOLDER = "$TITO_API_KEY"
HEADER = f'"Authorization: Bearer {PLACEHOLDER}"'
"""The header as a reproducer spells it: double quotes, so a shell expands the variable."""
BARE_MIN = 8
"""Below this length a key is redacted only where it follows `Bearer `: a short key cannot be
told from a word of a message (and the header is where it is sent)."""

_TOKEN_END = r"(?![\w.~+/=-])"  # the whole key, not the start of a longer token
_known: set[str] = set()
_lock = threading.Lock()


def conceal(key: str | None) -> None:
    """Note a key the kit sends, so every record made from now on leaves it out."""
    if key and key not in _known:
        with _lock:
            _known.add(key)


def known() -> frozenset[str]:
    return frozenset(_known)


def redact(text: str) -> str:
    """`text` with every known key replaced by `$TITO_API_KEY`; a curl header argument that
    carried one (`-H 'Authorization: Bearer KEY'`, as schemathesis writes it) becomes the
    suite's `-H "Authorization: Bearer $TITO_API_KEY"`."""
    if not text or not _known:
        return text
    for key in sorted(_known, key=len, reverse=True):  # a key inside a longer one: the longer
        if key not in text:
            continue
        escaped = re.escape(key)
        text = re.sub(rf"""(['"])authorization:\s*bearer\s+{escaped}\1""", HEADER, text, flags=re.I)
        text = re.sub(rf"(?i)(bearer\s+){escaped}{_TOKEN_END}", rf"\g<1>{PLACEHOLDER}", text)
        if len(key) >= BARE_MIN:
            text = text.replace(key, PLACEHOLDER)
    return text


# ---------------------------------------- one exchange

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
    shared: str = ""
    """The key of the shared computation that sent it (`Session.remember`), where one did: a
    foundation's exchanges are replayed into every check that stands on them, and are not
    what the check itself judged (`verdicts.reproducer`)."""

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
        elif self.response_body:  # a broken answer's bytes are less evidence than its error
            text += ": " + _cut(self.response_body.decode("utf-8", "replace"), self.error)
        if self.error:
            text += f"; then {self.error}"
        return text

    def sent(self) -> str:
        body = self.body.decode("utf-8", "replace") if self.body is not None else ""
        return f"{self.method} {self.url} {_cut(body)}".rstrip()

    def reproducer(self) -> str:
        return f"{self.curl()}\n# sent: {self.sent()}\n# received: {self.received()}"


def _cut(text: str, broken: str = "") -> str:
    text = text.replace("\n", "\\n")
    most = SNIPPET // 5 if broken else SNIPPET
    return text if len(text) <= most else text[:most] + f"... ({len(text)} chars)"


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
