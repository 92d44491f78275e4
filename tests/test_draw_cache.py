"""Drawn cases read back from the draw cache are the cases drawn: the same requests go out,
bound to the operation of the process that reads them; a broken file is drawn again."""

from __future__ import annotations

from pathlib import Path

import pytest
from schemathesis import GenerationMode
from schemathesis.core import NotSet

from conformance.fuzz import draw_cache, generation


def _wire(drawn: generation.Drawn) -> list[tuple]:
    """What each case sends (no body: the marker, whichever copy of it the case holds)."""
    return [
        (c.method, c.path, c.headers, c.query, _body(c.body), c.media_type) for c in drawn.cases
    ]


def _body(body: object) -> object:
    return "(no body)" if isinstance(body, NotSet) else body


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_a_cached_draw_is_the_draw(
    mode: GenerationMode, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(draw_cache.ENV, str(tmp_path))
    fresh = generation.drawn.__wrapped__("abortRequests", mode, False, 7, 12)
    assert fresh.cases and len(list(tmp_path.iterdir())) == 1
    again = generation.drawn.__wrapped__("abortRequests", mode, False, 7, 12)
    assert _wire(again) == _wire(fresh)
    assert all(c.operation is fresh.cases[0].operation for c in again.cases)


def test_a_broken_file_is_drawn_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(draw_cache.ENV, str(tmp_path))
    fresh = generation.drawn.__wrapped__("abortRequests", GenerationMode.POSITIVE, False, 7, 5)
    (stored,) = tmp_path.iterdir()
    stored.write_bytes(b"not a pickle")
    again = generation.drawn.__wrapped__("abortRequests", GenerationMode.POSITIVE, False, 7, 5)
    assert _wire(again) == _wire(fresh)


def test_without_the_variable_nothing_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(draw_cache.ENV, raising=False)
    assert draw_cache.load("anything", None) is None
    draw_cache.store("anything", (), "")  # no folder: a no-op, no error
