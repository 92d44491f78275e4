"""Running servers on this machine, for the suite, the mock and the live backend alike.

The one owner of what both `conformance` and `mock_server` need and neither may import from
the other: every wait (`timeouts`), and the process, port, readiness and keep-alive rules of a
server on loopback. It imports nothing of the kit's.
"""
