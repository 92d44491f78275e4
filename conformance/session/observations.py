"""What the run received, kept (bounded) for the requirements judged over every answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.tito.answers import KEPT, Answer

MEDIA = "media"  # `observe_media`'s key beside a schema's
MISSTATED = "misstated"  # `observed`'s key of the answers whose error code is not their status
PER_SCHEMA = 2000
"""Bodies kept per schema for the SCHEMA-* checks: enough to judge, bounded over a long run."""
PER_CHECK = 500
"""Bodies kept of what the running check read (`recent`), to tell whose field is malformed."""


@dataclass
class Observations:
    # schema name -> (what, body): every body the checks received, for the SCHEMA-* checks
    observed: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    # what the running check received (schema, what, body): read when the check fails, to tell
    # a malformed answer (SCHEMA-*'s) from the check's own requirement
    recent: list[tuple[str, str, Any]] = field(default_factory=list)
    malformed: list[tuple[str, str, Any]] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)  # every generate answered

    def observe(self, schema: str, what: str, body: Any) -> None:
        """Keep a received body for the requirement that judges whole bodies, and as what the
        running check read (`recent`)."""
        self._keep(schema, (what, body))
        if len(self.recent) < PER_CHECK:
            self.recent.append((schema, what, body))

    def misstated(self, what: str, status: int | None, code: int) -> None:
        """Keep an answer whose body states error `code` under another HTTP status."""
        self._keep(MISSTATED, (what, {"status": status, "code": code}))

    def keep(self, answer: Answer | None) -> None:
        """Keep a generate answer (of a generate schema) for the rules judged over every one."""
        if answer is not None and len(self.answers) < KEPT:
            self.answers.append(answer)

    def observe_media(self, schema: str, what: str, media: str) -> None:
        """Keep an answer of `schema` that came under another content type than the spec's
        (its body may still parse): the SCHEMA-* requirement of that schema says so."""
        self._keep(f"{schema} {MEDIA}", (what, media))

    def judged(self, schema: str) -> list[tuple[str, Any]]:
        """Every body of `schema` to judge: those kept, and any a blocked check read."""
        kept = self.observed.get(schema, [])
        held = {id(body) for _, body in kept}
        extra = [(w, b) for sch, w, b in self.malformed if sch == schema and id(b) not in held]
        return kept + extra

    def _keep(self, key: str, entry: tuple[str, Any]) -> None:
        kept = self.observed.setdefault(key, [])
        if len(kept) < PER_SCHEMA:
            kept.append(entry)
