"""Exchanges several checks judge, made once per run.

Two checks often stand on the same answer (a seeded generate, a minimal stream). The memo
makes it once; a check served from it is shown the exchanges and bodies it stands on, as if it
had received them itself, so its evidence and reproducer are those exchanges.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest

from conformance.wire import Client

T = TypeVar("T")
Recent = list[tuple[str, str, Any]]


@dataclass
class Memo:
    client: Client
    recent: Recent  # the running check's received bodies (`Observations.recent`)
    _kept: dict[str, tuple[tuple[Any, BaseException | None], list[Any], Recent]] = field(
        default_factory=dict
    )

    def once(self, key: str, factory: Callable[[], T]) -> T:
        """`factory()` the first time `key` is asked, what it gave (or raised) after."""
        if key not in self._kept:
            before, seen = len(self.client.log), len(self.recent)
            try:
                outcome: tuple[Any, BaseException | None] = (factory(), None)
            except (Exception, pytest.skip.Exception) as exc:  # every check sharing it sees it
                outcome = (None, exc)
            for sent in self.client.log[before:]:  # the innermost computation names it
                sent.shared = sent.shared or key
            self._kept[key] = (outcome, self.client.log[before:], self.recent[seen:])
        else:
            self.client.log.extend(self._kept[key][1])
            self.recent.extend(self._kept[key][2])
        (value, error), _, _ = self._kept[key]
        if error is not None:
            raise error
        result: T = value
        return result

    def known(self, key: str) -> Any:
        """What `once` already computed for `key` (None: not yet, or it raised); never
        computes it."""
        found = self._kept.get(key)
        return None if found is None or found[0][1] is not None else found[0][0]
