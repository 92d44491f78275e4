"""Which data-parallel rank a server takes: the one definition of the rank probe.

vLLM pins a request to a data-parallel rank by the `X-data-parallel-rank` header and rejects
(400) a rank at or past its data_parallel_size. The feature probe reads the size of the server
under test this way (`features.probe`), the router check the rank an engine itself rejects
(`checks/test_router.py`); both send ranks in order and read the answers by `rejected`.
"""

from __future__ import annotations

from collections.abc import Iterable

from conformance.wire import Reply

HEADER = "X-data-parallel-rank"
MAX_DP_PROBE = 8
"""The highest rank asked: a server that takes every rank up to it shows no size."""


def pinned(rank: int) -> dict[str, str]:
    """The headers that pin a request to `rank`."""
    return {HEADER: str(rank)}


def rejected(replies: Iterable[Reply | None], first: int = 0) -> int | None:
    """The first rank rejected with a 400, from the answers to ranks `first`, `first` + 1, ...
    in order (None: every rank was taken, or an answer other than 200 or 400 came first).
    Asked from rank 0 it is the server's data_parallel_size; `replies` may be lazy, and is read
    no further than that rank."""
    for rank, reply in enumerate(replies, start=first):
        if reply is None or reply.status != 200:
            return rank if reply is not None and reply.status == 400 else None
    return None
