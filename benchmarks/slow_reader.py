"""A client that reads slowly, for the kit's adversarial settings: a loopback relay between the
suite and the server that drains the server at once and hands its bytes on one small read at a
time, sleeping between reads. The server runs at its own pace; only the client is slow (a
fast server read by a loaded client: the case a timing rule must never call "ignored")."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class SlowReader:
    """A loopback relay that hands the server's bytes on to the client one read at a time,
    sleeping between reads: a client that reads slowly, while the server runs at its own pace
    (the relay drains the server at once)."""

    def __init__(self, upstream_port: int, delay_s: float) -> None:
        self.upstream_port, self.delay_s = upstream_port, delay_s
        self.port = 0
        self._server: asyncio.Server | None = None
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> SlowReader:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        done = asyncio.run_coroutine_threadsafe(self._close_all(), self._loop)
        done.result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    async def _close_all(self) -> None:
        """Stop accepting, then cancel every relayed connection and wait for them, until none
        is left (a task left pending when the loop closes is destroyed mid-await: the noise
        'Task was destroyed but it is pending' at every benchmark's end)."""
        if self._server is not None:
            self._server.close()
        current = asyncio.current_task()
        while tasks := [t for t in asyncio.all_tasks() if t is not current]:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", 0))
        self._server = server
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            writer.close()
            return
        queue: asyncio.Queue[bytes] = asyncio.Queue()

        async def pump_up() -> None:
            while data := await reader.read(65536):
                up_w.write(data)
                await up_w.drain()
            up_w.close()

        async def drain_down() -> None:  # the server is read at once: it never waits on us
            while data := await up_r.read(512):
                queue.put_nowait(data)
            queue.put_nowait(b"")

        async def slow_down() -> None:
            while data := await queue.get():
                writer.write(data)
                await writer.drain()
                await asyncio.sleep(self.delay_s)
            writer.close()

        tasks = [asyncio.ensure_future(t()) for t in (pump_up, drain_down, slow_down)]
        try:
            await tasks[2]
        except (OSError, asyncio.CancelledError):  # closed, or the relay is shutting down
            pass
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            up_w.close()


@contextmanager
def slow_reader(base_url: str, delay_s: float) -> Iterator[str]:
    """The URL of a relay to `base_url` that reads slowly (`delay_s` after each read)."""
    port = int(base_url.rsplit(":", 1)[1])
    with SlowReader(port, delay_s) as relay:
        yield f"http://127.0.0.1:{relay.port}"
