"""Request bodies as JSON, refusing up front what could never be answered.

vLLM 0.32 reads bodies with Python's json module, like the mock. Two inputs parse there but
break later, and both were 500s in the mock (captured against vLLM 0.32 in
`tests/fixtures/vllm-0.32-issue11/`):

- deep nesting: about 1,000 levels exhaust the recursion limit inside `json.loads`. vLLM answers
  FastAPI's flat 400 `{"detail": "There was an error parsing the body"}` (the abort route, which
  reads the body itself, a 500). The mock refuses more than `MAX_DEPTH` levels as invalid JSON,
  well below the interpreter's limit, so no nested value can exhaust the stack later either
  (a derender echo, an error summary);
- a lone surrogate (the UTF-8-style bytes ED A0 80, or the escape `\\ud800`): `json.loads`
  lets it into a `str` that cannot be written back as UTF-8. vLLM answers 500 once the answer
  echoes it (`request_id`), and 400 with the codec's own message where it encodes the string
  first (a stop string); the mock gives that 400 wherever the string is.

Both checks walk the parsed body only when a cheap scan of the bytes says they might apply, so
ordinary bodies pay two `bytes.count` calls and one regex search.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mock_server.wire.errors import ValidationFailure, bad_request, validation_item

MAX_DEPTH = 256
"""Deepest nesting of arrays and objects accepted (vLLM's parser gives out near 1,000)."""
TOO_DEEP = f"JSON nested deeper than {MAX_DEPTH} levels"
_MAYBE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class TooDeep(ValueError):
    """The body nests arrays and objects deeper than MAX_DEPTH."""


def loads(raw: bytes) -> Any:
    """`json.loads` (NaN and Infinity included, as vLLM parses them), with nesting bounded.

    Raises json.JSONDecodeError or UnicodeDecodeError for bytes that are not JSON, TooDeep for
    too much nesting, and a 400 ApiError for a lone surrogate.
    """
    # "{" then a non-NUL byte: detect_encoding's "utf-8" without its checks (no BOM so starts);
    # decoded here as json.loads would, to spare it the detection
    utf8 = raw[:1] == b"{" and raw[1:2] not in (b"", b"\0")
    try:
        body = json.loads(raw.decode("utf-8", "surrogatepass") if utf8 else raw)
    except RecursionError:
        raise TooDeep(TOO_DEEP) from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise
    except ValueError as exc:  # e.g. an integer literal past sys.get_int_max_str_digits()
        raise json.JSONDecodeError(str(exc), "", 0) from None
    if not utf8:
        utf8 = json.detect_encoding(raw) == "utf-8"
    deep = raw.count(b"[") + raw.count(b"{") > MAX_DEPTH
    odd = not utf8 or _MAYBE_SURROGATE.search(raw) is not None
    if deep or odd:
        _walk(body, odd)
    return body


def _walk(body: Any, strings: bool) -> None:
    """Depth of every container; with `strings`, every key and string value too."""
    stack: list[tuple[Any, int]] = [(body, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            _check_text(node)
            continue
        if depth >= MAX_DEPTH:
            raise TooDeep(TOO_DEEP)
        items: Any = node.values() if isinstance(node, dict) else node
        if strings and isinstance(node, dict):
            for key in node:
                _check_text(key)
        for item in items:
            if isinstance(item, dict | list) or (strings and isinstance(item, str)):
                stack.append((item, depth + 1))


def _check_text(text: str) -> None:
    if _SURROGATE.search(text) is None:
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        # vLLM 0.32's own 400 for a surrogate it encodes first (a stop string): the codec's text
        raise bad_request(str(exc)) from None


def parse_json(raw: bytes) -> Any:
    """The body as JSON, or FastAPI's json_invalid error as vLLM renders it."""
    if not raw.strip():
        raise ValidationFailure([validation_item("missing", "body", "Field required", None)])
    try:
        return loads(raw)
    except json.JSONDecodeError as exc:
        loc = f"body.{exc.pos}"
        item = validation_item("json_invalid", loc, "JSON decode error", {}, {"error": exc.msg})
        raise ValidationFailure([item]) from None
    except UnicodeDecodeError:
        item = validation_item(
            "json_invalid", "body.0", "JSON decode error", {}, {"error": "Invalid UTF-8"}
        )
        raise ValidationFailure([item]) from None
    except TooDeep:
        ctx = {"error": TOO_DEEP}
        item = validation_item("json_invalid", "body.0", "JSON decode error", {}, ctx)
        raise ValidationFailure([item]) from None
