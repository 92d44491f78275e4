"""`tito-conformance drift` (issue 21): read vLLM releases' TITO surface from their sources.

`fetch` gets a release's wheel (cached) and reads files from it, `surface` reads the routes and
models with `ast`, `spec_view` flattens the spec's schemas the same way, `pairing` says which
vLLM class each schema describes, `compare` lists the differences and `report` prints them.
With `--behaviour` (issue 29, item 5), `probe` runs each release's own app over `corpus` in the
release's environment and `behaviour` names the requests answered differently between releases.
"""

from .cli import main

__all__ = ["main"]
