"""Independent check modules side by side, on a server whose every answer waits.

Against a server whose first token takes seconds, a run is the sum of its requests' waits:
at 2 s a token the suite's ~80 generates took 160 s one after the other. Most check modules
touch no state of the server but their own requests, so the runner hands them to worker
processes, as many as the server runs side by side (its learned max_num_seqs over the 8
choices a check may ask for), each with the probe's knowledge and a session of its own (its
own request ids). What reaches the server as a whole runs afterwards in the runner itself,
alone: the checks that abort every request or read the server's counters, the checks that
judge every body the others received (the workers hand theirs back) and the ones that may
take the server down. What else needs only the probe (the folded-in fuzz) runs beside the
workers where the server has room for one more (`room_beside`).

A worker's start is most of what a short module costs: it loads no installed pytest plugin.
Against a fast server nothing is gained, so it runs as before: one pytest session.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conformance.registry import all_checks, runs_last
from conformance.run.collector import Collector
from conformance.server.features import Features
from conformance.server.limits import Limits
from conformance.session import Session, SuiteConfig
from conformance.tito.answers import Answer
from conformance.verdicts.results import CheckResult, Status
from loopback.timeouts import PAST_DEADLINE_S

SERIAL = ("test_server_wide.py", "test_errors.py", "test_schema.py", "test_every_answer.py")
"""Modules that act on or read the whole server (an abort of every request, `/mock/stats`),
judge what the others received, or may end the server (ERR-007): they run after the workers,
in the runner's own session. Aborts act
on their own request ids and read their own timelines, and the weight label is judged only by
its own module, so both run beside the others."""
ENDING = ("test_errors.py",)
"""SERIAL modules only for their `last` checks (those that may end the server): the rest of
their checks send requests of their own, so they run in a worker like any other."""
GATED = "test_weight_versions.py"
"""The module that sets the weight label and judges it: what runs beside the checks (the fuzz)
leaves the label alone until it has ended (see `runner.run`)."""
FIRST = (
    GATED,
    "test_text_mode.py",
    "test_stop.py",
    "test_core.py",
    "test_response.py",
    "test_streaming.py",
    "test_abort.py",
)
"""The longest modules, longest first as measured side by side at a 3 s first token (their
long streams cost CPU as well as waits), so no worker is left with one at the end; the gated
one first, so what waits for it waits least."""
SLOW_FIRST_TOKEN_S = 0.2  # below this, waiting is not what a run spends its time on
SPLIT = ("test_stop.py",)
"""Modules of many independent checks, handed out as two halves."""
MAX_WORKERS = 6
CHOICES_PER_CHECK = 8  # the most choices one check asks for at a time


def workers_for(config: SuiteConfig, limits: Limits) -> int:
    """How many modules run at once: 1 (the plain run) unless the server is slow to answer
    and takes several checks' requests side by side; never with -k or --requirement, whose
    selection only one pytest session can make."""
    if config.workers is not None:
        return max(1, config.workers)
    if config.keyword or config.requirement_ids is not None:
        return 1
    if (limits.ttft_s or 0.0) < SLOW_FIRST_TOKEN_S:
        return 1
    if limits.max_n is None:
        return MAX_WORKERS
    return max(1, min(MAX_WORKERS, limits.max_n // CHOICES_PER_CHECK))


def room_beside(workers: int, limits: Limits) -> bool:
    """The server takes one more check's worth of requests beside the workers (what the runner
    runs beside them), so nothing waits in its queue for it."""
    if workers < 2:
        return False
    return limits.max_n is None or limits.max_n // CHOICES_PER_CHECK > workers


def modules(checks_dir: Path) -> tuple[list[Path], list[Path]]:
    """(modules for the workers, modules for the runner afterwards)."""

    def order(path: Path) -> tuple[int, str]:
        return (FIRST.index(path.name) if path.name in FIRST else len(FIRST), path.name)

    found = sorted(checks_dir.glob("test_*.py"), key=order)
    return [p for p in found if p.name not in SERIAL], [p for p in found if p.name in SERIAL]


def _tests(path: Path) -> list[str]:
    """The module's checks by name, sorted."""
    names = [name for name in all_checks()]
    return sorted({n.rsplit(".", 1)[1] for n in names if n.split(".")[-2] == path.stem})


def _ending(path: Path, test: str) -> bool:
    """The check may take the server down (`checks(last=True)`)."""
    module = importlib.import_module(f"conformance.checks.{path.stem}")
    return runs_last(getattr(module, test, None)) == 2


def jobs(shared: list[Path], alone: Sequence[Path] = ()) -> list[list[str]]:
    """The workers' jobs, longest first: each module, the SPLIT ones as two halves of their
    checks (pytest node ids), then the ENDING modules of `alone` without their `last` checks."""
    out: list[list[str]] = []
    for path in shared:
        if path.name not in SPLIT:
            out.append([str(path)])
            continue
        tests = _tests(path)
        out += [[f"{path}::{t}" for t in tests[half::2]] for half in (0, 1)]
    for path in alone:
        if path.name in ENDING:
            out.append([f"{path}::{t}" for t in _tests(path) if not _ending(path, t)])
    return out


