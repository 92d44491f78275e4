"""The live run's artifact files in --out (a leaf module: it imports nothing of `live`)."""

from __future__ import annotations

import json
from pathlib import Path


def write_json(path: Path, data: object) -> None:
    """`data` as indented JSON, creating the parent directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
