"""Running servers on this machine, for the suite, the mock and the live backend alike.

The one owner of what both `conformance` and `mock_server` need and neither may import from
the other: every wait (`timeouts`), a free port (`ports`), a server's session started and
stopped with all it made (`processes`), readiness on `/health` (`readiness`), a uvicorn
server inside this process (`in_process`), keep-alive and the hop-by-hop headers
(`connections`), and where vllm-router is and how it starts (`vllm_router`). It imports
nothing of the kit's.
"""
