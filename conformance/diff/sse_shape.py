"""Compare two SSE answers by event structure, never by the tokens they carry.

A stream is reduced to facts (framing, `[DONE]` last, choices per chunk, which chunk carries
`finish_reason` / `weight_versions` / `usage`, the usage-only chunk, error events) and to one
representative chunk per role (first, token, final per choice, usage-only, error) whose JSON
structure is compared. How many chunks a stream has is not structure: under load a server may
put several tokens into one chunk.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from conformance.diff.answer import Answer, Difference, Request
from conformance.diff.generate_rules import (
    both_by_length,
    compare_relation,
    compare_usage,
    content_of,
    tokens_of,
)
from conformance.diff.json_shape import JsonRules, compare_json

DONE = "[DONE]"
NOT_KNOWN = "n/a"
"""A fact one side cannot show (no non-final chunk to carry weight_versions): not compared."""


@dataclass
class Stream:
    """One SSE answer, decoded and sorted into roles."""

    data: list[Any] = field(default_factory=list)
    """Each event's data: a parsed JSON value, DONE, or the raw string when it is not JSON."""
    field_names: set[str] = field(default_factory=set)
    chunks: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    not_json: int = 0

    @classmethod
    def decode(cls, events: tuple[dict[str, Any], ...]) -> Stream:
        stream = cls()
        for event in events:
            stream.field_names |= {key for key in event if key != "data"}
            text = str(event.get("data", ""))
            if text == DONE:
                stream.data.append(DONE)
                continue
            try:
                value = json.loads(text)
            except ValueError:
                stream.not_json += 1
                stream.data.append(text)
                continue
            stream.data.append(value)
            if isinstance(value, dict) and "error" in value:
                stream.errors.append(value)
            elif isinstance(value, dict):
                stream.chunks.append(value)
        return stream

    def choices(self, chunk: dict[str, Any]) -> list[dict[str, Any]]:
        found = chunk.get("choices")
        return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []

    def by_index(self) -> dict[Any, list[dict[str, Any]]]:
        out: dict[Any, list[dict[str, Any]]] = {}
        for chunk in self.chunks:
            for choice in self.choices(chunk):
                out.setdefault(choice.get("index"), []).append(choice)
        return out

    def finals(self) -> dict[Any, dict[str, Any]]:
        found: dict[Any, dict[str, Any]] = {}
        for index, choices in self.by_index().items():
            for choice in choices:
                if choice.get("finish_reason") is not None:
                    found.setdefault(index, choice)
        return found

    def usage_only(self) -> list[dict[str, Any]]:
        return [c for c in self.chunks if c.get("choices") == [] and c.get("usage") is not None]

    def facts(self) -> dict[str, str]:
        """Everything about the stream's shape that does not depend on the sampled tokens."""
        by_index = self.by_index()
        choice_chunks = [c for c in self.chunks if c.get("choices") != []]
        facts = {
            "event fields besides data": ", ".join(sorted(self.field_names)) or "none",
            "data that is not JSON": str(self.not_json),
            "[DONE]": _done_position(self.data),
            "error events": str(len(self.errors)),
            "choices per chunk": _values({len(self.choices(c)) for c in choice_chunks}),
            "choice indices": _values(set(by_index)),
            "final chunks per choice": _values({_finals(v) for v in by_index.values()}),
            "final chunk is the choice's last": _values(
                {_final_last(v) for v in by_index.values()}
            ),
            "weight_versions on non-final chunks": _values(
                {_wv_early(v) for v in by_index.values()}
            ),
            "weight_versions on the final chunk": _values(
                {_wv_final(v) for v in by_index.values()}
            ),
            "usage on choice chunks": _presence([c.get("usage") for c in choice_chunks]),
            "usage-only chunks": str(len(self.usage_only())),
            "usage-only chunk after every final": _usage_after_finals(self.chunks),
            "prompt_token_ids on": _prompt_ids_on(self.chunks),
            "top_logprobs lengths": _values(_top_lengths(by_index)),
        }
        return facts


