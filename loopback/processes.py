"""A server process of its own session: started, found in /proc, and stopped with all it made.

A server may fork workers that outlive it (vLLM's EngineCore), so a stop looks for the
session's members in /proc, not only at the leader; without /proc it falls back to the process
group. SIGTERM first, SIGKILL after a grace: one routine for the suite, the mock's fleet and
the live launcher.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from .timeouts import POLL_S, REAP_S, STOP_GRACE_S

PROC = Path("/proc")


def start_session(
    argv: Sequence[str], log: IO[bytes] | int, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """`argv` as the leader of a new session (so `stop_session` finds everything it starts),
    stdout and stderr into `log` (a file or subprocess.DEVNULL), no stdin, `env` over ours."""
    return subprocess.Popen(
        list(argv),
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # comm may hold spaces and parentheses: split after the last ')'.
    return raw[raw.rindex(")") + 2 :].split()


def session_members(sid: int) -> list[int]:
    """Live (non-zombie) processes whose session id is `sid`; without /proc, the group's leader."""
    if not PROC.is_dir():
        try:
            os.killpg(sid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [sid]
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        # fields[0] is state, fields[3] is session id
        if fields and fields[3] == str(sid) and fields[0] != "Z":
            found.append(int(entry.name))
    return sorted(found)


def listens(sid: int, port: int) -> bool:
    """Whether a process of session `sid` holds the TCP socket listening on `port` (found in
    /proc/net and the members' file descriptors); True where /proc cannot tell."""
    inodes: set[str] = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in (PROC / "net" / table).read_text().splitlines()[1:]:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{inode}]")
    if not inodes:
        return not (PROC / "net" / "tcp").exists()  # a listener /proc does not show
    for pid in session_members(sid):
        with contextlib.suppress(OSError):
            for fd in (PROC / str(pid) / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in inodes:
                        return True
    return False


def signal_session(sid: int, sig: signal.Signals) -> None:
    """`sig` to every member of session `sid` and to its process group; gone ones are skipped."""
    for pid in session_members(sid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(sid, sig)


def stop_session(
    sid: int, grace_s: float = STOP_GRACE_S, leader: subprocess.Popen[bytes] | None = None
) -> list[int]:
    """SIGTERM every member, SIGKILL what is left after `grace_s`; return pids that survived.

    Members are found by session id, so workers that outlive their leader are stopped too; the
    `leader`, if we started it, is reaped on the way (a zombie leader would keep its group).
    """

    def left() -> list[int]:
        if leader is not None:
            leader.poll()
        return session_members(sid)

    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, REAP_S)):
        if not left():
            break
        signal_session(sid, sig)
        ends = time.monotonic() + wait
        while left() and time.monotonic() < ends:
            time.sleep(POLL_S)
    survivors = left()
    if leader is not None:
        try:
            leader.wait(timeout=REAP_S)
        except subprocess.TimeoutExpired:
            survivors = sorted({*survivors, leader.pid})
    return survivors
