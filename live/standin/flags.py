"""`vllm serve`'s flags, as far as the live run passes them, and the mock's flag for each.

The one place the stand-in's mapping is spelled. The mock takes vLLM's names with vLLM's
meanings (`mock_server/behaviour/config.py`), so most flags keep their name; what the table
adds is which flags the GPU path may pass at all: any other flag is a usage error (exit 2),
never ignored, because it means the GPU path changed and the stand-in must learn the flag. The
profiles' flags are not listed per profile: every flag of `conformance.profiles` is a row
here, and the mock's pace knob (`MOCK_KNOBS`) is added, as the embedded mock run adds it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from conformance.profiles import MOCK_KNOBS


class StandinUsage(ValueError):
    """An argv the stand-in cannot map: a command other than `serve`, or an unknown flag."""


@dataclass(frozen=True)
class Flag:
    """One `vllm serve` flag: how vLLM parses it and the mock flag it becomes."""

    name: str
    kind: str  # "switch", "bool" (--x / --no-x), "value", "list" (one or more, repeatable)
    mock: str | None = None  # the mock's flag; None: the same name
    type: Callable[[str], object] = str
    alias: str | None = None
    repeat: bool = False  # a list the mock takes as the flag once per value (its `append`)

    @property
    def dest(self) -> str:
        return self.name.lstrip("-").replace("-", "_")


SERVE_FLAGS: tuple[Flag, ...] = (
    Flag("--host", "value"),
    Flag("--port", "value", type=int),
    Flag("--enable-scale-out", "bool"),
    Flag("--tokens-only", "switch"),
    Flag("--skip-tokenizer-init", "switch"),
    Flag("--api-key", "list", repeat=True),
    Flag("--served-model-name", "list"),
    Flag("--data-parallel-size", "value", type=int, alias="-dp"),
    Flag("--max-model-len", "value", type=int),
    Flag("--max-num-seqs", "value", type=int),
    Flag("--max-logprobs", "value", type=int),
    Flag("--seed", "value", type=int),
    Flag("--return-tokens-as-token-ids", "switch"),
    Flag("--enable-return-routed-experts", "switch"),
    Flag("--return-sampling-mask", "switch"),
    # Engine-only: the mock accepts and ignores them, as they change no answer's shape.
    Flag("--dtype", "value"),
    Flag("--enforce-eager", "switch"),
)
"""Every `vllm serve` flag the stand-in knows (`--help` lists them)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise StandinUsage(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="vllm serve", allow_abbrev=False, add_help=False)
    p.add_argument("model")
    for f in SERVE_FLAGS:
        names = [f.name, *([f.alias] if f.alias else [])]
        if f.kind == "switch":
            p.add_argument(*names, dest=f.dest, action="store_true")
        elif f.kind == "bool":
            p.add_argument(*names, dest=f.dest, action=argparse.BooleanOptionalAction)
        elif f.kind == "list":
            p.add_argument(*names, dest=f.dest, nargs="+", action="extend", type=f.type)
        else:
            p.add_argument(*names, dest=f.dest, type=f.type)
    return p


def _normalized(arg: str) -> str:
    """vLLM's parser reads `--max_model_len` as `--max-model-len`; so does the stand-in."""
    if not arg.startswith("--"):
        return arg
    name, eq, value = arg.partition("=")
    return name.replace("_", "-") + eq + value


def to_mock_argv(argv: Sequence[str]) -> list[str]:
    """`serve MODEL [flags]` -> the arguments of `python -m mock_server`."""
    if not argv or argv[0] != "serve":
        got = argv[0] if argv else "nothing"
        raise StandinUsage(f"only `vllm serve MODEL [flags]` is stood in for, got {got!r}")
    ns, unknown = _parser().parse_known_args([_normalized(a) for a in argv[1:]])
    if unknown:
        raise StandinUsage(
            f"unknown flag(s) {' '.join(unknown)}: the GPU path passes what the stand-in does "
            "not know; teach it (SERVE_FLAGS in live/standin/flags.py), never ignore it"
        )
    out = [ns.model]
    for f in SERVE_FLAGS:
        value = getattr(ns, f.dest)
        mock = f.mock or f.name
        if f.kind == "switch" and value:
            out.append(mock)
        elif f.kind == "bool" and value is not None:
            out.append(mock if value else "--no-" + mock[2:])
        elif f.kind == "list" and value:
            values = [str(v) for v in value]
            out += [a for v in values for a in (mock, v)] if f.repeat else [mock, *values]
        elif f.kind == "value" and value is not None:
            out += [mock, str(value)]
    return [*out, *MOCK_KNOBS]
