"""The master's weight syncs: pause (abort mode) -> new weight label -> resume, every few
seconds, where the server serves them; each step told to the workers and kept as a mark.

The label is set while the server is paused and told to the workers before the resume, so a
request a worker sends after hearing of label k reaches a server that labels it k or later
(WV-007's ground: the message's arrival is after the change, whatever the network's pace).
On a server without /pause (before 0.33) the label changes mid-flight instead (WV-009).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import gevent.event

from conformance.wire import Client

Tell = Callable[[str, Any], None]


def initial_label(client: Client) -> str:
    """The label the server reports before the run changes it (`/weight_info`)."""
    try:
        info = client.get("/weight_info", auth=False).json()
    except Exception:  # no dev endpoints: spans say "default"
        return "default"
    label = info.get("weight_version") if isinstance(info, dict) else None
    return label if isinstance(label, str) else "default"


def serves_pause(client: Client) -> bool:
    """Whether the server answers vLLM 0.33+'s `/is_paused` (it then serves /pause too)."""
    try:
        reply = client.get("/is_paused", auth=False)
        return reply.status == 200 and "is_paused" in reply.json()
    except Exception:
        return False


class Cycles:
    """Runs the cycles until `stop` is set; `marks` are (at_s, what, label) for the report."""

    def __init__(
        self,
        client: Client,
        every_s: float,
        mode: str,
        prefix: str,
        pause: bool,
        tell: Tell,
        started_at: float,
    ) -> None:
        self.client, self.every_s, self.mode, self.prefix = client, every_s, mode, prefix
        self.pause, self.tell, self.started_at = pause, tell, started_at
        self.stop = gevent.event.Event()
        self.marks: list[tuple[float, str, str]] = []
        self.errors: list[str] = []
        self.index = 0

    def _mark(self, what: str, label: str = "") -> None:
        self.marks.append((round(time.time() - self.started_at, 3), what, label))

    def _post(self, path: str, body: Any = None) -> bool:
        try:
            how = {"auth": path != "/update_weight_version"}
            reply = (
                self.client.post(path, **how)
                if body is None
                else self.client.post(path, body, **how)
            )
        except Exception as exc:
            self.errors.append(f"POST {path}: {type(exc).__name__}: {exc}"[:300])
            return False
        if reply.status != 200:
            self.errors.append(f"POST {path}: HTTP {reply.status}: {reply.body[:200]!r}")
            return False
        return True

    def run(self) -> None:
        while not self.stop.wait(self.every_s):
            self.index += 1
            label = f"{self.prefix}{self.index}"
            if self.pause:
                self.tell("tito_pause", True)
                if self._post(f"/pause?mode={self.mode}"):
                    self._mark("pause")
            if self._post("/update_weight_version", {"new_version": label}):
                self.tell("tito_label", self.index)
                self._mark("label", label)
            if self.pause:
                if self._post("/resume"):
                    self._mark("resume")
                self.tell("tito_pause", False)
