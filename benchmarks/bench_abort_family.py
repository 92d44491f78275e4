"""Benchmark: the in-flight verdicts (the abort family) in the settings that fool a timing rule.

"A correct server never fails, however fast it is or however busy the client": each setting
starts a correct `tito-mock` (no latency with a tiny context, a slow first token with one or
two slots, a client whose cores are all busy, a client that reads slowly) and runs the abort
family again and again, as a user runs it (`tito-conformance run --requirement ...`), with the
fuzzer's stateful abort beside it. Every run must give 0 fail and 0 error. The same setting
with each in-flight defect (`--defect`) must fail the defect's requirements in every run where
a correct server's action lands. `tests/test_conformance_settings.py` holds a few of these.

Run: python benchmarks/bench_abort_family.py [--only NAME ...] [--runs N] [--defects]
[--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_settings import DEV_MODE, SCALE_OUT, SCALE_OUT_CLAIMS, busy_cores, server_env

from conformance.server_process import ServerProcess, mock_argv, start_on_a_free_port

FAMILY = (
    "ABORT-002",
    "ABORT-003",
    "ABORT-004",
    "ABORT-009",
    "ABORT-010",
    "STOP-005",
    "WV-003",
    "WV-004",
    "WV-009",
)
"""Every requirement whose verdict rests on an action landing in flight (ABORT-001 and the
abort route's own answers come along as what they build on)."""
DEFECTS = {
    "abort-ignored": {"ABORT-002", "ABORT-003"},
    "disconnect-no-abort": {"ABORT-009"},
    "disconnect-whole-no-abort": {"ABORT-010"},
}
FUZZ_EXAMPLES = 5
RUN_DEADLINE_S = 600.0


@dataclass(frozen=True)
class Setting:
    name: str
    flags: tuple[str, ...]
    busy: bool = False
    read_delay_s: float = 0.0  # the client's reader sleeps this long per chunk it reads
    env: dict[str, str] = field(default_factory=lambda: dict(DEV_MODE))


def _zero(name: str, *flags: str, **kw: Any) -> Setting:
    return Setting(name, (*SCALE_OUT, *flags), **kw)


SETTINGS = (
    _zero("fast-busy", busy=True),
    _zero("fast-slow-reader", read_delay_s=0.002),
    _zero("ctx-32", "--max-model-len", "32"),
    _zero("ctx-48", "--max-model-len", "48"),
    _zero("ctx-64", "--max-model-len", "64"),
    _zero("ctx-96-vocab-5000", "--max-model-len", "96", "--mock-vocab-size", "5000"),
    _zero("ctx-48-busy", "--max-model-len", "48", busy=True),
    _zero("ttft-800-seqs-1", "--mock-ttft-ms", "800", "--max-num-seqs", "1"),
    _zero("ttft-800-seqs-2", "--mock-ttft-ms", "800", "--max-num-seqs", "2"),
    _zero("ttft-3000-seqs-1", "--mock-ttft-ms", "3000", "--max-num-seqs", "1"),
    _zero("ttft-3000-seqs-2", "--mock-ttft-ms", "3000", "--max-num-seqs", "2"),
)
BY_NAME = {s.name: s for s in SETTINGS}


class SlowReader:
    """A loopback relay that hands the server's bytes on to the client one read at a time,
    sleeping between reads: a client that reads slowly, while the server runs at its own pace
    (the relay drains the server at once)."""

    def __init__(self, upstream_port: int, delay_s: float) -> None:
        self.upstream_port, self.delay_s = upstream_port, delay_s
        self.port = 0
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> SlowReader:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", 0))
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
        except OSError:
            pass
        finally:
            for task in tasks:
                task.cancel()
            up_w.close()


@contextmanager
def client_side(setting: Setting, base_url: str) -> Iterator[str]:
    """The URL the suite talks to, and the client's conditions (busy cores, a slow reader)."""
    port = int(base_url.rsplit(":", 1)[1])
    if setting.read_delay_s:
        with SlowReader(port, setting.read_delay_s) as relay:
            yield f"http://127.0.0.1:{relay.port}"
        return
    if setting.busy:
        with busy_cores(RUN_DEADLINE_S):
            yield base_url
        return
    yield base_url


def suite_run(url: str, report: Path) -> tuple[int, dict[str, Any]]:
    argv = [sys.executable, "-m", "conformance.cli", "run", "--base-url", url]
    argv += ["--json-report", str(report), "--expect", ",".join(sorted(SCALE_OUT_CLAIMS))]
    for rid in FAMILY:
        argv += ["--requirement", rid]
    done = subprocess.run(
        argv,
        env={**os.environ, "TITO_PROGRESS": "0"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_DEADLINE_S,
        check=False,
    )
    data = json.loads(report.read_text()) if report.exists() else {}
    if not data:
        data = {"output": (done.stdout[-2000:] + done.stderr[-2000:])}
    return done.returncode, data


def fuzz_abort(url: str) -> list[str]:
    """The fuzzer's stateful abort alone: its findings' requirement IDs and messages."""
    from conformance.fuzz.engine import Fuzzer
    from conformance.fuzz.run import probe_facts
    from conformance.fuzz.settings import FuzzConfig
    from conformance.fuzz.stateful import generate_then_abort

    config = FuzzConfig(base_url=url, max_examples=FUZZ_EXAMPLES * 10)
    fz = Fuzzer(config, probe_facts(config))
    try:
        generate_then_abort(fz, FUZZ_EXAMPLES)
    finally:
        fz.close()
    return [f"{','.join(f.requirement_ids)}: {f.message[:300]}" for f in fz.findings.values()]


def verdicts(report: dict[str, Any]) -> dict[str, str]:
    return {r["id"]: r["status"] for r in report.get("requirements", [])}


def one_setting(setting: Setting, runs: int, defect: str | None) -> dict[str, Any]:
    flags = [*setting.flags] + (["--mock-defect", defect] if defect else [])

    def server_for(port: int) -> ServerProcess:
        return ServerProcess(mock_argv(port, flags), port, env=server_env(setting))  # type: ignore[arg-type]

    tally: Counter[str] = Counter()
    problems: list[str] = []
    caught = 0
    started = time.monotonic()
    with (
        start_on_a_free_port(server_for) as server,
        tempfile.TemporaryDirectory() as tmp,
        client_side(setting, server.base_url) as url,
    ):
        if True:
            for number in range(runs):
                code, report = suite_run(url, Path(tmp) / f"r{number}.json")
                found = verdicts(report)
                fuzz = fuzz_abort(url)
                for rid, status in found.items():
                    if rid in FAMILY or status in ("fail", "error"):
                        tally[f"{rid}:{status}"] += 1
                failing = {r for r, st in found.items() if st == "fail"}
                failing |= {f.split(":")[0] for f in fuzz}
                if defect is None:
                    bad = [f"{r} {st}" for r, st in found.items() if st in ("fail", "error")]
                    if bad or fuzz or code not in (0,):
                        problems.append(f"run {number}: exit {code}; {bad}; fuzz {fuzz}")
                        problems += [
                            f"   {r['id']}: {' '.join(str(r.get('reason', '')).split())[:400]}"
                            for r in report.get("requirements", [])
                            if r.get("status") in ("fail", "error")
                        ]
                else:
                    wanted = DEFECTS[defect]
                    if wanted & failing:
                        caught += 1
                    else:
                        problems.append(f"run {number}: {defect} not caught: " + str({r: st for r, st in found.items() if r in FAMILY}))
    return {
        "setting": setting.name,
        "defect": defect,
        "runs": runs,
        "caught": caught if defect else None,
        "verdicts": dict(sorted(tally.items())),
        "problems": problems,
        "duration_s": round(time.monotonic() - started, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=sorted(BY_NAME), metavar="NAME")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--defects", action="store_true", help="also each in-flight defect")
    parser.add_argument("--json", type=Path, metavar="PATH")
    args = parser.parse_args()
    chosen = [BY_NAME[n] for n in args.only] if args.only else list(SETTINGS)
    rows = []
    for setting in chosen:
        for defect in [None, *(DEFECTS if args.defects else ())]:
            runs = args.runs if defect is None else max(1, args.runs // 3)
            row = one_setting(setting, runs, defect)
            rows.append(row)
            what = f"{setting.name}{' + ' + defect if defect else ''}"
            caught = f"caught {row['caught']}/{row['runs']}"
            verdict = caught if defect else f"{len(row['problems'])} problems"
            print(f"{what:<48} {verdict:<18} {row['duration_s']:>7} s", flush=True)
            for line in row["problems"][:12]:
                print(f"    {line}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    bad = [r for r in rows if r["problems"]]
    print(f"overall: {len(rows) - len(bad)}/{len(rows)} rows clean")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
