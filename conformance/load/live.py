"""The live line a load-tester watches (requests, tokens/s, in flight, violations by
requirement), and the summary printed at the end."""

from __future__ import annotations

import sys
import time
from typing import Any

from conformance.load.tally import Tally
from conformance.reporting.progress import Progress

PLAIN_EVERY_S = 5.0
"""Off a terminal (a CI log), the line is printed as a plain line this often."""


class Live:
    def __init__(self) -> None:
        self.progress = Progress("load")
        self.last = 0.0
        self.began = time.monotonic()

    def line(self, tally: Tally, workers: dict[str, dict[str, Any]]) -> str:
        at = tally.at()
        requests, tokens = tally.total("requests"), tally.total("tokens")
        flight = sum(int(w.get("in_flight") or 0) for w in workers.values())
        bad = ", ".join(f"{k} {v}" for k, v in sorted(tally.violations.items())) or "none"
        return (
            f"[{at:6.1f} s] requests {requests} ({tally.rate():.1f}/s), tokens/s "
            f"{tokens / max(at, 1e-9):.0f}, in flight {flight}, violations: {bad}"
        )

    def update(self, tally: Tally, workers: dict[str, dict[str, Any]]) -> None:
        text = self.line(tally, workers)
        if self.progress.on:
            self.progress.update(text)
        elif time.monotonic() - self.last >= PLAIN_EVERY_S:
            self.last = time.monotonic()
            print(f"load {text}", file=sys.stderr, flush=True)

    def clear(self) -> None:
        self.progress.clear()

    @staticmethod
    def summary(data: dict[str, Any]) -> str:
        f = data["figures"]
        lines = [
            f"tito-conformance load: {data['server']['base_url']}, {data['duration_s']:.1f} s, "
            f"{data['config']['concurrency']} users on {data['config']['workers']} worker(s)",
            f"   {f['requests']} requests ({f['requests_per_s']}/s), {f['tokens']} tokens "
            f"({f['tokens_per_s']}/s), errors {f['errors']}, lost {f['lost']}, aborts "
            f"{f['aborts']}, resubmitted {f['resubmitted']}",
            f"   ttft p50 {f['ttft_s'].get('p50')} s p99 {f['ttft_s'].get('p99')} s, e2e p50 "
            f"{f['e2e_s'].get('p50')} s p99 {f['e2e_s'].get('p99')} s",
        ]
        for row in data["requirements"]:
            mark = {"pass": "ok  ", "fail": "FAIL", "warn": "warn", "skip": "skip"}[row["status"]]
            extra = f", {row['unproven']} unproven" if row["unproven"] else ""
            lines.append(
                f"   {mark} {row['id']:<17} {row['violations']}/{row['judged']} violated{extra}"
            )
            first = row["first_violation"]
            if first:
                lines.append(
                    f"        first at {first['at_s']} s ({first['in_flight']} in flight, "
                    f"{first['rate']}/s): {first['message'][:300]}"
                )
        lines.append(f"   {data['verdict']} (exit {data['exit_code']})")
        for error in data["harness_errors"]:
            lines.append(f"   harness: {error}")
        return "\n".join(lines)
