"""Render and derender endpoints (filled in below)."""

from __future__ import annotations

from starlette.routing import Route

from mock_server.state import AppState


def render_routes(state: AppState) -> list[Route]:
    return []
