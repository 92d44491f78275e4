"""What a run was judged against: the kit's version, the spec's version, the documents' hashes.

The kit's version has one home, `pyproject.toml`; code reads it from the installed
distribution's metadata. The hashes let two reports say whether they used the same documents,
whatever their version strings claim.
"""

from __future__ import annotations

import argparse
import hashlib
from functools import cache
from typing import Any

from conformance import __version__
from conformance.document import SPEC_VERSION, document_text


@cache
def provenance() -> dict[str, str]:
    """The kit version, the API document's version and hash, the OpenAPI version and hash."""
    from openapi import load_spec, spec_path

    spec: Any = load_spec()
    return {
        "kit_version": __version__,
        "spec_version": SPEC_VERSION,
        "document_sha256": hashlib.sha256(document_text().encode("utf-8")).hexdigest(),
        "openapi_version": str(spec["info"]["version"]),
        "openapi_sha256": hashlib.sha256(spec_path().read_bytes()).hexdigest(),
    }


def version_line(prog: str) -> str:
    """What `--version` prints: one line a bug report can quote."""
    p = provenance()
    return (
        f"{prog} {p['kit_version']} (spec {p['spec_version']}, document sha256 "
        f"{p['document_sha256'][:12]}; openapi {p['openapi_version']}, sha256 "
        f"{p['openapi_sha256'][:12]})"
    )


class VersionAction(argparse.Action):
    """`--version`, reading the documents only when asked (argparse's own formats eagerly)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kw: Any):
        super().__init__(option_strings, dest, nargs=0, help="print the versions and exit", **kw)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print(version_line(parser.prog))
        parser.exit()
