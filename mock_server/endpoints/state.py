"""What every endpoint shares: the config, the engine, the pause and the fatal-exit hook."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mock_server.behaviour.config import MockConfig
from mock_server.endpoints.pause import Paused
from mock_server.engine.core import Engine


@dataclass
class AppState:
    config: MockConfig
    engine: Engine
    on_fatal: list[Callable[[], None]] = field(default_factory=list)
    unrouted: list[str] = field(default_factory=list)  # the release's missing routes (404)
    paused: Paused = field(default_factory=Paused)  # dev mode's /pause (0.33+)

    def die(self) -> None:
        """Mirror real vLLM's crash (the oov-token-500 defect): stop serving."""
        self.engine.dead = True
        for hook in self.on_fatal:
            hook()
