"""vLLM's engine processes, found through /proc by the server's session: their titles, renice.

Finding a session's members and stopping all of them is generic and lives in
`loopback.processes`; what is vLLM's is the engine's process titles.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from loopback.processes import PROC, session_members

__all__ = ["ENGINE_NAMES", "process_name", "renice"]

ENGINE_NAMES = ("VLLM::EngineCore", "VLLM::Worker")


def process_name(pid: int) -> str:
    """The title a process shows (vLLM sets `VLLM::EngineCore` with setproctitle)."""
    try:
        cmdline = (PROC / str(pid) / "cmdline").read_bytes().split(b"\0")[0].decode()
        comm = (PROC / str(pid) / "comm").read_text().strip()
    except OSError:
        return ""
    return cmdline or comm


def renice(sid: int, names: Iterable[str] = ENGINE_NAMES, niceness: int = 19) -> int:
    """Renice every thread of the session's processes whose name starts with one of `names`.

    vllm-cpu.md, the 2-core starvation trap: the busy-spinning engine otherwise leaves the HTTP
    process too little CPU to see an abort in time. Returns the number of threads reniced.
    """
    prefixes = tuple(names)
    count = 0
    for pid in session_members(sid):
        if not process_name(pid).startswith(prefixes):
            continue
        try:
            tids = [int(t.name) for t in (PROC / str(pid) / "task").iterdir()]
        except OSError:
            continue
        for tid in tids:
            try:
                os.setpriority(os.PRIO_PROCESS, tid, niceness)
                count += 1
            except (ProcessLookupError, PermissionError):
                pass
    return count
