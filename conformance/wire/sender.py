"""What the sync and async clients share: one configuration (`Timeouts`), the request as
recorded (the API key included, spelled in one place), the stop after consecutive timeouts,
the clocks every exchange ends by (its own, a probe's budget, the run's deadline) and an
in-process app's event loop."""

from __future__ import annotations

import contextlib
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any, TypedDict

import httpx

from conformance.wire.bounded import EVENT_BYTES, MAX_BODY, MAX_EVENTS, is_event_stream
from conformance.wire.deadline import Bound
from conformance.wire.exchange import Exchange, conceal, dumps, stated_error
from conformance.wire.faults import (
    ClientBroke,
    OutOfTime,
    PastDeadline,
    ServerBroke,
    Unsendable,
    local_fault,
)
from conformance.wire.inflate import ACCEPT_ENCODING
from loopback.connections import KEEPALIVE_S
from loopback.timeouts import Timeouts

UNRESPONSIVE_AFTER = 3  # consecutive timeouts before the client stops sending
IN_PROCESS_URL = "http://testserver"
"""The base URL of an in-process app (what schemathesis's ASGI client and reproducers use)."""
MISSING: Any = object()
"""No JSON body given (None is a JSON body: null)."""
MAX_ANSWER = 64 * 1024 * 1024
"""The most any one answer may take, however much its request asks for (`Sender._max_bytes`):
the bound learned from the server (its per-token size) cannot grow past it. The largest answer
a check asks for is a held stream of 10,000 token events with 20 logprobs each (half of
MAX_EVENTS, `inflight.plans`): ~2.5 KiB an event, ~25 MiB, well inside."""


@cache
def tls() -> ssl.SSLContext:
    """httpx's own default TLS context, made once per process: making one reads the CA bundle
    (about 0.1 s), and a run opens a client per session, worker, engine and fuzz run."""
    return httpx.create_ssl_context()


