"""A socket the client's own threads closed under a request is no statement of the server's:
the request ends as a harness error (`ClientBroke`), never as a FAIL (`ServerBroke`)."""

from __future__ import annotations

import errno

import httpx
import pytest

from conformance.wire import Client
from conformance.wire.bounded import ClientBroke, ServerBroke, local_fault

URL = "http://tito.test"


def _read_error(code: int) -> httpx.ReadError:
    """What httpx raises for a socket error: the OSError kept as its cause."""
    try:
        try:
            raise OSError(code, "socket error")
        except OSError as cause:
            raise httpx.ReadError(f"[Errno {code}]") from cause
    except httpx.ReadError as exc:
        return exc


@pytest.mark.parametrize(
    ("code", "expected"),
    [(errno.EBADF, ClientBroke), (errno.ENOTSOCK, ClientBroke), (errno.ECONNRESET, ServerBroke)],
)
def test_only_the_clients_own_socket_faults_are_harness_errors(
    code: int, expected: type[Exception], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: httpx.HTTPTransport, request: httpx.Request) -> httpx.Response:
        raise _read_error(code)

    monkeypatch.setattr(httpx.HTTPTransport, "handle_request", broken)
    client = Client(URL, timeout=2.0)
    try:
        with pytest.raises(expected) as raised:
            client.post("/v1/chat/completions/derender", {"x": 1})
        with pytest.raises(expected), client.stream("/inference/v1/generate", {"x": 1}):
            pass
    finally:
        client.close()
    assert isinstance(raised.value, AssertionError) is (expected is ServerBroke)
    assert local_fault(_read_error(code)) is (expected is ClientBroke)


def test_a_request_records_when_its_body_left_the_client() -> None:
    """The in-flight bound counts from the moment the body was written (httpcore's trace), not
    from when a busy client's worker meant to send it."""
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Echo(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = Client(f"http://127.0.0.1:{server.server_address[1]}", timeout=5.0)
    try:
        before = time.monotonic()
        reply = client.post("/inference/v1/generate", {"x": 1})
        after = time.monotonic()
    finally:
        client.close()
        server.shutdown()
    assert reply.status == 200
    sent = reply.exchange.body_sent_at
    assert sent is not None and before <= sent <= after
