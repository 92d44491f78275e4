"""vLLM's own API server over the simulated engine core: `python serve.py [api_server args]`.

Run by a release's interpreter, by path (the release's environment does not have the kit):
patches the three internal interfaces below, then runs `vllm.entrypoints.openai.api_server`
as `python -m` would, so argument parsing, `VllmConfig`, `AsyncLLM` with its input and output
processors, the app, its routers, error mapping, SSE framing and uvicorn are the release's.

- `EngineCoreClient.make_async_mp_client` returns `simcore.SimulatedCore` (no engine process);
- `Executor.get_class` returns the abstract `Executor` (no worker module is imported);
- from 0.34, `CpuPlatform.check_and_update_config` refuses x86 without triton-cpu: while it
  runs, `vllm.triton_utils.HAS_TRITON` reads true (no kernel is ever compiled).

`--check` applies the patches, prints what was patched and exits: the per-release smoke check.
An interface that moved is named in one line and the exit status is 3, not a traceback.
"""

from __future__ import annotations

import functools
import inspect
import os
import runpy
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

PATCH_FAILED = 3
ENTRY = "vllm.entrypoints.openai.api_server"


class PatchError(RuntimeError):
    """An internal interface of this release is not where the simulated core expects it."""


def _resolve(module: str, qualname: str) -> tuple[Any, str, Any]:
    """(owner, attribute, current value) of `module.qualname`, or a PatchError naming it."""
    where = f"{module}.{qualname}"
    try:
        owner: Any = __import__(module, fromlist=["_"])
        *path, attr = qualname.split(".")
        for part in path:
            owner = getattr(owner, part)
        return owner, attr, inspect.getattr_static(owner, attr)
    except (ImportError, AttributeError) as exc:
        raise PatchError(f"{where}: {type(exc).__name__}: {exc}") from exc


def _params(func: Any) -> list[str]:
    return list(inspect.signature(getattr(func, "__func__", func)).parameters)


def patch_engine_client() -> str:
    from simcore import SimulatedCore

    owner, attr, current = _resolve(
        "vllm.v1.engine.core_client", "EngineCoreClient.make_async_mp_client"
    )
    if not isinstance(current, staticmethod) or "vllm_config" not in _params(current):
        raise PatchError(
            "vllm.v1.engine.core_client.EngineCoreClient.make_async_mp_client: "
            f"expected a staticmethod taking vllm_config, found {current!r}"
        )

    def make_async_mp_client(*args: Any, **kwargs: Any) -> SimulatedCore:
        config: Any = kwargs.get("vllm_config", args[0] if args else None)
        if config.parallel_config.data_parallel_size > 1:
            raise PatchError("the simulated core plays one engine: no --data-parallel-size")
        return SimulatedCore(config)

    setattr(owner, attr, staticmethod(make_async_mp_client))
    return "EngineCoreClient.make_async_mp_client -> SimulatedCore"


def patch_executor() -> str:
    owner, attr, current = _resolve("vllm.v1.executor.abstract", "Executor.get_class")
    if not isinstance(current, (staticmethod, classmethod)):
        raise PatchError(f"vllm.v1.executor.abstract.Executor.get_class: found {current!r}")
    setattr(owner, attr, staticmethod(lambda *_, **__: owner))
    return "Executor.get_class -> Executor (no worker imported)"


def patch_cpu_platform() -> str:
    owner, attr, current = _resolve("vllm.platforms.cpu", "CpuPlatform.check_and_update_config")
    func: Callable[..., Any] = current.__func__
    if "requires Triton" not in inspect.getsource(func):
        return "CpuPlatform.check_and_update_config: left as is (no triton-cpu refusal)"
    triton_utils: Any = __import__("vllm.triton_utils", fromlist=["_"])

    @functools.wraps(func)
    def check_and_update_config(cls: type, vllm_config: Any) -> None:
        had = triton_utils.HAS_TRITON
        triton_utils.HAS_TRITON = True
        try:
            func(cls, vllm_config)
        finally:
            triton_utils.HAS_TRITON = had

    setattr(owner, attr, classmethod(check_and_update_config))
    return "CpuPlatform.check_and_update_config: triton-cpu refusal lifted while it runs"


def apply() -> list[str]:
    """Every patch, in order; the first interface that moved raises PatchError."""
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    done = [patch_executor(), patch_engine_client(), patch_cpu_platform()]
    platform = __import__("vllm.platforms", fromlist=["_"]).current_platform
    if not platform.is_cpu():
        raise PatchError(f"vllm.platforms.current_platform is {platform!r}, not the CPU platform")
    return done


def main() -> int:
    version = metadata.version("vllm")
    try:
        done = apply()
    except PatchError as exc:
        print(f"simulated core: cannot patch vLLM {version}: {exc}", file=sys.stderr)
        return PATCH_FAILED
    for line in done:
        print(f"simulated core (vLLM {version}): {line}", flush=True)
    if sys.argv[1:] == ["--check"]:
        return 0
    sys.argv[0] = ENTRY
    runpy.run_module(ENTRY, run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
