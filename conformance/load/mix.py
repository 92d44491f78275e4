"""The workload file (`workload.toml`, or `--workload FILE`) and the requests it draws.

A `Mix` is the file's numbers; `Mix.draw` turns them into one `Plan`: the body to send, and
what the client does while it runs (abort it, hang up, pin a rank). What the server learned in
the probe (`Facts`) bounds every draw: n, logprobs, the context, whether aborts, the legacy
path and data parallelism are served.
"""

from __future__ import annotations

import random
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT = Path(__file__).with_name("workload.toml")
ABORT_PROMPT = [21, 22, 23, 24, 25, 26, 27, 28]
"""The one prompt aborted requests use: one request shape, whose fastest completion bounds
when an abort provably reached it (`conformance.inflight.proof`)."""


def read(path: Path | None = None) -> dict[str, Any]:
    """The default file, with `path`'s tables laid over it key by key."""
    data = tomllib.loads(DEFAULT.read_text())
    if path is not None:
        for table, values in tomllib.loads(Path(path).read_text()).items():
            if table not in data or not isinstance(values, dict):
                raise ValueError(f"{path}: unknown table [{table}] (known: {sorted(data)})")
            unknown = sorted(set(values) - set(data[table]))
            if unknown:
                raise ValueError(f"{path}: [{table}] has unknown keys {unknown}")
            data[table].update(values)
    return data


@dataclass(frozen=True)
class Facts:
    """What the master's probe learned, as workers need it (sent to them as a dict)."""

    dev_mode: bool = False
    abort: bool = True
    legacy_abort: bool = False
    dp_size: int | None = None
    max_model_len: int | None = None
    max_n: int | None = None
    max_logprobs: int | None = None
    ttft_s: float | None = None
    itl_s: float | None = None
    pause: bool = False
    label: str = "default"
    engine_state: bool = False

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def of(cls, data: dict[str, Any]) -> Facts:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


@dataclass
class Plan:
    """One request to send and what the client does while it runs."""

    body: dict[str, Any]
    stream: bool
    abort: str | None = None  # None, "abort" (/inference/v1/abort_requests) or "legacy"
    after_tokens: int = 1
    hang_up: int | None = None  # streamed: hang up after this many tokens
    rank: int | None = None  # X-data-parallel-rank
    repeat_of: str | None = None  # the key of the seeded request this one repeats
    original_max: int | None = None  # a resubmission: its first request's max_tokens
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def max_tokens(self) -> int:
        return int(self.body["sampling_params"]["max_tokens"])

    @property
    def prompt(self) -> list[int]:
        return list(self.body["token_ids"])


def _range(rng: random.Random, pair: list[int]) -> int:
    return rng.randint(int(pair[0]), int(pair[1]))


@dataclass
class Mix:
    data: dict[str, Any]
    facts: Facts

    def draw(self, rng: random.Random, seeded: list[tuple[str, dict[str, Any], bool]]) -> Plan:
        """One plan; `seeded` are earlier seeded requests (key, body, streamed) to repeat."""
        req, aborts, dp = self.data["requests"], self.data["aborts"], self.data["data_parallel"]
        rank = None
        if (self.facts.dp_size or 1) > 1 and rng.random() < float(dp["pinned"]):
            rank = rng.randrange(int(self.facts.dp_size or 1))
        if seeded and rng.random() < float(req["repeat"]):
            key, earlier, streamed = rng.choice(seeded)
            again = (not streamed) if rng.random() < 0.7 else streamed
            return Plan(dict(earlier), again, rank=rank, repeat_of=key)
        if self.facts.abort and rng.random() < float(aborts["share"]):
            path = (
                "legacy" if self.facts.legacy_abort and rng.random() < aborts["legacy"] else "abort"
            )
            held: dict[str, Any] = {
                "max_tokens": self._cap(int(aborts["max_tokens"]), len(ABORT_PROMPT)),
                "temperature": 0,
                "ignore_eos": True,
            }
            return Plan(
                {"token_ids": list(ABORT_PROMPT), "sampling_params": held},
                stream=rng.random() < 0.5,
                abort=path,
                after_tokens=_range(rng, aborts["after_tokens"]),
                rank=rank,
            )
        prompt = [rng.randrange(10, 1000) for _ in range(_range(rng, req["prompt_len"]))]
        if rng.random() < float(req["long"]) and self.facts.max_model_len:
            room = self.facts.max_model_len - len(prompt)
            tokens = max(1, min(int(room * float(req["long_of_room"])), int(req["long_cap"])))
        else:
            tokens = _range(rng, req["max_tokens"])
        params: dict[str, Any] = {
            "max_tokens": self._cap(tokens, len(prompt)),
            "temperature": rng.choice(req["temperature"]),
        }
        n = int(rng.choice(req["n"]))
        if self.facts.max_n is not None:
            n = max(1, min(n, self.facts.max_n))
        if n > 1:
            params["n"] = n
            params["temperature"] = max(float(params["temperature"]), 1.0)
        if rng.random() < float(req["logprobs"]):
            k = int(rng.choice(req["top_k"]))
            params["logprobs"] = (
                k if self.facts.max_logprobs is None else min(k, self.facts.max_logprobs)
            )
        if rng.random() < float(req["prompt_logprobs"]):
            params["prompt_logprobs"] = 0
        if rng.random() < float(req["stop_token_ids"]):
            params["stop_token_ids"] = sorted(rng.sample(range(10, 60), 2))
        if rng.random() < float(req["seed"]):
            params["seed"] = rng.randrange(1 << 30)
        stream = rng.random() < float(req["stream"])
        body: dict[str, Any] = {"token_ids": prompt, "sampling_params": params}
        if stream and rng.random() < float(req["include_usage"]):
            body["stream_options"] = {"include_usage": True}
        plan = Plan(body, stream, rank=rank)
        if rng.random() < float(aborts["hang_up"]) and stream and params["max_tokens"] > 2:
            # long enough to be still running when the engines are read after the hang-up
            params["max_tokens"] = self._cap(int(aborts["max_tokens"]), len(prompt))
            params["ignore_eos"] = True
            plan.hang_up = 1
        return plan

    def _cap(self, tokens: int, prompt_len: int) -> int:
        """`tokens`, within the room the context leaves after the prompt."""
        if self.facts.max_model_len:
            tokens = min(tokens, self.facts.max_model_len - prompt_len)
        return max(1, tokens)

    @property
    def cycle_every_s(self) -> float:
        return float(self.data["cycles"]["every_s"])

    @property
    def pause_mode(self) -> str:
        return str(self.data["cycles"]["pause_mode"])

    @property
    def resubmit(self) -> bool:
        return bool(self.data["cycles"]["resubmit"])

    @property
    def retry_paused_s(self) -> float:
        return float(self.data["cycles"]["retry_paused_s"])


def resubmission(plan: Plan, got: list[int]) -> Plan | None:
    """What a rollout client sends after `plan` came back "abort" with `got` tokens: the
    prompt and those tokens, for the rest of the tokens (None: nothing left to generate)."""
    original = plan.original_max or plan.max_tokens
    left = plan.max_tokens - len(got)
    if left <= 0:
        return None
    params = dict(plan.body["sampling_params"], max_tokens=left)
    params.pop("seed", None)  # a resumed seed would not continue the same draw
    body = dict(plan.body, token_ids=plan.prompt + list(got), sampling_params=params)
    body.pop("request_id", None)
    return Plan(body, plan.stream, rank=plan.rank, original_max=original)