def auth_header(api_key: str | None) -> dict[str, str]:
    """The API key as vLLM's middleware reads it: the one place the kit spells the header,
    and so where it learns the key it keeps out of every output (`wire.exchange`)."""
    conceal(api_key)
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def wire(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    """Headers as bytes: a generated value outside ASCII goes out as Latin-1 (as requests and
    curl send it), where httpx would refuse it; the spaces around a value go (a server strips
    them anyway, RFC 9110 5.5; h11 refuses to send them)."""
    return [(_latin1(name), _latin1(value.strip(" \t"))) for name, value in headers.items()]


def _latin1(text: str) -> bytes:
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")


class Raw(TypedDict, total=False):
    """How a request goes out beside its JSON body, for both clients: raw `content` and
    `headers` as given, and `auth` (default True) adds the API key."""

    content: bytes | None
    headers: dict[str, str] | None
    auth: bool


class Timed(Raw, total=False):
    """A whole request: `timeout` bounds it (default: the client's)."""

    timeout: float | None


class Opened(Raw, total=False):
    """A stream: `deadline` bounds it (default: the client's stream budget)."""

    deadline: float | None


class Sender:
    """What the sync and async clients share: one configuration, the request as recorded (key
    included), the stop after consecutive timeouts, and an in-process app's event loop."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout: float | Timeouts | None = None,
        stream_deadline: float | None = None,
        *,
        app: Any = None,
        stop_after: int | None = UNRESPONSIVE_AFTER,
        keep_log: bool = True,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeouts = Timeouts.of(timeout, stream_deadline)
        self.timeout = self.timeouts.request
        self.stream_deadline = self.timeouts.stream
        self.log: list[Exchange] = []
        """The exchanges of the current check (kept only with `keep_log`)."""
        self.keep_log = keep_log
        self.stop_after = stop_after
        """Consecutive timeouts after which nothing more is sent (None: never stop)."""
        self.ends: float | None = None
        """The run's deadline (`time.monotonic()`): nothing is sent once it has passed
        (`OutOfTime`), and an exchange still in flight then is cut at it (`wire.deadline`)."""
        self._budget: tuple[float, str] | None = None
        self.bound_for: Callable[[Any], int] | None = None
        """The most bytes a correct answer to a body may take (learned: `Limits.body_bound`);
        None: MAX_BODY for every answer."""
        self.on_misstated: Callable[[Exchange, int], None] | None = None
        """Told of each whole answer whose body states another error code than its status
        (`stated_error`), with that code: ERR-002 judges every one the run received."""
        self._timeouts = 0
        self._lock = threading.Lock()
        self._stack = contextlib.ExitStack()
        self._portal: Any = None
        if app is not None:  # the app runs on its own loop, whatever loop or thread calls it
            from anyio.from_thread import start_blocking_portal

            self._portal = self._stack.enter_context(start_blocking_portal())
        self._http = self._open(app)

    def _open(self, app: Any) -> Any:
        """The httpx client underneath (sync or async), in-process through `app` if given."""
        raise NotImplementedError

    def _limits(self) -> httpx.Limits:
        """Idle connections are dropped well before a server would close them: uvicorn (vLLM's
        server and the mock's) closes one idle for 5 s, httpx's default expiry, and a request
        sent on it at that moment is reset (seen: "Connection reset by peer" on a generate)."""
        return httpx.Limits(max_connections=32, keepalive_expiry=KEEPALIVE_S)

    def _options(self) -> dict[str, Any]:
        """What both httpx clients are opened with, besides their transport: only the content
        codings the client inflates within a bound are asked for (`inflate`)."""
        return {
            "timeout": self.timeouts.for_httpx(),
            "limits": self._limits(),
            "verify": tls(),
            "headers": {"Accept-Encoding": ACCEPT_ENCODING},
        }

    @contextlib.contextmanager
    def budget(self, seconds: float, what: str) -> Iterator[None]:
        """Within the block, every wait is cut to what is left of `seconds` from now, and once
        they are spent nothing is sent (`what` names the budget in the refusal): a probe of
        many requests, each bounded, is then bounded as a whole too."""
        self._budget = (time.monotonic() + seconds, what)
        try:
            yield
        finally:
            self._budget = None

    def _within_budget(self, limit: float) -> float:
        """`limit`, cut to what is left of the budget."""
        if self._budget is None:
            return limit
        return max(0.001, min(limit, self._budget[0] - time.monotonic()))

    def _bound(self, started: float, limit: float) -> Bound:
        """The clock of an exchange started at `started` that may take `limit` s."""
        return Bound(started + limit, self.ends)

    def _prepare(self, method: str, path: str, body: Any, stream: bool, how: Raw) -> Exchange:
        now = time.monotonic()
        if self.ends is not None and now >= self.ends:
            raise OutOfTime(f"the run's deadline passed; {method} {path} was not sent")
        if self._budget is not None and now >= self._budget[0]:
            raise ServerBroke(f"{self._budget[1]} was spent; {method} {path} was not sent", True)
        if self.stop_after is not None and self._timeouts >= self.stop_after:
            raise ServerBroke(
                f"the server stopped answering ({self._timeouts} consecutive timeouts of "
                f"{self.timeout:g} s); {method} {path} was not sent",
                True,
            )
        sent: dict[str, str] = {}
        content = how.get("content")
        if body is not MISSING:
            content = dumps(body)
            sent["Content-Type"] = "application/json"
        if how.get("auth", True):
            sent.update(auth_header(self.api_key))
        sent.update(how.get("headers") or {})
        url = path if "://" in path else self.base_url + path
        exchange = Exchange(method, url, sent, content, stream=stream)
        if self.keep_log:
            with self._lock:
                self.log.append(exchange)
        return exchange

    def _max_bytes(self, exchange: Exchange, body: Any) -> int:
        """The most a correct answer to `body` may take. An SSE answer (told, as the deadline
        is, by its own head) frames every token as an event of its own (id, model, created and
        the choice around one token id: a few hundred bytes, where a body spends a few): it
        may take `EVENT_BYTES` more per event it may send, up to `MAX_EVENTS`."""
        bound = MAX_BODY
        if self.bound_for is not None and body is not MISSING:
            bound = max(MAX_BODY, self.bound_for(body))
        if is_event_stream(exchange.response_headers):
            bound += EVENT_BYTES * MAX_EVENTS
        return min(bound, MAX_ANSWER)

    def _answered(self, exchange: Exchange) -> None:
        """A whole answer was read: one that misstates its status is passed on."""
        if self.on_misstated is not None:
            code = stated_error(exchange.status, exchange.response_body)
            if code is not None:
                self.on_misstated(exchange, code)

    def _note(self, timed_out: bool) -> None:
        with self._lock:
            self._timeouts = self._timeouts + 1 if timed_out else 0

    def forgive_timeouts(self) -> None:
        """Send again after consecutive timeouts: the server behind them was replaced (a
        restarted server deserves a fresh count, `stop_after`)."""
        self._note(False)

    def _body_deadline(self, exchange: Exchange, limit: float) -> float:
        """A plain body must end within twice the request timeout; an SSE one read whole,
        within the stream budget (and within what is left of a budget)."""
        budget = 2 * limit
        if is_event_stream(exchange.response_headers):
            budget = max(budget, self.timeouts.stream)
        return time.monotonic() + self._within_budget(budget)

    def _failed(
        self,
        exchange: Exchange,
        what: str,
        exc: Exception,
        limit: float,
        bound: Bound,
        body_s: float = 0.0,
    ) -> Exception:
        """The ServerBroke of a transport error (recorded on the exchange); `Unsendable` when
        the request never left the client, `OutOfTime` when the run's deadline cut it."""
        if isinstance(exc, httpx.LocalProtocolError):
            exchange.error = f"not sent: {exc}"
            return Unsendable(f"{what}: the client cannot send this request: {exc}")
        if isinstance(exc, httpx.TimeoutException) and bound.by_run:
            exchange.error = "cut at the run's deadline"
            return OutOfTime(f"{what}: the run's deadline passed while it was in flight")
        cut = isinstance(exc, httpx.TimeoutException) and bound.expired
        if (cut or isinstance(exc, PastDeadline)) and exchange.status:
            # one message whichever noticed first: the socket's clock or the body's reader
            exchange.error = f"the body was still coming {body_s:g} s after its head"
            return PastDeadline(
                f"{what}: HTTP {exchange.status} came, but its body did not end within "
                f"{body_s:g} s; stopped reading"
            )
        if isinstance(exc, httpx.TimeoutException):
            self._note(True)
            exchange.error = f"no complete answer within {limit:g} s"
            return ServerBroke(f"{what}: no complete answer within {limit:g} s", True)
        if isinstance(exc, ServerBroke):
            exchange.error = str(exc)
            return exc
        if local_fault(exc):
            exchange.error = f"the client's socket failed: {exc}"
            return ClientBroke(f"{what}: the client's own socket failed (not the server): {exc}")
        self._note(False)
        exchange.error = f"{type(exc).__name__}: {exc}"
        return ServerBroke(f"{what}: {type(exc).__name__}: {exc}")

    def _stream_failed(
        self, exchange: Exchange, what: str, exc: httpx.HTTPError, bound: Bound
    ) -> Exception:
        """The ServerBroke of a stream that could not be opened (recorded)."""
        if local_fault(exc):
            exchange.error = f"the client's socket failed: {exc}"
            return ClientBroke(f"{what}: the client's own socket failed (not the server): {exc}")
        if isinstance(exc, httpx.TimeoutException) and bound.by_run:
            exchange.error = "cut at the run's deadline"
            return OutOfTime(f"{what}: the run's deadline passed before its head came")
        if isinstance(exc, httpx.TimeoutException):
            self._note(True)
            exchange.error = f"no answer within {self.timeout:g} s"
            return ServerBroke(f"{what}: no answer within {self.timeout:g} s", True)
        exchange.error = f"{type(exc).__name__}: {exc}"
        return ServerBroke(f"{what}: {type(exc).__name__}: {exc}")


def received(exchange: Exchange, response: httpx.Response, started: float) -> None:
    exchange.status = response.status_code
    exchange.response_headers = {k.lower(): v for k, v in response.headers.items()}
    exchange.elapsed_s = round(time.monotonic() - started, 6)
