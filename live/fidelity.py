"""The fidelity gate inside a live run: the mock, same flags, diffed against the real server.

Runs `tito-conformance diff --reference REAL --candidate MOCK` (the suite's own diff, as a
subprocess: live composes, it does not re-implement) while the real server of a profile is up,
then holds its JSON report against `intended_differences.yaml`: the run passes when every
difference is listed and every listed difference whose case ran still occurs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from conformance.server.process import ServerProcess
from conformance.wire import DEFAULT_TIMEOUT_S
from loopback.ports import free_port
from loopback.timeouts import DIFF_RUN_S, MOCK_START_S
from mock_server.behaviour.releases import DEFAULT, RELEASES

from .launcher import LiveServer, ServerStartError
from .profiles import Backend, LiveProfile
from .standin import is_standin

INTENDED_FILE = Path(__file__).with_name("intended_differences.yaml")

# The tiny model's vocabulary, so the mock answers the same ids in and out of range.
MOCK_KNOBS = ("--mock-itl-ms", "1", "--mock-vocab-size", "2048")
MOCK_RELEASES = tuple(RELEASES)
"""The releases `tito-mock --mock-vllm-version` plays, oldest first."""
DEFAULT_RELEASE = DEFAULT.short
"""What a server of a version the mock does not play is diffed against: the mock's default,
the spec's release (0.32), not the newest it plays (0.34)."""


CRASHERS: dict[str, tuple[str, ...]] = {
    # known_deviations.yaml, ERR-007 of 0.30/0.31: a prompt id equal to the vocabulary size
    # passes validation with the tokenizer loaded, and the whole server exits.
    "0.30": ("oov-token-id",),
    "0.31": ("oov-token-id",),
}
"""Diff cases that kill a release (a listed deviation): left out, or every later case of the
diff would only show that the server is gone."""


def release_of(version: str | None) -> str | None:
    """`0.31.0` (or `0.31.0+cpu`) -> `0.31` when the mock plays it, else None."""
    if not version:
        return None
    minor = ".".join(version.split("+", 1)[0].split(".")[:2])
    return minor if minor in MOCK_RELEASES else None


@dataclass(frozen=True)
class Intended:
    """One intended difference of the mock against vLLM (see the YAML file's header)."""

    pattern: str
    reason: str
    row: int | None = None
    cases: tuple[str, ...] = ()
    profiles: tuple[str, ...] = ()  # () = every profile
    captures: tuple[str, ...] = ()
    releases: tuple[str, ...] = ()  # () = every release the mock plays, else `0.31`, ...
    intermittent: bool = False  # a race of the real server: need not occur in every run

    def covers(self, pattern: str) -> bool:
        if self.pattern.endswith(".*"):
            return pattern.startswith(self.pattern[:-1])
        return pattern == self.pattern

    def applies(self, profile: str, case: str, release: str | None = None) -> bool:
        return (
            case in self.cases
            and (not self.profiles or profile in self.profiles)
            and (not self.releases or (release or DEFAULT_RELEASE) in self.releases)
        )


def load_intended(path: Path = INTENDED_FILE) -> list[Intended]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    out = []
    for i, entry in enumerate(data.get("differences") or []):
        if not entry.get("pattern") or not entry.get("reason"):
            raise ValueError(f"{path}: entry {i}: needs a pattern and a reason")
        if not entry.get("cases") and not entry.get("captures"):
            raise ValueError(f"{path}: entry {i}: lists neither cases nor captures")
        profiles = entry.get("profiles") or "all"
        out.append(
            Intended(
                pattern=str(entry["pattern"]),
                reason=" ".join(str(entry["reason"]).split()),
                row=entry.get("row"),
                cases=tuple(entry.get("cases") or ()),
                profiles=() if profiles == "all" else tuple(profiles),
                captures=tuple(entry.get("captures") or ()),
                releases=tuple(str(r) for r in entry.get("releases") or ()),
                intermittent=bool(entry.get("intermittent", False)),
            )
        )
    return out


@dataclass
class FidelityVerdict:
    """A diff report held against the intended list: listed, unlisted, stale."""

    cases: int = 0
    differences: int = 0
    listed: list[str] = field(default_factory=list)
    unlisted: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.unlisted or self.stale)

    def render(self) -> str:
        lines = [
            f"{self.cases} cases, {self.differences} differences, {len(self.listed)} listed, "
            f"{len(self.unlisted)} unlisted, {len(self.stale)} stale"
        ]
        lines += [f"  UNLISTED DIFFERENCE {d}" for d in self.unlisted]
        lines += [f"  STALE INTENDED DIFFERENCE {d}" for d in self.stale]
        return "\n".join(lines)


