"""No credential in any output: the one rule every record of a run is written through.

The kit learns a key once, where it spells the header that carries it (`sender.auth_header`),
and every record an output is made from (a check's message and reproducer, `results.CheckResult`;
a fuzz finding's curl and message, `fuzz.findings.Finding`) is redacted when it is made. So the
JSON report, JUnit, the terminal, the HTML/Markdown matrix (rendered from the JSON), the fuzz
summary and the live gate's lines all say `$TITO_API_KEY` where the key was, as the suite's own
curl reproducers always have (`exchange.Exchange.curl`).
"""

from __future__ import annotations

import re
import threading

PLACEHOLDER = "$TITO_API_KEY"
HEADER = f'"Authorization: Bearer {PLACEHOLDER}"'
"""The header as a reproducer spells it: double quotes, so a shell expands the variable."""
BARE_MIN = 8
"""Below this length a key is redacted only where it follows `Bearer `: a short key cannot be
told from a word of a message (and the header is where it is sent)."""

_TOKEN_END = r"(?![\w.~+/=-])"  # the whole key, not the start of a longer token
_known: set[str] = set()
_lock = threading.Lock()


def remember(key: str | None) -> None:
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
