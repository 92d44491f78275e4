"""Hostile servers for the kit's fault tests: `/health` answers 200, every other answer
misbehaves in one named way (issue 38's cases). Plain `http.server` on a socket of its own, so
the suite meets them as it meets any server; `python -m tests.hostile_servers MODE [PORT]`
serves one in the foreground (the figures in the fault tests were taken against these)."""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from openapi import load_spec


def _example(schema: str) -> Any:
    return load_spec()["components"]["schemas"][schema]["examples"][0]


VALID = _example("GenerateTokensResponse")
"""What a hostile server answers where it answers well: the spec's own example, so the one
defect of each mode is the only one the suite can find in what it reads."""
CHUNK = json.dumps(_example("GenerateTokensStreamChunk"))
"""A valid chunk, not the last (no finish_reason): sent again and again, it never ends."""
DEPTH = 100_000
"""How deep `deep-json` nests its answer (a few hundred levels break a recursive decoder)."""
SSE_LINE = 100 * 1024 * 1024
"""One `data:` line of `sse-line`, in bytes."""
BOMB = 6 * 1024**3
"""What `gzip-bomb`'s answer inflates to (JSON whitespace: ~6 MB on the wire)."""
BLOCK = 1024 * 1024
PACE_S = 0.01
"""`endless-paced`'s gap between events: 100 a second, never near a cap on events."""

MODES = (
    "hang",  # accepts every request and never answers
    "endless-stream",  # plain answers valid; a stream sends valid chunks forever, no [DONE]
    "endless-paced",  # the same, an event every PACE_S: each stream lasts until it is cut
    "gzip-bomb",  # every answer gzip-encoded, inflating to BOMB bytes
    "sse-line",  # plain answers valid; a stream sends one SSE_LINE-byte data line
    "deep-json",  # every answer (and every stream event) JSON nested DEPTH deep
    "random-bytes",  # random bytes on the socket instead of HTTP
    "error-500",  # 500 to everything
    "cut-short",  # a Content-Length it never sends in full
    "reset",  # the connection reset (RST) once the request is read
)


@cache
def bomb(size: int = BOMB) -> bytes:
    """A gzip member that inflates to `size` bytes of spaces. Deflate after a full flush starts
    afresh at a byte boundary, so one flushed block of a MiB repeats byte for byte: the member
    is made without deflating `size` bytes (only its CRC passes over them)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    block = b" " * BLOCK
    compressor.compress(block)
    compressor.flush(zlib.Z_FULL_FLUSH)  # the history is dropped: what follows repeats
    repeated = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    blocks, rest = divmod(size, BLOCK)
    crc = 0
    for _ in range(blocks):  # the one pass over the inflated size: ~2 s for 6 GiB
        crc = zlib.crc32(block, crc)
    tail = compressor.compress(b" " * rest) + compressor.flush()
    crc = zlib.crc32(b" " * rest, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    trailer = struct.pack("<II", crc & 0xFFFFFFFF, size & 0xFFFFFFFF)
    return header + repeated * blocks + tail + trailer


def _deep() -> bytes:
    return b"[" * DEPTH + b"]" * DEPTH


def _handler(mode: str, stop: threading.Event) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/health":
                return self._send(200, b"")
            return self._misbehave(b"")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            return self._misbehave(self.rfile.read(length))

        def _misbehave(self, raw: bytes) -> None:
            streaming = b'"stream":true' in raw
            try:
                getattr(self, "_" + mode.replace("-", "_"))(streaming)
            except OSError:  # the client stopped reading: what a bounded client does
                self.close_connection = True

        def _hang(self, streaming: bool) -> None:
            stop.wait()
            self.close_connection = True

        def _valid(self) -> None:
            self._send(200, json.dumps(VALID).encode())

        def _open_stream(self, extra: tuple[tuple[str, str], ...] = ()) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            for name, value in extra:
                self.send_header(name, value)
            self.end_headers()
            self.close_connection = True

        def _endless_stream(self, streaming: bool) -> None:
            if not streaming:
                return self._valid()
            self._open_stream()
            event = f"data: {CHUNK}\n\n".encode()
            while not stop.is_set():
                self.wfile.write(event * 16)

        def _endless_paced(self, streaming: bool) -> None:
            if not streaming:
                return self._valid()
            self._open_stream()
            event = f"data: {CHUNK}\n\n".encode()
            while not stop.wait(PACE_S):
                self.wfile.write(event)
                self.wfile.flush()

        def _gzip_bomb(self, streaming: bool) -> None:
            body = bomb()
            self.send_response(200)
            self.send_header(
                "Content-Type", "text/event-stream" if streaming else "application/json"
            )
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            view = memoryview(body)
            for at in range(0, len(body), 65536):
                if stop.is_set():
                    break
                self.wfile.write(view[at : at + 65536])

        def _sse_line(self, streaming: bool) -> None:
            if not streaming:
                return self._valid()
            self._open_stream()
            self.wfile.write(b'data: {"request_id": "')
            piece = b"a" * 65536
            for _ in range(SSE_LINE // len(piece)):
                if stop.is_set():
                    return
                self.wfile.write(piece)
            self.wfile.write(b'"}\n\ndata: [DONE]\n\n')

        def _deep_json(self, streaming: bool) -> None:
            if not streaming:
                return self._send(200, _deep())
            self._open_stream()
            self.wfile.write(b"data: " + _deep() + b"\n\ndata: [DONE]\n\n")

        def _random_bytes(self, streaming: bool) -> None:
            self.wfile.write(os.urandom(4096))
            self.close_connection = True

        def _error_500(self, streaming: bool) -> None:
            self._send(500, b'{"error": {"message": "boom", "type": "Internal", "code": 500}}')

        def _cut_short(self, streaming: bool) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "10000")
            self.end_headers()
            self.wfile.write(json.dumps(VALID).encode()[:40])
            self.wfile.flush()
            self.close_connection = True

        def _reset(self, streaming: bool) -> None:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True

    return Handler


@contextmanager
def serving(mode: str, port: int = 0) -> Iterator[str]:
    """A hostile server in `mode` on a thread of this process; yields its base URL."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r} (known: {', '.join(MODES)})")
    stop = threading.Event()
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(mode, stop))
    server.daemon_threads = True
    server.request_queue_size = 128
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


def main(argv: list[str]) -> int:
    mode, port = argv[0], int(argv[1]) if len(argv) > 1 else 0
    if mode == "gzip-bomb":
        bomb()
    with serving(mode, port) as url:
        print(url, flush=True)
        threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
