"""A server's whole session of processes, found through /proc: stop all of it, renice its engine.

vLLM forks an EngineCore and a Worker; when the API process dies (the tokens-only OOV crash) they
may outlive it. So members are found by session id, not by the leader, and a stop is not done
until no process of the session is left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path

PROC = Path("/proc")
ENGINE_NAMES = ("VLLM::EngineCore", "VLLM::Worker")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # comm may hold spaces and parentheses: split after the last ')'.
    return raw[raw.rindex(")") + 2 :].split()


def members(sid: int) -> list[int]:
    """Live (non-zombie) processes whose session id is `sid`."""
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        # fields[0] is state, fields[3] is session id
        if fields and fields[3] == str(sid) and fields[0] != "Z":
            found.append(int(entry.name))
    return sorted(found)


def process_name(pid: int) -> str:
    """The title a process shows (vLLM sets `VLLM::EngineCore` with setproctitle)."""
    try:
        cmdline = (PROC / str(pid) / "cmdline").read_bytes().split(b"\0")[0].decode()
        comm = (PROC / str(pid) / "comm").read_text().strip()
    except OSError:
        return ""
    return cmdline or comm


def _signal_all(sid: int, sig: signal.Signals) -> None:
    for pid in members(sid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(sid, sig)


def stop_session(sid: int, grace_s: float = 8.0) -> list[int]:
    """SIGTERM every member, SIGKILL what is left after `grace_s`; return pids that survived."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        if not members(sid):
            return []
        _signal_all(sid, sig)
        ends = time.monotonic() + wait
        while members(sid) and time.monotonic() < ends:
            time.sleep(0.1)
    return members(sid)


def renice(sid: int, names: Iterable[str] = ENGINE_NAMES, niceness: int = 19) -> int:
    """Renice every thread of the session's processes whose name starts with one of `names`.

    vllm-cpu.md, the 2-core starvation trap: the busy-spinning engine otherwise leaves the HTTP
    process too little CPU to see an abort in time. Returns the number of threads reniced.
    """
    prefixes = tuple(names)
    count = 0
    for pid in members(sid):
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
