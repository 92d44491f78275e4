"""Serving the mock: the ASGI app, its middleware and its hot route."""
