"""`GET /metrics`: the engine's counters in vLLM's Prometheus names and text format.

Rollout code and routers read a vLLM's load and outcomes here (running, waiting, finished by
reason). The numbers are the ones `/mock/stats` reports, so the two never disagree; the names,
help texts and label order are vLLM's (`vllm/v1/metrics/loggers.py`: model_name, engine, then
finished_reason), in the text exposition format prometheus_client writes.
"""

from __future__ import annotations

from typing import Any

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
FINISHED_REASONS = ("stop", "length", "abort")


def _labels(**labels: str) -> str:
    def escape(value: str) -> str:
        return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')

    return ",".join(f'{name}="{escape(value)}"' for name, value in labels.items())


def _family(name: str, kind: str, help_text: str, samples: list[tuple[str, float]]) -> list[str]:
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
    lines += [f"{name}{{{labels}}} {float(value)!r}" for labels, value in samples]
    return lines


def prometheus_text(stats: dict[str, Any], model_name: str, engine: str = "0") -> str:
    """The `/metrics` body for one engine's `stats()`."""
    base = {"model_name": model_name, "engine": engine}
    waiting = int(stats["queued"])
    running = int(stats["in_flight"]) - waiting  # in flight counts the queued ones too
    finished: dict[str, int] = {reason: 0 for reason in FINISHED_REASONS}
    finished.update(stats["finished"])
    lines = _family(
        "vllm:num_requests_running",
        "gauge",
        "Number of requests in model execution batches.",
        [(_labels(**base), running)],
    )
    lines += _family(
        "vllm:num_requests_waiting",
        "gauge",
        "Number of requests waiting to be processed.",
        [(_labels(**base), waiting)],
    )
    lines += _family(
        "vllm:request_success_total",
        "counter",
        "Count of successfully processed requests.",
        [(_labels(**base, finished_reason=r), n) for r, n in finished.items()],
    )
    return "\n".join(lines) + "\n"