def judge(
    report: dict[str, Any], intended: Sequence[Intended], release: str | None = None
) -> FidelityVerdict:
    """Every difference must be listed for its profile, case and release; every applying entry
    must hit."""
    profile = str(report["profile"])
    verdict = FidelityVerdict(cases=len(report["cases"]))
    for case in report["cases"]:
        name = case["case"]
        entries = [e for e in intended if e.applies(profile, name, release)]
        hit: set[Intended] = set()
        for difference in case["differences"]:
            verdict.differences += 1
            said = f"{name}: {difference['location']}: {difference['kind']}"
            covering = [e for e in entries if e.covers(difference["pattern"])]
            hit.update(covering)
            (verdict.listed if covering else verdict.unlisted).append(said)
        verdict.stale += [
            f"{name}: {e.pattern} (row {e.row})"
            for e in entries
            if e not in hit and not e.intermittent
        ]
    return verdict


@dataclass
class DiffResult:
    profile: str
    status: str  # "same" | "listed" (only intended differences) | "different" | "error"
    returncode: int | None
    output_path: Path
    verdict: FidelityVerdict | None = None

    @property
    def ok(self) -> bool:
        return self.status in ("same", "listed")


def _is_mock(server: ServerProcess) -> bool:
    """The list is about vLLM: a mock standing in for the real server must match outright."""
    argv = list(server.argv)
    if argv and is_standin(argv[0]):  # `vllm serve` answered by the mock (live/standin)
        return True
    return any(a == "-m" and b == "mock_server" for a, b in zip(argv, argv[1:], strict=False))


def diff_against_mock(
    real: ServerProcess,
    profile: LiveProfile,
    out: Path,
    timeout_s: float = DIFF_RUN_S,
    intended: Sequence[Intended] | None = None,
    vllm_version: str | None = None,
    request_timeout_s: float = DEFAULT_TIMEOUT_S,
) -> DiffResult:
    """`intended` defaults to the YAML list, or to none when `real` is itself the mock.
    `vllm_version` (what the real server says): the mock plays that release when it can."""
    if intended is None:
        intended = [] if _is_mock(real) else load_intended()
    release = release_of(vllm_version)
    knobs = MOCK_KNOBS if release is None else (*MOCK_KNOBS, "--mock-vllm-version", release)
    mock = Backend("mock", "tiny-qwen3", sys.executable, extra_args=knobs)
    port = free_port()
    path = out / f"diff-{profile.name}.txt"
    report_path = out / f"diff-{profile.name}.json"
    candidate = LiveServer(
        mock.argv(profile, port),
        port,
        env=mock.env(profile),
        start_deadline_s=MOCK_START_S,
        api_key=profile.api_key,
        log_path=out / f"mock-{profile.name}.log",
    )
    argv = [
        sys.executable, "-m", "conformance.cli", "diff",
        "--reference", real.base_url, "--candidate", candidate.base_url,
        "--profile", profile.name, "--json-report", str(report_path),
        "--timeout", f"{request_timeout_s:g}",
    ]  # fmt: skip
    if profile.api_key:
        argv += ["--api-key", profile.api_key]
    for case in CRASHERS.get(release or "", ()):
        argv += ["--skip-case", case]
    report_path.unlink(missing_ok=True)
    try:
        with candidate:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except ServerStartError as exc:
        path.write_text(f"mock did not start: {exc}\n", encoding="utf-8")
        return DiffResult(profile.name, "error", None, path)
    except subprocess.TimeoutExpired:
        path.write_text(f"diff did not finish within {timeout_s:g} s\n", encoding="utf-8")
        return DiffResult(profile.name, "error", None, path)
    shown = " ".join("<api-key>" if a == profile.api_key else a for a in argv)  # as transcripts
    text = f"$ {shown}\n{done.stdout}{done.stderr}"
    if done.returncode not in (0, 1) or not report_path.exists():
        path.write_text(text, encoding="utf-8")
        return DiffResult(profile.name, "error", done.returncode, path)
    verdict = judge(json.loads(report_path.read_text(encoding="utf-8")), intended, release)
    path.write_text(f"{text}fidelity gate: {verdict.render()}\n", encoding="utf-8")
    if not verdict.ok:
        status = "different"
    elif verdict.differences:
        status = "listed"
    else:
        status = "same"
    return DiffResult(profile.name, status, done.returncode, path, verdict)
