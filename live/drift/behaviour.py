"""`drift --behaviour`: how each release answers the corpus, and which answers changed.

Model fields say what a release declares; its answers say what it does with a request, and
those move without a field moving (a validator, a handler's own check, a check against the
prompt length). Each release's own app answers the corpus (`probe.py`, run by the release's
environment, `frontend-<V>` under the release root, as `live/frontend` installs it), and
consecutive releases are compared request by request: the status, and for an error its
message, type and param. What only an engine could answer comes from the simulated core, the
same for every release (weight transfer fails as on a CPU worker). A release without an
environment is skipped with the reason; the run goes on.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.diff.case import Case
from conformance.profiles import ALL_PROFILES

from ..profiles import CPU_FLAGS, Backend
from ..releases import ReleaseInstallError, build_model, default_root
from .corpus import PROFILE, to_json

PROBE = Path(__file__).with_name("probe.py")
PROBE_DEADLINE_S = 1800.0
"""Importing vLLM takes one to three minutes on two busy cores; the corpus, seconds."""
_PYDANTIC_URL = re.compile(r",? ?'url': 'https://errors\.pydantic\.dev/[^']*'")
"""pydantic's messages name its own version in a link: not a change of the release's."""


@dataclass(frozen=True)
class Outcome:
    """One answer: its status and, for an error, what the release said."""

    status: int | None
    message: str | None = None
    type: str | None = None
    param: str | None = None

    @classmethod
    def of(cls, data: dict[str, Any]) -> Outcome:
        error = data.get("error") or {}
        message = error.get("message")
        if isinstance(message, str):
            message = _PYDANTIC_URL.sub("", message)
        return cls(data.get("status"), message, error.get("type"), error.get("param"))

    def describe(self) -> str:
        if self.message is None and self.param is None:
            return str(self.status)
        param = f" param={self.param}" if self.param else ""
        first = (self.message or "").strip().replace("\n", " ")
        first = first if len(first) <= 160 else first[:157] + "..."
        return f"{self.status}{param}: {first}"


@dataclass
class ReleaseBehaviour:
    version: str
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    skipped: str | None = None
    seconds: float | None = None


@dataclass(frozen=True)
class Change:
    """A request answered differently by `after` than by the release before it, `before`."""

    case: str
    request: str  # `POST /inference/v1/abort_requests`
    before: str
    after: str
    was: Outcome
    now: Outcome

    @property
    def kind(self) -> str:
        return "status" if self.was.status != self.now.status else "error"


def environment(version: str, root: Path | None = None) -> Path | None:
    """The release's finished frontend environment, if it is installed."""
    from live.frontend.install import MARKER

    venv = (root or default_root()) / f"frontend-{version}"
    return venv if (venv / MARKER).is_file() and (venv / "bin" / "python").exists() else None


def install(version: str, root: Path | None = None) -> str | None:
    """Install the release's environment as `tito-mock --real-frontend` does; None or why not."""
    from live.frontend.install import ensure

    root = root or default_root()
    try:
        ensure(version, root, root / "logs" / f"install-{version}.log")
    except (ReleaseInstallError, OSError) as exc:
        return f"could not install it: {exc}"
    return None


def run(
    version: str, cases: list[Case], root: Path | None = None, record: Path | None = None
) -> ReleaseBehaviour:
    """The release's answers; `record/<V>.json` keeps the probe's output, `<V>.log` its log."""
    venv = environment(version, root)
    if venv is None:
        where = (root or default_root()) / f"frontend-{version}"
        why = f"no release environment at {where} (--install-releases, or `tito-mock "
        return ReleaseBehaviour(version, skipped=why + f"--real-frontend {version}`, makes it)")
    python = str(venv / "bin" / "python")
    try:
        model = build_model(python)
    except ReleaseInstallError as exc:
        return ReleaseBehaviour(version, skipped=f"no tiny model: {exc}")
    record = record or Path(tempfile.mkdtemp(prefix="tito-drift-"))
    record.mkdir(parents=True, exist_ok=True)
    out, log = record / f"{version}.json", record / f"{version}.log"
    out.unlink(missing_ok=True)
    corpus = record / "corpus.json"
    corpus.write_text(json.dumps(to_json(cases), indent=1) + "\n", encoding="utf-8")
    argv = [python, str(PROBE), str(corpus), str(out), "--", *server_args(model)]
    env = {**os.environ, **Backend("frontend", model, python).env(ALL_PROFILES[PROFILE])}
    env["TITO_SIM_TOKEN_MS"] = "0"  # only the answer counts, not the pace of its tokens
    print(f"drift: vLLM {version}: its own app answers {len(cases)} requests", file=sys.stderr)
    with log.open("w", encoding="utf-8") as sink:
        try:
            done = subprocess.run(
                argv, stdout=sink, stderr=subprocess.STDOUT, env=env, timeout=PROBE_DEADLINE_S
            )
        except subprocess.TimeoutExpired:
            return ReleaseBehaviour(version, skipped=f"no answers in {PROBE_DEADLINE_S:.0f} s")
    if done.returncode != 0 or not out.is_file():
        said = [line for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
        last = said[-1].strip() if said else "no output"
        return ReleaseBehaviour(version, skipped=f"the probe failed ({done.returncode}): {last}")
    return load(out, version)


def server_args(model: str) -> list[str]:
    """The live frontend's flags in the scale-out profile, on a port nothing listens to."""
    profile = ALL_PROFILES[PROFILE]
    return ["--model", model, "--host", "127.0.0.1", "--port", "0", *CPU_FLAGS, *profile.flags]


def load(path: Path, version: str | None = None) -> ReleaseBehaviour:
    """A recorded probe output (`record/<V>.json`, or a test's fixture)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    outcomes = {name: Outcome.of(answer) for name, answer in data["cases"].items()}
    seconds = (data.get("startup_s") or 0) + (data.get("send_s") or 0)
    return ReleaseBehaviour(version or str(data["vllm"]), outcomes, seconds=round(seconds, 1))


def changes(releases: list[ReleaseBehaviour], cases: list[Case]) -> list[Change]:
    """Per pair of consecutive releases that answered, every request answered differently."""
    requests = {c.name: f"{c.method} {c.path}" for c in cases}
    answered = [r for r in releases if r.skipped is None]
    found = []
    for before, after in zip(answered, answered[1:], strict=False):
        for case in requests:
            was, now = before.outcomes.get(case), after.outcomes.get(case)
            if was is not None and now is not None and was != now:
                found.append(Change(case, requests[case], before.version, after.version, was, now))
    return found


@dataclass
class Behaviour:
    """The corpus sent, and each release's answers in the order the releases were given."""

    cases: list[Case]
    releases: list[ReleaseBehaviour]

    @property
    def changes(self) -> list[Change]:
        return changes(self.releases, self.cases)


def recorded(version: str, folder: Path) -> ReleaseBehaviour:
    """`folder/<V>.json` from an earlier run, or a skip saying it is not there."""
    path = folder / f"{version}.json"
    if not path.is_file():
        return ReleaseBehaviour(version, skipped=f"no recorded answers at {path}")
    return load(path, version)
