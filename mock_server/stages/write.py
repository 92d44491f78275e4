"""The write stage: a non-streamed answer's bytes on the wire."""

from __future__ import annotations

from mock_server.behaviour.config import MockConfig
from mock_server.transforms import apply_wire
from mock_server.wire.asgi import Send, send_bytes


async def write(send: Send, cfg: MockConfig, data: bytes) -> None:
    await send_bytes(send, 200, apply_wire(cfg, data), cfg.policies.write.json_media)
