"""What reproduces a failure, and how a replayed answer shows the same violation again.

A failure's reproducer is the exchange that failed. A check that acted on a request in flight
knows it best and says it (`outcomes.Failure.reproducer`: a script from `inflight.script`);
otherwise it is the exchange the failing assertion judged: one the check names
(`exc.exchange`), else the last one the check sent itself. Never one of the foundation
exchanges the run replays into every check that stands on them (`Session.remember` names
them, `Exchange.shared`): those answered correctly, or the check would have been blocked.

The evidence of a failure (`outcomes.Failure.evidence`) is written so a machine can read it
back from a replay's output: `SECTION PATH = VALUE`, as in
`stream choices[0].finish_reason = "length"` (`Evidence`). A reproducer carries it as its
`# evidence:` line; `Evidence.read` finds the same path in what the reproducer printed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from conformance.wire.exchange import Exchange

FOUNDATION = "foundation"
"""How every foundation's shared key begins (`grounds`: `foundation-body`, `foundation:ID`)."""
EVIDENCE = "# evidence: "
SECTION = "### "
"""A script prints each thing it received under a line `### NAME ...` (`inflight.script`)."""
ANSWER = "answer"
"""The section of what comes before any `###` line: a lone curl's output."""
_STEP = re.compile(r"\.?([A-Za-z_][\w-]*)|\[(-?\d+)\]")
_STATUS = re.compile(r"^HTTP/\S+ (\d{3})")


def reproducer_for(exc: BaseException | None, log: Sequence[Exchange]) -> str:
    """The reproducer of what a check raised (`exc`), given the exchanges it was shown (`log`,
    replayed foundation exchanges included)."""
    script = getattr(exc, "reproducer", "")
    evidence = getattr(exc, "evidence", "")
    if isinstance(script, str) and script:
        return script if not evidence or EVIDENCE in script else f"{script}\n{EVIDENCE}{evidence}"
    own = [e for e in log if not e.shared.startswith(FOUNDATION)] or list(log)
    named = getattr(exc, "exchange", None)
    chosen = named if isinstance(named, Exchange) else (own[-1] if own else None)
    if chosen is None:
        return ""
    text = chosen.reproducer()
    if isinstance(evidence, str) and evidence:
        text += f"\n{EVIDENCE}{evidence}"
    earlier = own[: own.index(chosen)] if chosen in own else []
    if earlier:
        text += f"\n# the exchange before it: {earlier[-1].curl()}"
    return text


@dataclass(frozen=True)
class Evidence:
    """One machine-checkable fact a failure saw: in the `section` of what was received, at
    `path` (`status`; a JSON path such as `choices[0].finish_reason`; `len(PATH)`), `seen`."""

    section: str
    path: str
    seen: Any

    def __str__(self) -> str:
        return f"{self.section} {self.path} = {json.dumps(self.seen)}"

    @classmethod
    def parse(cls, text: str) -> Evidence | None:
        head, sep, value = text.partition(" = ")
        section, _, path = head.strip().partition(" ")
        if not sep or not path:
            return None
        try:
            return cls(section, path, json.loads(value))
        except ValueError:
            return None

    @classmethod
    def of(cls, reproducer: str) -> Evidence | None:
        """The evidence a reproducer carries (its `# evidence:` line), if any."""
        for line in reproducer.splitlines():
            if line.startswith(EVIDENCE):
                return cls.parse(line.removeprefix(EVIDENCE))
        return None

    def read(self, output: str) -> tuple[bool, Any]:
        """(found, value) at this evidence's path in a replay's `output`; the same violation
        again is `value == self.seen`."""
        text = sections(output).get(self.section)
        if text is None:
            return False, None
        if self.path == "status":
            codes = [m.group(1) for m in map(_STATUS.match, text.splitlines()) if m]
            return (True, int(codes[-1])) if codes else (False, None)
        if self.section == "stream":
            for event in reversed(_events(text)):
                found, value = resolve(event, self.path)
                if found and value is not None:
                    return True, value
            return False, None
        body = _json(text)
        return (False, None) if body is None else resolve(body, self.path)


def sections(output: str) -> dict[str, str]:
    """What a script printed, by section (`### NAME`); before any, `answer`."""
    found: dict[str, list[str]] = {ANSWER: []}
    current = found[ANSWER]
    for line in output.splitlines():
        if line.startswith(SECTION):
            name = line.removeprefix(SECTION).split(" ", 1)[0].rstrip(":")
            current = found.setdefault(name, [])
            current.clear()
            continue
        current.append(line)
    return {name: "\n".join(lines) for name, lines in found.items() if lines}


def resolve(data: Any, path: str) -> tuple[bool, Any]:
    """(found, value) of `path` in `data`: `a.b[0].c`, or `len(a.b)`."""
    counted = path.startswith("len(") and path.endswith(")")
    value = data
    for key, index in _STEP.findall(path[4:-1] if counted else path):
        if key and isinstance(value, dict) and key in value:
            value = value[key]
        elif index and isinstance(value, list) and -len(value) <= int(index) < len(value):
            value = value[int(index)]
        else:
            return False, None
    if counted:
        return (True, len(value)) if isinstance(value, list | dict | str) else (False, None)
    return True, value


def _events(text: str) -> list[Any]:
    found = []
    for line in text.splitlines():
        data = line.removeprefix("data:").strip() if line.startswith("data:") else None
        if data and data != "[DONE]":
            try:
                found.append(json.loads(data))
            except ValueError:
                continue
    return found


def _json(text: str) -> Any:
    """The JSON body of a section: after the head of a `curl -i` answer, else the last line
    that is JSON."""
    lines = text.replace("\r", "").split("\n")
    if lines and _STATUS.match(lines[0]) and "" in lines:
        body = "\n".join(lines[lines.index("") + 1 :]).strip()
        try:
            return json.loads(body)
        except ValueError:
            pass
    for line in reversed(lines):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return None
