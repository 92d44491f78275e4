"""How deep a JSON text nests, found without parsing it: the wire refuses an answer nested
past `MAX_DEPTH` before anything decodes it.

Python's `json` decodes recursively: a body nested 100,000 deep raises RecursionError (a
RuntimeError, which no reader of a body expects) wherever it is parsed, in the kit or in a
library it hands the body to (schemathesis's checks, jsonschema). Catching that error at each
parse would still let a body nested just below the interpreter's limit through, to break the
next recursive reader (`json.dumps` of it for a report, a schema walk); so the depth is bounded
once, where every answer is read, far below any recursion limit and far above any TITO answer.
"""

from __future__ import annotations

import re
from array import array
from itertools import accumulate

MAX_DEPTH = 64
"""Arrays and objects inside each other. The deepest TITO answer nests 8 levels (the body, its
choices, a choice, its logprobs, their content, an entry, its top_logprobs, an alternative);
routed experts (a list per token of a list per layer) and a derendered message's tool calls
nest no deeper: an 8x margin, and far below any recursion limit."""

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
"""A JSON string (escapes included): its brackets are text, not nesting."""
_OTHERS = bytes(b for b in range(256) if b not in b"[]{}")
_SIGNS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
"""An opening bracket as +1, a closing one as -1 (read as signed bytes)."""


def depth(raw: bytes) -> int:
    """How deep `raw` nests, if it is JSON (or several JSON texts, as SSE data lines are): the
    most brackets open at once outside strings. A text with at most `MAX_DEPTH` opening
    brackets is answered at once with their count (an upper bound, all a comparison with
    `MAX_DEPTH` needs); others cost about what parsing them does (a string scan in C). For a
    text that is no JSON the count is of its brackets, which is all a reader could trip on."""
    opening = raw.count(b"[") + raw.count(b"{")
    if opening <= MAX_DEPTH:
        return opening
    signs = _STRING.sub(b"", raw).translate(_SIGNS, _OTHERS)
    return max(accumulate(array("b", signs)), default=0)


def too_deep(raw: bytes | str) -> int | None:
    """The depth of `raw` when it is past `MAX_DEPTH`, else None."""
    found = depth(raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw)
    return found if found > MAX_DEPTH else None
