"""How an exchange can go wrong, by whose doing: the server's (`ServerBroke`, a failure of the
check that sent it), the client's own socket (`ClientBroke`), a request no client can send
(`Unsendable`), or the run's own clock (`OutOfTime`). The verdict room reads these types; the
wire only raises them."""

from __future__ import annotations

import errno


class Unsendable(ValueError):
    """The request itself cannot go on the wire (an HTTP/1.1 client refuses it: a header value
    with a control character, say): nothing was sent, so there is no answer to judge."""


class ClientBroke(RuntimeError):
    """The client's own socket failed under it (closed: EBADF, ENOTSOCK): no statement of the
    server's, so never a FAIL; the harness broke, and the report says so."""


class OutOfTime(RuntimeError):
    """The run's own deadline passed before this request went out: the harness ran out of
    time, which is no statement of the server's (a slow correct server can cause it), so
    never a FAIL. Raised only once the deadline has passed; an exchange still in flight then
    ends at it (`wire.deadline`)."""


LOCAL_ERRNOS = frozenset({errno.EBADF, errno.ENOTSOCK})


def local_fault(exc: BaseException) -> bool:
    """Whether a transport error is the client's own (its socket closed under it)."""
    seen: BaseException | None = exc
    for _ in range(8):  # httpx -> httpcore -> OSError
        if seen is None:
            return False
        if isinstance(seen, OSError) and seen.errno in LOCAL_ERRNOS:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class ServerBroke(AssertionError):
    """The server did not speak HTTP/JSON/SSE acceptably: timeout, garbage, too big, cut off.
    `timed_out`: it said nothing in time (rather than saying something broken)."""

    def __init__(self, message: str, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class PastDeadline(ServerBroke):
    """An answer (a stream, or a plain body after its head) still coming when its wall clock
    ran out: the client stopped reading. Only a verdict where the clock is the requirement's;
    in flight, a slow reader can cause it."""

    def __init__(self, message: str) -> None:
        super().__init__(message, True)