def _values(values: set[Any]) -> str:
    known = {v for v in values if v != NOT_KNOWN}
    return ", ".join(sorted(str(v) for v in known)) or NOT_KNOWN


def _done_position(data: list[Any]) -> str:
    count = sum(1 for d in data if d == DONE)
    if count == 0:
        return "missing"
    if data[-1] != DONE:
        return "not last"
    return "last" if count == 1 else f"last, {count} times"


def _finals(choices: list[dict[str, Any]]) -> int:
    return sum(1 for c in choices if c.get("finish_reason") is not None)


def _final_last(choices: list[dict[str, Any]]) -> bool:
    return choices[-1].get("finish_reason") is not None


def _wv_early(choices: list[dict[str, Any]]) -> str:
    early = [c.get("weight_versions") for c in choices if c.get("finish_reason") is None]
    return _presence(early)


def _wv_final(choices: list[dict[str, Any]]) -> str:
    return _presence([c.get("weight_versions") for c in choices if c.get("finish_reason")])


def _presence(values: list[Any]) -> str:
    if not values:
        return NOT_KNOWN
    present = sum(1 for v in values if v is not None)
    return "none" if present == 0 else "all" if present == len(values) else "some"


def _usage_after_finals(chunks: list[dict[str, Any]]) -> str:
    positions = [i for i, c in enumerate(chunks) if c.get("choices") == []]
    if not positions:
        return NOT_KNOWN
    finals = [
        i
        for i, c in enumerate(chunks)
        for choice in (c.get("choices") or [])
        if isinstance(choice, dict) and choice.get("finish_reason") is not None
    ]
    return "yes" if min(positions) > max(finals, default=-1) else "no"


def _prompt_ids_on(chunks: list[dict[str, Any]]) -> str:
    on = [i for i, c in enumerate(chunks) if "prompt_token_ids" in c]
    if not on:
        return "none"
    if on == [0]:
        return "first chunk only"
    return "every chunk" if len(on) == len(chunks) else "some chunks"


def _top_lengths(by_index: dict[Any, list[dict[str, Any]]]) -> set[int]:
    lengths: set[int] = set()
    for choices in by_index.values():
        for choice in choices:
            for entry in content_of(choice) or []:
                if isinstance(entry, dict) and isinstance(entry.get("top_logprobs"), list):
                    lengths.add(len(entry["top_logprobs"]))
    return lengths


def _content_matches(choices: list[dict[str, Any]]) -> bool | None:
    pairs = [(content_of(c), tokens_of(c)) for c in choices]
    known = [(content, tokens) for content, tokens in pairs if content is not None]
    if not known:
        return None
    return all(len(content) == len(tokens) for content, tokens in known)


def compare_stream(
    request: Request, reference: Answer, candidate: Answer, rules: JsonRules
) -> list[Difference]:
    ref = Stream.decode(reference.events or ())
    cand = Stream.decode(candidate.events or ())
    found: list[Difference] = []
    if reference.raw_stream is not None and candidate.raw_stream is not None:
        left, right = framing(reference.raw_stream), framing(candidate.raw_stream)
        if left != right:
            found.append(Difference("$sse:framing", "stream structure", left, right))
    ref_facts, cand_facts = ref.facts(), cand.facts()
    for name, value in ref_facts.items():
        if NOT_KNOWN not in (value, cand_facts[name]) and cand_facts[name] != value:
            found.append(Difference(f"$sse:{name}", "stream structure", value, cand_facts[name]))
    found += _compare_roles(ref, cand, rules)
    found += list(_compare_counts(request, ref, cand))
    return found


