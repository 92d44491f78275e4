"""The API document the requirements quote, shipped inside the package.

A copy of `tito-api.md` lives next to the code so an installed suite can prove that every quoted
sentence is really in the document it claims to implement, without the repository around it.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

DOCUMENT_FILE = "tito-api.md"
SPEC_VERSION = "vllm-tito-api (docs, vLLM 0.32 era)"


@cache
def document_text() -> str:
    """The full text of the API document."""
    return resources.files("conformance").joinpath(DOCUMENT_FILE).read_text(encoding="utf-8")
