"""Command-line flags of `tito-mock`, with `vllm serve`'s names and meanings."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from mock_server.behaviour.defects import DEFECTS, catalogue_text
from mock_server.behaviour.policies import Policies
from mock_server.behaviour.policies import build as build_policies
from mock_server.behaviour.releases import DEFAULT, RELEASES, Release, release_of

DEFAULT_VOCAB = 151936
MIN_VOCAB = 512
DEFAULT_MAX_BODY = 16 * 1024 * 1024


@dataclass(frozen=True)
class FastPaths:
    """The mock's shortcuts, each answering byte for byte what its general path answers; on
    by default, and turned off (per app, never a flag) by the tests that compare the two."""

    generate: bool = True  # a plain body's parse, a non-streamed run without events, its body
    direct: bool = True  # POST generate taken past Starlette's routing (`serve.direct`)
    templates: bool = True  # stream chunks written into bytes rendered once per choice


GENERAL = FastPaths(generate=False, direct=False, templates=False)
"""Every general path: what the tests compare the fast paths with."""


@dataclass(frozen=True)
class MockConfig:
    host: str = "127.0.0.1"
    port: int = 8000
    enable_scale_out: bool = False
    tokens_only: bool = False
    skip_tokenizer_init: bool = False
    api_keys: tuple[str, ...] = ()
    served_model_name: tuple[str, ...] = ("mock-model",)
    max_model_len: int = 4096
    max_num_seqs: int = 256
    max_logprobs: int = 20
    data_parallel_size: int = 1
    return_tokens_as_token_ids: bool = False
    enable_return_routed_experts: bool = False
    return_sampling_mask: bool = False
    seed: int = 0
    dev_mode: bool = False
    mock_ttft_ms: float = 0.0
    mock_itl_ms: float = 0.0
    mock_vocab_size: int = DEFAULT_VOCAB
    mock_logprobs_format: str = "integer"
    mock_max_body_bytes: int = DEFAULT_MAX_BODY
    defects: frozenset[str] = field(default_factory=frozenset)
    release: Release = DEFAULT  # --mock-vllm-version: the vLLM release whose wire it speaks
    fast: FastPaths = FastPaths()  # not a flag: tests turn the shortcuts off on their app
    policies: Policies = field(init=False, repr=False, compare=False)
    """Each stage's behaviour, bent by the defects' policies: made once, here."""

    def __post_init__(self) -> None:
        policies = build_policies(self.defects)
        rules = self.release.rules(policies.validate.rules)
        if rules != policies.validate.rules:  # the release's own validate table
            policies = replace(policies, validate=replace(policies.validate, rules=rules))
        object.__setattr__(self, "policies", policies)
        if self.release.logprobs_format == "legacy":  # the release knows no other shape
            object.__setattr__(self, "mock_logprobs_format", "legacy")

    def has_defect(self, name: str) -> bool:
        if name not in DEFECTS:  # a typo in the code must not silently disable a defect
            raise KeyError(name)
        return name in self.defects

    @property
    def scale_out(self) -> bool:
        """Generate, abort, render and derender are registered."""
        return self.enable_scale_out or self.tokens_only

    @property
    def has_tokenizer(self) -> bool:
        return not (self.tokens_only or self.skip_tokenizer_init)

    @property
    def model_name(self) -> str:
        return self.served_model_name[0]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tito-mock",
        description="Deterministic CPU mock of vLLM's Tokens In <> Tokens Out API.",
        allow_abbrev=False,
    )
    p.add_argument("model_tag", nargs="?", help="ignored (vllm serve's positional model)")
    p.add_argument("--model", help="ignored; used as served model name if none is given")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--enable-scale-out", action=argparse.BooleanOptionalAction, default=False)
    p.add_argument("--tokens-only", action="store_true")
    p.add_argument("--skip-tokenizer-init", action="store_true")
    p.add_argument("--api-key", action="append", default=[])
    p.add_argument("--served-model-name", nargs="+")
    p.add_argument("--max-model-len", type=int, default=4096)
    p.add_argument("--max-num-seqs", type=int, default=256)
    p.add_argument("--max-logprobs", type=int, default=20)
    p.add_argument("--data-parallel-size", "-dp", type=int, default=1)
    p.add_argument("--return-tokens-as-token-ids", action="store_true")
    p.add_argument("--enable-return-routed-experts", action="store_true")
    p.add_argument("--return-sampling-mask", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", help="ignored")
    p.add_argument("--enforce-eager", action="store_true", help="ignored")
    p.add_argument("--mock-ttft-ms", type=float, default=0.0)
    p.add_argument("--mock-itl-ms", type=float, default=0.0)
    p.add_argument("--mock-vocab-size", type=int, default=DEFAULT_VOCAB)
    p.add_argument("--mock-logprobs-format", choices=("integer", "legacy"), default=None)
    p.add_argument(
        "--mock-vllm-version",
        default=DEFAULT.short,
        metavar="{" + ",".join(RELEASES) + "}",
        help="answer as this vLLM release does (routes, keys, logprob shape); also 0.30.0 etc.",
    )
    p.add_argument("--mock-max-body-bytes", type=int, default=DEFAULT_MAX_BODY)
    p.add_argument("--mock-defect", action="append", default=[], metavar="NAME")
    return p


def parse_args(
    argv: list[str] | None = None, environ: Mapping[str, str] | None = None
) -> MockConfig:
    """Parse flags; `--mock-defect list` prints the catalogue and exits 0; bad flags exit 2."""
    import os

    env = os.environ if environ is None else environ
    parser = _parser()
    ns = parser.parse_args(argv)
    if "list" in ns.mock_defect:
        print(catalogue_text())
        sys.exit(0)
    unknown = [d for d in ns.mock_defect if d not in DEFECTS]
    if unknown:
        parser.error(f"unknown --mock-defect {', '.join(unknown)} (see --mock-defect list)")
    try:
        release = release_of(ns.mock_vllm_version)
    except KeyError:
        parser.error(f"--mock-vllm-version must be one of {', '.join(RELEASES)}")
    logprobs_format = ns.mock_logprobs_format or release.logprobs_format
    if release.logprobs_format == "legacy" and logprobs_format != "legacy":
        parser.error(f"vLLM {release.version} only sends legacy logprobs (--mock-logprobs-format)")
    if ns.mock_vocab_size < MIN_VOCAB:
        parser.error(f"--mock-vocab-size must be at least {MIN_VOCAB}")
    for flag, value in (
        ("--max-model-len", ns.max_model_len),
        ("--max-num-seqs", ns.max_num_seqs),
        ("--data-parallel-size", ns.data_parallel_size),
    ):
        if value < 1:
            parser.error(f"{flag} must be at least 1")
    keys = list(ns.api_key)
    if not keys and env.get("VLLM_API_KEY"):
        keys = [env["VLLM_API_KEY"]]
    names = tuple(ns.served_model_name or [ns.model or ns.model_tag or "mock-model"])
    return MockConfig(
        host=ns.host,
        port=ns.port,
        enable_scale_out=ns.enable_scale_out,
        tokens_only=ns.tokens_only,
        skip_tokenizer_init=ns.skip_tokenizer_init or ns.tokens_only,
        api_keys=tuple(keys),
        served_model_name=names,
        max_model_len=ns.max_model_len,
        max_num_seqs=ns.max_num_seqs,
        max_logprobs=ns.max_logprobs,
        data_parallel_size=ns.data_parallel_size,
        return_tokens_as_token_ids=ns.return_tokens_as_token_ids,
        enable_return_routed_experts=ns.enable_return_routed_experts,
        return_sampling_mask=ns.return_sampling_mask,
        seed=ns.seed,
        dev_mode=env.get("VLLM_SERVER_DEV_MODE", "0") == "1",
        mock_ttft_ms=ns.mock_ttft_ms,
        mock_itl_ms=ns.mock_itl_ms,
        mock_vocab_size=ns.mock_vocab_size,
        mock_logprobs_format=logprobs_format,
        mock_max_body_bytes=ns.mock_max_body_bytes,
        defects=frozenset(ns.mock_defect),
        release=release,
    )
