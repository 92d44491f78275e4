"""The product file of `run --product FILE`: what the vendor calls the server under test.

The suite learns what a server does, never what it is sold as; a matrix of several vendors'
reports needs both. The file is YAML or JSON (JSON is read as JSON, for exact errors), one
mapping of the fields below; it is checked here so a typo is a usage error before the run,
not a report that fails its schema after it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import yaml

FIELDS = ("name", "version", "url", "contact", "deployment")
REQUIRED = ("name",)


class ProductFileError(ValueError):
    """A product file that cannot be read, or is not a mapping of the documented fields."""


def load(path: Path) -> dict[str, str]:
    """The product fields of `path`, in FIELDS order; ProductFileError says what is wrong."""
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        raise ProductFileError(f"{path}: cannot read the product file: {exc}") from None
    if not isinstance(data, dict):
        raise ProductFileError(f"{path}: expected a mapping of {', '.join(FIELDS)}")
    unknown = sorted(str(k) for k in data if k not in FIELDS)
    if unknown:
        raise ProductFileError(
            f"{path}: unknown field(s) {', '.join(unknown)} (known: {', '.join(FIELDS)})"
        )
    for key, value in data.items():
        if not isinstance(value, str):  # YAML reads `version: 1.10` as the number 1.1
            raise ProductFileError(f"{path}: {key} must be a string (quote it), not {value!r}")
    missing = [k for k in REQUIRED if not str(data.get(k, "")).strip()]
    if missing:
        raise ProductFileError(f"{path}: missing {', '.join(missing)}")
    return {k: data[k] for k in FIELDS if k in data}


def product_text(product: Mapping[str, str]) -> str:
    """One line for people: `Acme Serve 2.1 (https://acme.example) · deployment · contact`."""
    head = " ".join(product[k] for k in ("name", "version") if product.get(k))
    if product.get("url"):
        head += f" ({product['url']})"
    tail = [product[k] for k in ("deployment", "contact") if product.get(k)]
    return " · ".join([head, *tail])
