"""Benchmark: `tito-conformance run` against the correct mock in every server setting.

"A correct server passes at any speed and configuration": each setting starts `tito-mock` with
other flags (latency, capacity, logprob and context limits, vocabulary, DP, API key,
tokens-only, every serve flag the document names alone and together, every core busy) and
runs `tito-conformance run --base-url` against it exactly as a user does, the small fuzz
folded in; every one must end with 0 fail, 0 warn, 0 error (exit code 0).
`tests/test_conformance_settings.py` asserts exactly that over the same `SETTINGS`; this
script prints the table.

Run: python -m benchmarks.bench_settings [--only NAME ...] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.slow_reader import slow_reader
from conformance.profiles import ALL_PROFILES, API_KEY, MOCK_KNOBS
from conformance.server.process import ServerProcess, mock_argv, start_on_a_free_port
from loopback.timeouts import RUN_DEADLINE_S  # `run`'s own --deadline default

SCALE_OUT = ("--enable-scale-out",)
DEV_MODE = {"VLLM_SERVER_DEV_MODE": "1"}
# What --enable-scale-out with dev mode offers, and --tokens-only: the profiles' own features.
SCALE_OUT_CLAIMS = ALL_PROFILES["scale-out"].features
TOKENS_ONLY_CLAIMS = ALL_PROFILES["tokens-only"].features
BUSY_MARGIN_S = 60.0  # the busy loop ends by itself at the run's deadline plus this, at the latest
# Pinned, so a VLLM_* variable in the caller's environment cannot change a setting.
BASE_ENV = {"VLLM_SERVER_DEV_MODE": "0", "VLLM_API_KEY": ""}


@dataclass(frozen=True)
class Setting:
    """One way to start a correct mock, and what the suite should be told about it."""

    name: str
    flags: tuple[str, ...]
    expect: frozenset[str]
    env: dict[str, str] = field(default_factory=dict)
    api_key: str | None = None
    busy: bool = False  # every core spins (bounded) while the suite runs
    requirement_ids: frozenset[str] | None = None  # None: every check
    min_passed: int = 60  # a run that passes fewer requirements is hollow
    read_delay_s: float = 0.0  # the client reads slowly: a sleep after each read (`slow_reader`)


def _scale_out(name: str, *flags: str, min_passed: int = 60, busy: bool = False) -> Setting:
    """--enable-scale-out in dev mode with the profile's 1 ms inter-token latency, plus `flags`
    (a later --mock-itl-ms overrides the knob: argparse keeps the last)."""
    argv = (*SCALE_OUT, *MOCK_KNOBS, *flags)
    return Setting(name, argv, SCALE_OUT_CLAIMS, dict(DEV_MODE), busy=busy, min_passed=min_passed)


# The serve flags the document names that add to every answer (alone, then all together).
PER_TOKEN_FLAGS = ("--return-sampling-mask", "--enable-return-routed-experts")
ALL_FLAGS = (*PER_TOKEN_FLAGS, "--return-tokens-as-token-ids")


def _tokens_only(name: str, *flags: str, min_passed: int = 50) -> Setting:
    argv = ("--tokens-only", *MOCK_KNOBS, *flags)
    return Setting(name, argv, TOKENS_ONLY_CLAIMS, min_passed=min_passed)


SETTINGS: tuple[Setting, ...] = (
    # The README's own example: no latency at all.
    Setting("fast", SCALE_OUT, SCALE_OUT_CLAIMS, dict(DEV_MODE)),
    # Every check, not a subset: the whole suite took 120 s at a 2 s time to first token.
    _scale_out("slow-first-token", "--mock-ttft-ms", "2000"),
    _scale_out("slow-tokens", "--mock-itl-ms", "25"),
    # A limit may rightly make the suite skip what it cannot exercise (n = 2, 5 logprobs).
    _scale_out("max-num-seqs-1", "--max-num-seqs", "1", min_passed=40),
    _scale_out("max-num-seqs-2", "--max-num-seqs", "2"),
    _scale_out("max-num-seqs-4", "--max-num-seqs", "4"),
    _scale_out("max-num-seqs-256", "--max-num-seqs", "256"),
    _scale_out("max-logprobs-0", "--max-logprobs", "0", min_passed=40),
    _scale_out("max-logprobs-1", "--max-logprobs", "1", min_passed=40),
    _scale_out("max-logprobs-5", "--max-logprobs", "5"),
    _scale_out("max-logprobs-64", "--max-logprobs", "64"),
    _scale_out("max-model-len-64", "--max-model-len", "64", min_passed=40),
    _scale_out("max-model-len-128", "--max-model-len", "128", min_passed=40),
    _scale_out("max-model-len-32768", "--max-model-len", "32768"),
    _scale_out(
        "tight",  # every limit small at once, on a slower server
        "--max-num-seqs",
        "1",
        "--max-logprobs",
        "1",
        "--max-model-len",
        "96",
        "--mock-itl-ms",
        "3",
        min_passed=40,
    ),
    _scale_out("vocab-2048", "--mock-vocab-size", "2048"),
    _scale_out("vocab-151936", "--mock-vocab-size", "151936"),
    Setting(
        "dp-2",
        (*SCALE_OUT, *MOCK_KNOBS, "--data-parallel-size", "2"),
        SCALE_OUT_CLAIMS | {"data-parallel"},
        dict(DEV_MODE),
    ),
    Setting(
        "api-key",
        (*SCALE_OUT, *MOCK_KNOBS, "--api-key", API_KEY),
        ALL_PROFILES["scale-out"].claims | {"api-key"},
        api_key=API_KEY,
    ),
    _tokens_only("tokens-only"),
    # The document's serve flags, each alone, then all of them with every other profile flag.
    _scale_out("sampling-mask", "--return-sampling-mask"),
    _scale_out("routed-experts", "--enable-return-routed-experts"),
    _scale_out("tokens-as-token-ids", "--return-tokens-as-token-ids"),
    Setting(  # no tokenizer: no text mode, no text render
        "skip-tokenizer-init",
        (*SCALE_OUT, *MOCK_KNOBS, "--skip-tokenizer-init"),
        SCALE_OUT_CLAIMS - {"text-mode", "render"},
        dict(DEV_MODE),
        min_passed=50,
    ),
    Setting(
        "every-flag",
        (*SCALE_OUT, *MOCK_KNOBS, *ALL_FLAGS, "--data-parallel-size", "2", "--api-key", API_KEY),
        SCALE_OUT_CLAIMS | {"api-key", "data-parallel"},
        dict(DEV_MODE),
        api_key=API_KEY,
    ),
    Setting(
        "tokens-only-every-flag",
        ("--tokens-only", *MOCK_KNOBS, *PER_TOKEN_FLAGS, "--data-parallel-size", "2"),
        TOKENS_ONLY_CLAIMS | {"data-parallel"},
        min_passed=50,
    ),
    _scale_out("busy", busy=True),
)
IN_FLIGHT = frozenset(
    ("ABORT-002", "ABORT-003", "ABORT-004", "ABORT-009", "ABORT-010")
    + ("STOP-005", "WV-003", "WV-004", "WV-009")
)
"""Every requirement whose verdict rests on an action landing in flight (issue 28)."""


def _in_flight(name: str, *flags: str, busy: bool = False, read_delay_s: float = 0.0) -> Setting:
    """A correct mock without latency (plus `flags`) where timing fools a rule that reads the
    client's pace as the server's; the in-flight family only (`bench_abort_family.py` repeats
    it and adds the defects)."""
    return Setting(
        name,
        (*SCALE_OUT, *flags),
        SCALE_OUT_CLAIMS,
        dict(DEV_MODE),
        busy=busy,
        requirement_ids=IN_FLIGHT,
        min_passed=0,
        read_delay_s=read_delay_s,
    )


IN_FLIGHT_SETTINGS: tuple[Setting, ...] = (
    _in_flight("in-flight-busy", busy=True),
    _in_flight("in-flight-slow-reader", read_delay_s=0.002),
    _in_flight("in-flight-ctx-32", "--max-model-len", "32"),
    _in_flight("in-flight-ctx-48", "--max-model-len", "48"),
    _in_flight("in-flight-ctx-64", "--max-model-len", "64"),
    _in_flight("in-flight-ctx-96", "--max-model-len", "96", "--mock-vocab-size", "5000"),
    _in_flight("in-flight-ctx-48-busy", "--max-model-len", "48", busy=True),
    _in_flight("in-flight-ttft-800-seqs-1", "--mock-ttft-ms", "800", "--max-num-seqs", "1"),
    _in_flight("in-flight-ttft-800-seqs-2", "--mock-ttft-ms", "800", "--max-num-seqs", "2"),
    _in_flight("in-flight-ttft-3000-seqs-1", "--mock-ttft-ms", "3000", "--max-num-seqs", "1"),
    _in_flight("in-flight-ttft-3000-seqs-2", "--mock-ttft-ms", "3000", "--max-num-seqs", "2"),
)
SETTINGS += IN_FLIGHT_SETTINGS
BY_NAME = {s.name: s for s in SETTINGS}


@contextmanager
def busy_cores(seconds: float) -> Iterator[list[int]]:
    """One spinning child per core, each ending by itself after `seconds`; all are killed (by
    pid) on the way out."""
    code = f"import time\nend = time.monotonic() + {seconds!r}\nwhile time.monotonic() < end: pass"
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL)
        for _ in range(os.cpu_count() or 1)
    ]
    try:
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


@contextmanager
def client_side(setting: Setting, base_url: str) -> Iterator[str]:
    """The URL the suite talks to, under the client's conditions: every core busy, or a
    client that reads slowly (`slow_reader`)."""
    if setting.read_delay_s:
        with slow_reader(base_url, setting.read_delay_s) as url:
            yield url
    elif setting.busy:
        with busy_cores(RUN_DEADLINE_S + BUSY_MARGIN_S):
            yield base_url
    else:
        yield base_url


def server_env(setting: Setting) -> dict[str, str]:
    return {**BASE_ENV, **setting.env}


@dataclass(frozen=True)
class Outcome:
    """What `tito-conformance run` gave for one setting: its exit code and JSON report."""

    exit_code: int
    report: dict[str, Any]
    duration_s: float
    output: str = ""

    @property
    def summary(self) -> dict[str, int]:
        found = self.report.get("summary")
        return found if isinstance(found, dict) else {}

    @property
    def clean(self) -> bool:
        s = self.summary
        return self.exit_code == 0 and not (s.get("failed") or s.get("warnings") or s.get("errors"))


def cli_argv(setting: Setting, base_url: str, json_report: Path) -> list[str]:
    """The command a user types (through this interpreter, so the checkout is what runs)."""
    argv = [sys.executable, "-m", "conformance.cli", "run", "--base-url", base_url]
    argv += ["--json-report", str(json_report)]
    if setting.expect:
        argv += ["--expect", ",".join(sorted(setting.expect))]
    if setting.api_key:
        argv += ["--api-key", setting.api_key]
    for rid in sorted(setting.requirement_ids or ()):
        argv += ["--requirement", rid]
    return argv


def run_setting(setting: Setting) -> Outcome:
    """Start the mock as `setting` says, run `tito-conformance run` against it, stop all."""
    started = time.monotonic()

    def server_for(port: int) -> ServerProcess:
        return ServerProcess(mock_argv(port, list(setting.flags)), port, env=server_env(setting))

    with (
        start_on_a_free_port(server_for) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        path = Path(tmp) / "report.json"
        env = {**os.environ, "TITO_PROGRESS": "0"}
        with client_side(setting, server.base_url) as url:
            done = _call(cli_argv(setting, url, path), env)
        report = json.loads(path.read_text()) if path.exists() else {}
    output = (done.stdout[-4000:] + done.stderr[-4000:]).strip()
    return Outcome(done.returncode, report, time.monotonic() - started, output)


def _call(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_DEADLINE_S + 120,
        check=False,
    )


def problems(outcome: Outcome, width: int = 300) -> list[str]:
    """Each failing, warning or broken requirement with its reason, one line each."""
    lines = [] if outcome.report else [f"no report (exit {outcome.exit_code}): {outcome.output}"]
    for r in outcome.report.get("requirements", []):
        if r.get("status") in ("fail", "error"):
            kind = "warn" if r["status"] == "fail" and r.get("level") != "MUST" else r["status"]
            reason = " ".join(str(r.get("reason", "")).split())
            lines.append(f"{r.get('id')} [{kind}] {reason[:width]}")
    return lines


def row(setting: Setting, outcome: Outcome) -> dict[str, Any]:
    s = outcome.summary
    return {
        "setting": setting.name,
        "exit": outcome.exit_code,
        "passed": s.get("passed"),
        "failed": s.get("failed"),
        "warn": s.get("warnings"),
        "skip": s.get("skipped"),
        "error": s.get("errors"),
        "skipped_for_limits": s.get("skipped_for_limits"),
        "duration_s": round(outcome.duration_s, 1),
        "problems": problems(outcome),
    }


COLUMNS = ("setting", "exit", "passed", "failed", "warn", "skip", "error", "skipped_for_limits")


def print_row(r: dict[str, Any]) -> None:
    cells = [f"{r['setting']:<22}"] + [f"{r[c]!s:>6}" for c in COLUMNS[1:-1]]
    cells += [f"{r['skipped_for_limits']!s:>18}", f"{r['duration_s']!s:>10}"]
    print(" | ".join(cells), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=sorted(BY_NAME), metavar="NAME")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the rows as JSON")
    parser.add_argument("-v", "--verbose", action="store_true", help="list each problem")
    args = parser.parse_args()
    chosen = [BY_NAME[n] for n in args.only] if args.only else list(SETTINGS)
    header = [f"{'setting':<22}"] + [f"{c:>6}" for c in COLUMNS[1:-1]]
    print(" | ".join([*header, f"{'skipped-for-limits':>18}", f"{'duration s':>10}"]))
    rows, t0 = [], time.monotonic()
    for setting in chosen:
        rows.append(row(setting, run_setting(setting)))
        print_row(rows[-1])
        if args.verbose:
            for line in rows[-1]["problems"]:
                print(f"    {line}")
    clean = [r for r in rows if r["exit"] == 0 and not (r["failed"] or r["warn"] or r["error"])]
    print(
        f"overall: {len(clean)}/{len(rows)} settings clean (0 fail, 0 warn, 0 error) "
        f"in {time.monotonic() - t0:.1f} s"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if len(clean) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
