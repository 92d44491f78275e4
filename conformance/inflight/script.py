"""The reproducer of an in-flight failure: a short POSIX shell script (curl, grep, awk, sleep)
that sends the same request, waits for the same point (its first token, or the same delay),
takes the same action (an abort by the id the server returned, a label change, a hang-up)
and prints what the server answered, each part under a `### NAME` line
(`verdicts.reproducer.sections`). The key stays `$TITO_API_KEY` (`Exchange.curl`).

Scripts poll with fractional `sleep` (GNU and BSD sleep take it; POSIX only promises whole
seconds)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import replace

from conformance.inflight.timeline import Timeline
from conformance.wire.exchange import Exchange, dumps

POLL_S = 0.01
TOKEN = r'"token_ids": *\[ *[0-9]'
"""grep's pattern of an event that carries a token (the kit acts once the first one came)."""
NAMED = r'"request_id": *"[^"]*"'


def _head(what: str) -> list[str]:
    return [
        "#!/bin/sh",
        f"# Reproduces: {' '.join(what.split())}",
        "# Needs curl, grep, awk; export TITO_API_KEY where the server wants a key.",
        'out=$(mktemp) || exit 1; stop="$out.stop"',
        'trap \'touch "$stop"; rm -f "$out" "$stop"\' EXIT',
    ]


def _quoted(text: str) -> str:
    """`text` inside double quotes, where only `$ids` is to expand."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`")
    return '"' + escaped.replace("$", "\\$").replace("\\$ids", "$ids") + '"'


def curl(exchange: Exchange, data: str | None = None, *extra: str) -> str:
    """`exchange`'s curl, with `data` (already quoted for the shell) as its body if given."""
    base = replace(exchange, body=None) if data is not None else exchange
    parts = [base.curl(), *extra]
    if data is not None:
        parts += ["--data-binary", data]
    return " ".join(parts)


def _action(action: Exchange) -> tuple[list[str], str]:
    """How the script sends `action`: an abort names the id the server returned (`$id`, with
    and without the documented prefix, as the kit's `ids_for`); any other is sent as it was."""
    try:
        body = json.loads(action.body or b"null")
    except ValueError:
        body = None
    if not isinstance(body, dict) or "request_ids" not in body:
        return [], curl(action)
    ids = [
        "bare=${id#generate-tokens-}",
        'if [ "$id" = "generate-tokens-$bare" ]; then ids="\\"$id\\",\\"$bare\\""',
        'else ids="\\"$id\\",\\"generate-tokens-$bare\\",\\"$bare\\""; fi',
    ]
    template = dumps({**body, "request_ids": "@IDS@"}).decode().replace('"@IDS@"', "[$ids]")
    return ids, curl(action, _quoted(template))


def _blockers(request: Exchange, count: int) -> list[str]:
    """`count` non-streamed requests of the same shape, each sent again once answered, until
    the script ends: the kit held the request in the server's queue behind them."""
    if count <= 0 or request.body is None:
        return []
    body = json.loads(request.body)
    body.pop("request_id", None)
    body["stream"] = False
    blocker = replace(
        request,
        body=dumps(body),
        stream=False,
        headers={k: v for k, v in request.headers.items() if k.lower() != "x-request-id"},
    )
    loop = f'while [ ! -e "$stop" ]; do {curl(blocker)} >/dev/null 2>&1; done &'
    return [
        f"# the kit held the request in the queue behind {count} of the same shape",
        f"i=0; while [ $i -lt {count} ]; do {loop} i=$((i + 1)); done",
        "sleep 0.05",
    ]


def stream_action(
    what: str,
    request: Exchange,
    action: Exchange,
    *,
    early: bool = False,
    blockers: int = 0,
    then: Sequence[Exchange] = (),
    evidence: str = "",
) -> str:
    """Stream `request`; once its first token came (`early`: once the server accepted it, and
    again until it ends), send `action` by the id the server named; print both answers, then
    send `then` (the kit's clean-up: a label put back)."""
    named, send = _action(action)
    lines = _head(what) + _blockers(request, blockers)
    lines += [
        f'{curl(request)} >"$out" &',
        "req=$!",
        "# wait for the first event that carries a token: the kit acts then"
        if not early
        else "# queued behind others: act once the server accepted it, and until it ends",
        f'until grep -q {shlex.quote(TOKEN if not early else "data:")} "$out" 2>/dev/null'
        f' || ! kill -0 "$req" 2>/dev/null; do sleep {POLL_S}; done',
        f'id=$(grep -o {shlex.quote(NAMED)} "$out" | head -n 1 | cut -d \'"\' -f 4)',
        *named,
        'echo "### action (request id: $id)"',
        send,
        "echo",
    ]
    if early:
        lines += [f'while kill -0 "$req" 2>/dev/null; do {send} >/dev/null 2>&1; done']
    lines += ['wait "$req"', 'echo "### stream"', 'cat "$out"']
    for step in then:
        lines += ['echo "### then"', curl(step), "echo"]
    return _tail(lines, evidence)


