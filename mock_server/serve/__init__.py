"""Serving the mock: the ASGI app, its middleware, uvicorn on loopback."""
