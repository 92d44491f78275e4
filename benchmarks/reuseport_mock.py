"""One `tito-mock` on a port it shares with others (SO_REUSEPORT): several of them are one
endpoint the kernel spreads connections over, so a benchmark's server is not its ceiling.

    python benchmarks/reuseport_mock.py PORT [tito-mock flags]

The app and its uvicorn settings are `tito-mock`'s (`mock_server.cli.main`); only the socket
is bound here. Each process keeps its own engine: a workload that aborts, pauses or repeats a
seeded request across connections would meet another process's state, so the benchmarks
that use it send none of those.
"""

from __future__ import annotations

import socket
import sys

import uvicorn

from mock_server.behaviour.config import parse_args
from mock_server.serve.app import create_app


def main(argv: list[str]) -> int:
    port, flags = int(argv[0]), argv[1:]
    config = parse_args(["--port", str(port), *flags])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    # accepted sockets inherit it; without it an answer's last segment waits for the client's
    # delayed ACK (45 ms a request, seen: 700 req/s where tito-mock's own socket serves 5,000)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((config.host, port))
    server = uvicorn.Server(
        uvicorn.Config(create_app(config), log_level="warning", access_log=False, lifespan="off")
    )
    server.run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