def afterwards(alone: list[Path]) -> list[str]:
    """What the runner's own session runs after the workers: the SERIAL modules, of the
    ENDING ones only their `last` checks."""
    out: list[str] = []
    for path in alone:
        if path.name not in ENDING:
            out.append(str(path))
            continue
        out += [f"{path}::{t}" for t in _tests(path) if _ending(path, t)]
    return out


@dataclass
class Shard:
    """What one worker's module gave back: its check outcomes and the bodies it received."""

    outcomes: list[tuple[tuple[str, ...], CheckResult]] = field(default_factory=list)
    observed: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    malformed: list[tuple[str, str, Any]] = field(default_factory=list)
    error: str = ""
    answers: list[Answer] = field(default_factory=list)


def run_module(
    config: SuiteConfig,
    features: Features,
    limits: Limits,
    selected: frozenset[str] | None,
    args: list[str],
) -> Shard:
    """In a worker: one pytest session over one module, with a session built from what the
    runner's probe learned (no second probe) and the whole run's selection (so a claimed
    feature's anchor in another module still blocks here instead of failing)."""
    session = Session.learned(config, features, limits)
    collector = Collector(config, session, selection=selected)
    try:
        error = checks_session(args, [collector])
    finally:
        session.close()
    shard = Shard(collector.outcomes, session.observed, session.malformed, error)
    shard.answers = session.answers
    return shard


def checks_session(args: list[str], plugins: list[Any]) -> str:
    """One inner pytest session over the checks, its output kept out of the user's terminal;
    what went wrong with pytest itself ("" when the checks ran, failing or not)."""
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = pytest.main(args, plugins=plugins)
    ran = (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED)
    return "" if code in ran else f"pytest exited with {code!r}:\n{output.getvalue()[-3000:]}"


def run_workers(
    session: Session,
    workers: int,
    jobs: list[list[str]],
    selected: frozenset[str] | None,
    on_done: Callable[[list[str]], None] = lambda job: None,
) -> list[Shard]:
    """Each job (pytest arguments) in a fresh interpreter, `workers` at a time; `on_done(job)`
    as each ends. A subprocess of `python -m conformance.run.parallel`, not multiprocessing: a
    spawned child re-imports the caller's main module, which a script calling `runner.run`
    without a main guard (or a frozen one) cannot survive."""
    learned = (session.config, session.features, session.limits, selected)
    with (
        tempfile.TemporaryDirectory(prefix="tito-workers-") as tmp,
        ThreadPoolExecutor(workers) as pool,
    ):
        paths = [Path(tmp) / f"job{i}" for i in range(len(jobs))]
        for path, args in zip(paths, jobs, strict=True):
            path.with_suffix(".in").write_bytes(pickle.dumps((*learned, args)))
        timeout = session.config.deadline_s + PAST_DEADLINE_S

        def one(path: Path, job: list[str]) -> Shard:
            try:
                return _worker(path, timeout)
            finally:
                on_done(job)

        return list(pool.map(one, paths, jobs))


def _worker(path: Path, timeout: float) -> Shard:
    """One job's subprocess; whatever breaks it is the run's harness error, never a hang."""
    argv = [sys.executable, "-m", "conformance.run.parallel", str(path)]
    here = str(Path(__file__).resolve().parents[2])  # this kit, installed or not
    path_now = os.environ.get("PYTHONPATH", "")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [here, path_now])),
    }
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return Shard(error=f"a check worker did not end within {timeout:g} s")
    out = path.with_suffix(".out")
    if done.returncode != 0 or not out.exists():
        return Shard(error=f"a check worker exited {done.returncode}: {done.stderr[-3000:]}")
    shard = pickle.loads(out.read_bytes())
    assert isinstance(shard, Shard)
    return shard


def merge(
    session: Session, shards: list[Shard]
) -> tuple[list[tuple[tuple[str, ...], CheckResult]], str]:
    """The workers' outcomes, and their bodies kept on the runner's session for the checks
    that judge every body received."""
    outcomes: list[tuple[tuple[str, ...], CheckResult]] = []
    errors = []
    for shard in shards:
        outcomes += shard.outcomes
        session.failing.update(
            rid for ids, r in shard.outcomes if r.status is Status.FAIL for rid in ids
        )
        for schema, bodies in shard.observed.items():
            for what, body in bodies:
                session.observe(schema, what, body)
        session.malformed.extend(shard.malformed)  # a check was blocked on them: judged, always
        for answer in shard.answers:
            session.keep(answer)
        if shard.error:
            errors.append(shard.error)
    return outcomes, "\n".join(errors)


def _main(path: str) -> None:
    """The worker's side: read the job, run it, write the shard (see `run_workers`)."""
    from conformance.run import parallel  # the module's own classes, not __main__'s copies

    job = Path(path)
    config, features, limits, selected, args = pickle.loads(job.with_suffix(".in").read_bytes())
    shard = parallel.run_module(config, features, limits, selected, args)
    job.with_suffix(".out").write_bytes(pickle.dumps(shard))


if __name__ == "__main__":
    _main(sys.argv[1])