def whole_action(
    what: str,
    request: Exchange,
    action: Exchange,
    own_id: str,
    *,
    delay_s: float,
    every_s: float,
    blockers: int = 0,
    evidence: str = "",
) -> str:
    """Send the non-streamed `request`; `delay_s` after, send `action` (by the request's own id,
    `own_id`: a whole answer names none before it ends) every `every_s` until the answer comes;
    print the first action's answer, how many went out, and the answer."""
    named, send = _action(action)
    lines = _head(what) + _blockers(request, blockers)
    lines += [
        f'{curl(request)} >"$out" &',
        "req=$!",
        f"id={shlex.quote(own_id)}",
        *named,
        f"sleep {delay_s:.3f}",
        "n=0",
        'while kill -0 "$req" 2>/dev/null; do',
        '  if [ "$n" -eq 0 ]; then echo "### action (request id: $id)"; '
        f"{send}; echo; else {send} >/dev/null 2>&1; fi",
        f"  n=$((n + 1)); sleep {every_s:.3f}",
        "done",
        'wait "$req"',
        'echo "### sent: the action $n time(s) while the request ran"',
        'echo "### answer"',
        'cat "$out"',
    ]
    return _tail(lines, evidence)


def hang_up(
    what: str,
    request: Exchange,
    engines: Sequence[str],
    *,
    wait_s: float | None,
    settle_s: float,
    evidence: str = "",
) -> str:
    """Send `request` and hang up: a stream after its first token (or `wait_s` after it was
    sent, inside a slow first-token wait), a non-streamed request `wait_s` after (curl's
    --max-time); then print what the engines count (`/metrics`: requests in flight, and the
    natural and aborted finishes since), read until a finish shows or `settle_s` passed."""
    urls = " ".join(shlex.quote(url.rstrip("/")) for url in engines)
    awk = (
        "/^vllm:num_requests_(running|waiting)[{ ]/ {r += $NF} "
        '/^vllm:request_success_total[{ ]/ {if ($0 ~ /finished_reason="abort"/) a += $NF; '
        'else if ($0 ~ /finished_reason="(stop|length)"/) f += $NF} '
        'END {printf "%d %d %d\\n", r, f, a}'
    )
    lines = _head(what) + [
        "# the engines' counters: in flight, natural finishes, aborts (summed over them)",
        f'counts() {{ for url in {urls}; do curl -sS "$url/metrics"; done'
        f" | awk {shlex.quote(awk)}; }}",
        "set -- $(counts); f0=$2; a0=$3",
    ]
    if request.stream:
        lines += [f'{curl(request)} >"$out" &', "req=$!"]
        if wait_s is not None:
            lines += [f"sleep {wait_s:.3f}"]
        else:
            lines += [
                "# hang up once the first event that carries a token came",
                f'until grep -q {shlex.quote(TOKEN)} "$out" 2>/dev/null'
                f' || ! kill -0 "$req" 2>/dev/null; do sleep {POLL_S}; done',
            ]
        lines += ['kill "$req" 2>/dev/null; wait "$req" 2>/dev/null']
    else:
        lines += [f'{curl(request, None, "--max-time", f"{wait_s or 0.005:.3f}")} >"$out" 2>&1']
    tries = max(1, round(settle_s / 0.1))
    lines += [
        'echo "### hung up: the client went away"',
        'cat "$out"',
        f"i=0; while [ $i -lt {tries} ]; do",
        '  set -- $(counts); if [ "$3" -gt "$a0" ] || [ "$2" -gt "$f0" ]; then break; fi',
        "  sleep 0.1; i=$((i + 1))",
        "done",
        'echo "### engines"',
        'printf \'{"in_flight": %s, "finished": %s, "aborted": %s}\\n\' '
        '"$1" $(($2 - f0)) $(($3 - a0))',
    ]
    return _tail(lines, evidence)


def _tail(lines: list[str], evidence: str) -> str:
    if evidence:
        lines.append(f"# evidence: {evidence}")
    return "\n".join(lines)


def of_line(what: str, line: Timeline, evidence: str = "", then: Sequence[Exchange] = ()) -> str:
    """The script of one attempt (`acting`'s timeline: its request, its first action, how it
    waited); empty when no action went out."""
    if line.exchange is None or line.action is None:
        return ""
    blockers = line.plan.blockers if line.plan is not None else 0
    if line.whole:
        return whole_action(
            what,
            line.exchange,
            line.action.exchange,
            f"generate-tokens-{line.request_id}",  # the documented id (GEN-RESP-004)
            delay_s=line.delay_s or 0.0,
            every_s=line.every_s or POLL_S,
            blockers=blockers,
            evidence=evidence,
        )
    return stream_action(
        what,
        line.exchange,
        line.action.exchange,
        early=line.early,
        blockers=blockers,
        then=then,
        evidence=evidence,
    )
