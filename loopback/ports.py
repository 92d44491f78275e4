"""Loopback ports: one the system says is free now, and whether a given one is free."""

from __future__ import annotations

import socket

HOST = "127.0.0.1"


def free_port(host: str = HOST) -> int:
    """A port nothing listens on now. It is only free until someone binds it: two servers
    started at once may be handed the same one, so a starter retries on another."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def is_free(port: int, host: str = HOST) -> bool:
    """Whether `port` can be bound now (SO_REUSEADDR: a closed server's TIME_WAIT does not
    count), e.g. before a server restarts on the port it had."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True