def _roles(stream: Stream) -> dict[str, dict[str, Any]]:
    """One chunk per role. `first` is compared without its choices: whether the first chunk
    is also a final one depends on when the model stops."""
    roles: dict[str, dict[str, Any]] = {}
    plain = [c for c in stream.chunks if c.get("choices") != []]
    if plain:
        roles["first"] = {k: v for k, v in plain[0].items() if k != "choices"}
    for chunk in _token_chunks(stream)[:1]:
        roles["token"] = chunk
    for chunk in plain:
        for choice in stream.choices(chunk):
            if choice.get("finish_reason") is not None:
                roles.setdefault(f"final {choice.get('index')}", chunk)
    if stream.usage_only():
        roles["usage"] = stream.usage_only()[0]
    if stream.errors:
        roles["error"] = stream.errors[0]
    return roles


def _compare_roles(ref: Stream, cand: Stream, rules: JsonRules) -> list[Difference]:
    """The JSON structure of one representative chunk per role present on both sides.

    A role missing on one side is a fact (counted in `facts`) or the model's doing (a stream
    that ends on its first token has no token-only chunk).
    """
    found: list[Difference] = []
    left, right = _roles(ref), _roles(cand)
    for role, chunk in left.items():
        if role in right:
            found += compare_json(chunk, right[role], f"$sse[{role}]", rules)
    if "token" in left:
        for chunk in _token_chunks(cand):
            found += compare_json(left["token"], chunk, "$sse[token]", rules)
    return found


def _token_chunks(stream: Stream) -> list[dict[str, Any]]:
    """Chunks after the first whose choices are all still running (no finish_reason)."""
    plain = [c for c in stream.chunks if c.get("choices") != []]
    return [
        chunk
        for chunk in plain[1:]
        if all(c.get("finish_reason") is None for c in stream.choices(chunk))
    ]


def _compare_counts(request: Request, ref: Stream, cand: Stream) -> Iterator[Difference]:
    ref_by, cand_by = ref.by_index(), cand.by_index()
    ref_finals, cand_finals = ref.finals(), cand.finals()
    for index in sorted(set(ref_by) & set(cand_by), key=str):
        loc = f"$sse[choice {index}]"
        ref_tokens = sum(len(tokens_of(c)) for c in ref_by[index])
        cand_tokens = sum(len(tokens_of(c)) for c in cand_by[index])
        left, right = ref_finals.get(index, {}), cand_finals.get(index, {})
        if both_by_length(request, left, right) and ref_tokens != cand_tokens:
            yield Difference(
                f"{loc}.token_ids",
                "total length (finish_reason length on both)",
                str(ref_tokens),
                str(cand_tokens),
            )
        yield from compare_relation(
            f"{loc}.logprobs.content",
            "len(logprobs.content) == len(token_ids) per chunk",
            _content_matches(ref_by[index]),
            _content_matches(cand_by[index]),
        )
    ref_usage, cand_usage = ref.usage_only(), cand.usage_only()
    if ref_usage and cand_usage:
        ref_total = sum(len(tokens_of(c)) for v in ref_by.values() for c in v)
        cand_total = sum(len(tokens_of(c)) for v in cand_by.values() for c in v)
        yield from compare_usage(
            request, ref_usage[-1], cand_usage[-1], ref_total, cand_total, "$sse[usage]"
        )


def framing(raw: bytes) -> str:
    """How events are framed: line ending, blank-line separation, lines per event."""
    text = raw.decode("utf-8", "replace")
    ending = "CRLF" if "\r\n" in text else "LF"
    text = text.replace("\r\n", "\n")
    if not text.strip():
        return "empty"
    blocks = [b for b in text.split("\n\n") if b.strip()]
    fields = sorted({line.split(":", 1)[0] for b in blocks for line in b.split("\n") if line})
    max_lines = max(len([line for line in b.split("\n") if line]) for b in blocks)
    terminated = "terminated" if text.endswith("\n\n") else "last event unterminated"
    return f"{ending}, fields {'/'.join(fields)}, up to {max_lines} line(s) per event, {terminated}"
