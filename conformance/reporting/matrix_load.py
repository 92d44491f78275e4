"""Reading the JSON reports a matrix is made of, each checked against report.schema.json.

The reports come from anywhere (a vendor's CI artefact, a hand-edited file), so every one is
validated before it is rendered, and a bad one is named with the first thing wrong in it, in
one line a person can act on, never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from conformance.reporting.json_report import schema

MAX_MESSAGE = 300


class ReportFileError(Exception):
    """A report file that cannot be read, is not JSON, or is not a conformance report."""


def load(paths: Sequence[Path]) -> list[tuple[str, str, Mapping[str, Any]]]:
    """`(source, profile, report)` per server: a multi-profile file gives one per profile."""
    names = [p.name for p in paths]
    out: list[tuple[str, str, Mapping[str, Any]]] = []
    for path in paths:
        source = path.name if names.count(path.name) == 1 else str(path)
        data = read(path)
        if "profiles" in data:
            out += [(source, str(name), rep) for name, rep in data["profiles"].items()]
        else:
            out.append((source, "", data))
    return out


def read(path: Path) -> dict[str, Any]:
    """One report document, validated; ReportFileError says what is wrong and where."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportFileError(f"{path}: cannot read: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportFileError(f"{path}: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ReportFileError(
            f"{path}: not a conformance report: expected a JSON object (a report, or "
            f'{{"profiles": {{...}}}}), got {type(data).__name__}'
        )
    error = best_match(Draft202012Validator(_branch("profiles" in data)).iter_errors(data))
    if error is not None:
        where = error.json_path
        message = error.message
        if len(message) > MAX_MESSAGE:
            message = message[: MAX_MESSAGE - 1] + "…"
        raise ReportFileError(
            f"{path}: not a conformance report (report.schema.json) at {where}: {message}"
        )
    return data


def _branch(profiles: bool) -> dict[str, Any]:
    """The schema with its `oneOf` resolved by the document's shape, so that an error names
    the field that is wrong instead of "not valid under any of the given schemas"."""
    whole = schema()
    rest = {k: v for k, v in whole.items() if k != "oneOf"}
    return {**rest, **whole["oneOf"][1 if profiles else 0]}
