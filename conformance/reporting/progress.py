"""Progress of a long run: one status line rewritten in place, on a terminal only.

A run over several profiles against a real server takes minutes, and its report is printed
only at the end of each profile. On a terminal the user sees where it is (profile, check group,
phase); in a CI log, which is no terminal, nothing is written, so logs keep only the reports.
`TITO_PROGRESS=1` forces the line on, `TITO_PROGRESS=0` off.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, TextIO


def wanted(stream: TextIO | None) -> bool:
    """On for an interactive terminal outside CI, unless TITO_PROGRESS says otherwise."""
    forced = os.environ.get("TITO_PROGRESS")
    if forced in ("0", "1"):
        return forced == "1"
    if stream is None or os.environ.get("CI"):
        return False
    try:
        return stream.isatty()
    except ValueError:  # a closed stream
        return False


class Progress:
    """`update(text)` shows `label text`; `clear()` removes the line. Also a pytest plugin
    (the suite's checks run in an inner pytest session): it names the check group running."""

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        # sys.__stderr__: the runner redirects sys.stderr while its inner pytest session runs
        self.stream = stream if stream is not None else sys.__stderr__
        self.on = wanted(self.stream)
        self.label, self.total, self.done = label, 0, 0

    def update(self, text: str) -> None:
        if self.on and self.stream is not None:
            self.stream.write(f"\r\x1b[K{self.label}{text}")
            self.stream.flush()

    def clear(self) -> None:
        if self.on and self.stream is not None:
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    # -- pytest hooks ------------------------------------------------------------------
    def pytest_collection_finish(self, session: Any) -> None:
        self.total = len(session.items)

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, Any, str]) -> None:
        self.done += 1
        group = Path(location[0]).stem.removeprefix("test_")
        self.update(f"{group} ({self.done}/{self.total})")

    def pytest_sessionfinish(self) -> None:
        self.clear()
