"""The HTML page of a load run, drawn from its JSON report: throughput and latency over time
with the pause and label marks, latency histograms, violations over time, and the verdicts.

Plots are matplotlib figures (the Agg backend: no display) inlined as SVG, so the page is one
file with no script and no network.
"""

from __future__ import annotations

import html
import io
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

MARK_COLOURS = {"pause": "tab:red", "label": "tab:purple", "resume": "tab:green"}


def _svg(fig: Any) -> str:
    out = io.StringIO()
    fig.savefig(out, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = out.getvalue()
    return text[text.index("<svg") :]


def _marks(ax: Any, marks: list[dict[str, Any]]) -> None:
    seen = set()
    for mark in marks:
        what = mark["what"]
        ax.axvline(
            mark["at_s"],
            color=MARK_COLOURS.get(what, "grey"),
            linestyle=":",
            linewidth=1,
            label=what if what not in seen else None,
        )
        seen.add(what)


def _over_time(data: dict[str, Any]) -> tuple[str, str, str]:
    rows, marks = data["timeline"], data["marks"]
    seconds = [r["second"] for r in rows]
    fig, ax = plt.subplots(figsize=(9, 3))
    ax.plot(seconds, [r["requests"] for r in rows], label="requests/s")
    ax2 = ax.twinx()
    ax2.plot(seconds, [r["tokens"] for r in rows], color="tab:orange", label="tokens/s")
    ax2.set_ylabel("tokens/s")
    _marks(ax, marks)
    ax.set_xlabel("s since start")
    ax.set_ylabel("requests/s")
    ax.set_title("Throughput over time")
    ax.legend(loc="upper left", fontsize="small")
    throughput = _svg(fig)

    fig, ax = plt.subplots(figsize=(9, 3))
    for key, name in (("e2e_p50", "end-to-end p50"), ("e2e_p95", "end-to-end p95")):
        ax.plot(seconds, [r.get(key) for r in rows], label=name)
    ax.plot(seconds, [r.get("ttft_p50") for r in rows], label="TTFT p50")
    _marks(ax, marks)
    ax.set_xlabel("s since start")
    ax.set_ylabel("s")
    ax.set_title("Latency over time")
    ax.legend(loc="upper left", fontsize="small")
    latency = _svg(fig)

    fig, ax = plt.subplots(figsize=(9, 3))
    ids = sorted({k for r in rows for k in r["violations_by"]})
    bottom = [0] * len(rows)
    for rid in ids:
        values = [r["violations_by"].get(rid, 0) for r in rows]
        ax.bar(seconds, values, bottom=bottom, label=rid)
        bottom = [a + b for a, b in zip(bottom, values, strict=True)]
    _marks(ax, marks)
    ax.set_xlabel("s since start")
    ax.set_ylabel("violations")
    ax.set_title("Violations over time" + ("" if ids else " (none)"))
    if ids:
        ax.legend(loc="upper left", fontsize="small")
    violations = _svg(fig)
    return throughput, latency, violations


def _histograms(data: dict[str, Any]) -> str:
    fig, axes = plt.subplots(1, 3, figsize=(12, 3))
    for ax, (key, name) in zip(
        axes, (("ttft_s", "TTFT"), ("itl_s", "inter-token"), ("e2e_s", "end-to-end")), strict=True
    ):
        hist = data["histograms"].get(key) or {"edges": [], "counts": []}
        if hist["counts"]:
            edges = hist["edges"]
            ax.stairs(hist["counts"], edges, fill=True)
        ax.set_title(f"{name} latency (s)")
        ax.set_ylabel("requests" if key != "itl_s" else "gaps")
    return _svg(fig)


def render(data: dict[str, Any]) -> str:
    throughput, latency, violations = _over_time(data)
    f = data["figures"]
    rows = []
    for row in data["requirements"]:
        first = row["first_violation"] or {}
        detail = ""
        if first:
            detail = (
                f"<details><summary>first at {first['at_s']} s, {first['in_flight']} in flight"
                f"</summary><p>{html.escape(first['message'])}</p>"
                f"<pre>{html.escape(first['reproducer'])}</pre></details>"
            )
        rows.append(
            f"<tr class='{row['status']}'><td>{row['id']}</td><td>{row['level']}</td>"
            f"<td>{row['status']}</td><td>{row['violations']} / {row['judged']}</td>"
            f"<td>{row['unproven']}</td><td>{html.escape(row['title'])}{detail}</td></tr>"
        )
    plots = [
        ("throughput", throughput),
        ("latency", latency),
        ("histograms", _histograms(data)),
        ("violations", violations),
    ]
    figures = "\n".join(
        f"<figure class='plot' id='plot-{name}' data-plot='{name}'>{svg}</figure>"
        for name, svg in plots
    )
    server = html.escape(data["server"]["base_url"])
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>TITO load: {server}</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #ccc; padding: 2px 6px; }}
tr.fail td {{ background: #fdd; }} tr.warn td {{ background: #ffd; }}
figure.plot svg {{ max-width: 100%; height: auto; }}
</style></head><body>
<h1>TITO conformance under load: {server}</h1>
<p id="verdict">{data["verdict"]} (exit {data["exit_code"]}): {f["requests"]} requests,
{f["tokens"]} tokens in {data["duration_s"]} s ({f["requests_per_s"]} requests/s,
{f["tokens_per_s"]} tokens/s), {data["config"]["concurrency"]} users on
{data["config"]["workers"]} worker(s); errors {f["errors"]}, lost {f["lost"]}.</p>
{figures}
<h2>Requirements</h2>
<table id="requirements"><tr><th>ID</th><th>level</th><th>status</th><th>violations / judged</th>
<th>unproven</th><th>title</th></tr>
{"".join(rows)}
</table>
</body></html>
"""


def write(data: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(data))
