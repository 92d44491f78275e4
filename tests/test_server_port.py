"""A server started on a port another process already serves is never taken for healthy: the
other's /health answer is not its own (seen in CI: two mocks handed one free port, and the
suite judged one defect's run against the other's server). It fails as `PortTaken`, and
`start_on_a_free_port` starts it again elsewhere."""

from __future__ import annotations

import pytest

from conformance.server.process import PortTaken, ServerProcess, mock_argv, start_on_a_free_port
from loopback.ports import free_port
from loopback.processes import listens


def mock(port: int, *flags: str) -> ServerProcess:
    return ServerProcess(mock_argv(port, ["--enable-scale-out", *flags]), port)


def test_a_server_on_a_port_another_serves_is_port_taken() -> None:
    with mock(free_port()) as first:
        assert listens(first.pid, first.port)
        with pytest.raises(PortTaken, match="answered by another process"):
            mock(first.port).start()


def test_start_on_a_free_port_moves_on_from_a_taken_one() -> None:
    with mock(free_port()) as first:
        ports = [first.port]

        def server_for(port: int) -> ServerProcess:
            ports.append(port)
            return mock(first.port if len(ports) == 2 else port)  # the first try: taken

        with start_on_a_free_port(server_for) as second:
            assert second.port != first.port
            assert listens(second.pid, second.port) and not listens(second.pid, first.port)
        assert len(ports) == 3  # a try on the taken port, then one on a free one
