"""The mock's own counters on the wire, `GET /mock/stats`: its path, and the one reader of it.

`serve/app.py` serves `Engine.stats()` there; a client author's `TitoMock.stats` (through its
transport) and a fleet's `Fleet.stats` (each engine at its own URL) read it here, so what they
report is what the route answers.
"""

from __future__ import annotations

from typing import Any

import httpx

PATH = "/mock/stats"


def read_stats(client: httpx.Client, base_url: str = "") -> dict[str, Any]:
    """What the mock at `base_url` (or `client`'s own base URL) answers at PATH; it needs no key.
    Raises httpx.HTTPError when the mock cannot be reached."""
    data: dict[str, Any] = client.get(base_url + PATH).json()
    return data
