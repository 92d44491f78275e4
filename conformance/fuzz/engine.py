"""Drive schemathesis over every operation of the spec, positive then negative, then the
labelled out-of-vocabulary group and the stateful sequences, and gather distinct failures.

Generation is schemathesis's (`APIOperation.as_strategy`, hypothesis underneath, seeded);
the checks are schemathesis's plus ours (`checks.py`). A failing case does not stop its group:
each distinct failure is recorded once with its curl line, and the group runs to its budget.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import hypothesis
import hypothesis.errors
import schemathesis
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.core.failures import CustomFailure, Failure, FailureGroup

import openapi
from conformance.fuzz import generation, lax, sanitize
from conformance.fuzz import transport as wire
from conformance.fuzz.expectations import operations, request_schema, schemathesis_config, serving
from conformance.fuzz.findings import Finding, GroupStats, requirements_for
from conformance.fuzz.oracles import OUR_CHECKS, answer_problems, stream_payloads
from conformance.fuzz.settings import VLLM_MAX_LOGPROBS, FuzzConfig, ServerFacts
from conformance.inflight.proof import Fastest
from conformance.server.engine_state import EngineState
from conformance.wire import (
    IN_PROCESS_URL,
    UNRESPONSIVE_AFTER,
    Client,
    ServerBroke,
    Unsendable,
    auth_header,
)

Checker = Callable[[Any, Any, Any], Any]

_CHECK_OF_FAILURE = {
    "UndefinedStatusCode": "status_code_conformance",
    "JsonSchemaError": "response_schema_conformance",
    "MalformedJson": "response_schema_conformance",
    "DiscriminatorMismatch": "response_schema_conformance",
    "ContentDeserializationError": "response_schema_conformance",
    "UndefinedContentType": "content_type_conformance",
    "MissingContentType": "content_type_conformance",
    "MalformedMediaType": "content_type_conformance",
    "ServerError": "not_a_server_error",
    "ContentTypeServerError": "not_a_server_error",
    "AcceptedNegativeData": "negative_data_rejection",
    "RejectedPositiveData": "positive_data_acceptance",
    "ResponseTimeExceeded": "max_response_time",
    "MissingHeaders": "response_headers_conformance",
}


def builtin_checks() -> list[Checker]:
    from schemathesis.checks import max_response_time, not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        negative_data_rejection,
        positive_data_acceptance,
        response_schema_conformance,
        status_code_conformance,
    )

    return [
        not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_schema_conformance,
        negative_data_rejection,
        positive_data_acceptance,
        max_response_time,
    ]


def _resolve_checks_once(config: Any) -> None:
    """schemathesis resolves a case's checks configuration anew for every answer it judges,
    twice (the checks, then the documented response), merging the run's per-operation and
    per-phase layers at 0.34 ms a time: ~15 % of a folded-in fuzz's CPU. A run's
    configuration is fixed once built, so each (operation, phase) is resolved once."""
    resolve = config.checks_config_for
    resolved: dict[tuple[str | None, str | None], Any] = {}

    def checks_config_for(*, operation: Any = None, phase: str | None = None) -> Any:
        key = (None if operation is None else operation.label, phase)
        if key not in resolved:  # two threads may both resolve it: the same value
            resolved[key] = resolve(operation=operation, phase=phase)
        return resolved[key]

    config.checks_config_for = checks_config_for


MAX_SENDERS = 8


class ServerGone(Exception):
    """The server stopped answering; later groups cannot run."""


@dataclass
class Fuzzer:
    config: FuzzConfig
    facts: ServerFacts
    findings: dict[tuple[str, str, str, int | None], Finding] = field(default_factory=dict)
    stats: list[GroupStats] = field(default_factory=list)
    server_gone: str = ""
    unsendable: int = 0
    """Drawn cases no HTTP/1.1 client can send (a control character in a header): unjudged."""

    def __post_init__(self) -> None:
        cfg = self.config
        headers = dict(cfg.extra_headers)
        self.base_url = IN_PROCESS_URL if cfg.app is not None else cfg.base_url
        # Every case goes out through the kit's client; the fuzzer judges a timeout itself
        # (`transport_error`, then /health), so the client never stops sending on its own.
        self.client = Client(
            self.base_url, timeout=cfg.timeouts, app=cfg.app, stop_after=None, keep_log=False
        )
        self.client.ends = cfg.ends
        self.auth = auth_header(cfg.api_key)
        self.headers = headers
        st_config = schemathesis.Config.from_dict(
            schemathesis_config(
                self.facts,
                seed=cfg.seed,
                max_examples=cfg.max_examples,
                answer_budget_s=cfg.timeouts.answer,
                request_timeout_s=cfg.timeouts.request,
                headers=headers,
                base_url=self.base_url,
            )
        )
        self.schema = schemathesis.openapi.from_dict(
            copy.deepcopy(openapi.load_spec()), config=st_config
        )
        _resolve_checks_once(self.schema.config)
        self.checks: list[Checker] = [*builtin_checks(), *OUR_CHECKS]
        self._lock = threading.Lock()
        self._silent = 0  # cases in a row that got no answer in time (`transport_error`)
        self.fastest = Fastest()  # the abort sequence's bound (`proof.BOUND`)
        # whether the server still holds an aborted stream (`proof.ENGINE`, where it says)
        self.state = EngineState([self.client])

    # ---- sending -------------------------------------------------------------------------
    def call(self, case: Any) -> Any:
        """The server's answer to `case`, through the kit's client (`wire`); ServerGone once
        the run's deadline is near (`late`)."""
        if self.late():
            raise ServerGone(self.server_gone)
        return wire.send(self.client, case, self.headers)

    def late(self) -> bool:
        """Whether the run's deadline is less than a stream's budget away (`FuzzConfig.ends`):
        the fuzz stops there, so what it sent ends before the run's deadline cuts it."""
        ends = self.config.ends
        if ends is None or time.monotonic() < ends - self.config.timeouts.stream:
            return False
        if not self.server_gone:
            self.server_gone = "the run's deadline was near: the fuzz stopped"
        return True

    def senders(self) -> int:
        """How many cases go out at once: over HTTP, as many as the server runs side by side
        (its learned max_num_seqs, over the 4 choices a positive case may ask for; 8 when no
        limit was found), so none waits in its queue past the answer budget. In-process, one:
        the app has one event loop, and one case at a time keeps the answers in draw order."""
        if self.config.app is not None:
            return 1
        if self.config.senders is not None:
            return max(1, self.config.senders)
        max_n = self.facts.limits.max_n
        return MAX_SENDERS if max_n is None else max(1, min(MAX_SENDERS, max_n // 4))

    def close(self) -> None:
        self.client.close()

    def alive(self) -> bool:
        op = self.schema["/health"]["GET"]
        try:
            return bool(self.call(op.Case(headers=dict(self.auth))).status_code == 200)
        except ServerGone:
            raise
        except Exception:
            return False

    # ---- recording -----------------------------------------------------------------------
    def record(
        self,
        op_id: str,
        label: str,
        group: str,
        check: str,
        status: int | None,
        message: str,
        curl: str,
        index: int,
        stream: bool = False,
    ) -> None:
        if self.config.ends is not None and time.monotonic() >= self.config.ends:
            return  # an exchange the run's deadline may have cut is no evidence
        finding = Finding(
            operation=op_id,
            label=label,
            group=group,
            check=check,
            status=status,
            message=message.strip()[:1500],
            curl=curl,
            seed=self.config.seed,
            case_index=index,
            requirement_ids=requirements_for(check, op_id, group, status, self.facts, stream),
            stream=stream,
        )
        with self._lock:  # sequences may run side by side
            known = self.findings.get(finding.key)
            if known is None:
                self.findings[finding.key] = finding
            else:
                known.occurrences += 1

    def judge(
        self,
        op_id: str,
        group: str,
        case: Any,
        response: Any,
        index: int,
        checks: list[Checker] | None = None,
    ) -> None:
        """Run the checks on one answer and record each failure under its check."""
        with self._lock:
            self._silent = 0  # an answer came: the cases without one were not in a row
        stream = wants_stream(case)
        try:
            case.validate_response(response, checks=checks or self.checks, headers=self.headers)
        except FailureGroup as group_exc:
            curl = case.as_curl_command(headers=self.headers, base_url=self._base())
            for failure in group_exc.exceptions:
                self.record(
                    op_id,
                    case.operation.label,
                    group,
                    _check_name(failure),
                    response.status_code,
                    f"{_what_failed(failure, response, case)}\n"
                    f"Answer: {response.status_code} {_snippet(response)}",
                    curl,
                    index,
                    stream,
                )

    def transport_error(
        self, op_id: str, group: str, case: Any, exc: Exception, index: int
    ) -> None:
        """A case that got no answer (its finding); ServerGone once `UNRESPONSIVE_AFTER` cases
        in a row got none in time: a server whose /health answers while every case hangs would
        otherwise cost each remaining case its whole timeout."""
        self._unanswered(
            op_id,
            group,
            case,
            ("answer_budget", None),
            f"no answer within {self.config.request_timeout_s:g} s or the connection "
            f"broke: {type(exc).__name__}: {exc}",
            index,
        )
        with self._lock:
            self._silent = self._silent + 1 if getattr(exc, "timed_out", False) else 0
            silent = self._silent
        if silent >= UNRESPONSIVE_AFTER:
            raise ServerGone(
                f"the server stopped answering: {silent} cases in a row got no answer within "
                f"{self.config.request_timeout_s:g} s"
            )

    def server_exception(
        self, op_id: str, group: str, case: Any, exc: Exception, index: int
    ) -> None:
        """In-process, an unhandled exception of the app is what a 500 is over HTTP."""
        message = f"the app raised {type(exc).__name__}: {exc}"
        if isinstance(exc, ServerBroke):
            message = f"the app raised: {exc}"
        self._unanswered(op_id, group, case, ("not_a_server_error", 500), message, index)

    def _unanswered(
        self,
        op_id: str,
        group: str,
        case: Any,
        check: tuple[str, int | None],
        message: str,
        index: int,
    ) -> None:
        """A case that got no answer to judge: recorded under `check` (name, status)."""
        curl = case.as_curl_command(headers=self.headers, base_url=self._base())
        name, status = check
        stream = wants_stream(case)
        self.record(op_id, case.operation.label, group, name, status, message, curl, index, stream)

    def _base(self) -> str:
        return self.base_url

    # ---- groups --------------------------------------------------------------------------
    def run_group(
        self,
        op_id: str,
        group: str,
        strategy: st.SearchStrategy[Any],
        examples: int,
        on_case: Callable[[Any, int], None],
        side_by_side: bool = False,
    ) -> GroupStats:
        """Run `on_case` on each drawn case; `side_by_side`: a sequence that touches only its
        own requests, so its cases are drawn first and run `senders()` at a time."""
        stats = GroupStats(op_id, group)
        self.stats.append(stats)
        started = time.monotonic()
        later: list[Any] | None = [] if side_by_side and self.senders() > 1 else None

        def one(case: Any, index: int) -> None:
            try:
                on_case(case, index)
            except ServerGone as exc:  # not raised on: hypothesis would replay (shrink) it
                self.server_gone = str(exc)

        @generation.settings(examples)
        @hypothesis.seed(self.config.seed)
        @hypothesis.given(strategy)
        def body(case: Any) -> None:
            if self.server_gone or self.late():
                return
            stats.cases += 1
            if later is not None:
                later.append(case)
            else:
                one(case, stats.cases)

        try:
            with generation.pinned_draws():
                body()
        except hypothesis.errors.Unsatisfiable:
            stats.skipped = generation.UNSATISFIABLE
        if later:
            with ThreadPoolExecutor(self.senders(), thread_name_prefix="fuzz") as pool:
                for done in [pool.submit(one, c, i) for i, c in enumerate(later, 1)]:
                    done.result()
        stats.duration_s = round(time.monotonic() - started, 3)
        return stats

    def fuzz_operation(self, op_id: str, mode: GenerationMode) -> None:
        """Replay the operation's drawn cases (see `generation`), each bounded, then judged."""
        method, path, spec_op = operations()[op_id]
        op = self.schema[path][method]
        positive = mode is GenerationMode.POSITIVE
        group = "positive" if positive else "negative"
        # Security parameters change what is drawn only where a key is checked; a positive
        # case gets the right key from `prepare` whatever was drawn, so it can share the
        # neutral draw.
        security = not positive and self.facts.api_key_required and bool(spec_op.get("security"))
        stats = GroupStats(op_id, group)
        self.stats.append(stats)
        started = time.monotonic()
        drawn = generation.drawn(op_id, mode, security, self.config.seed, self.config.max_examples)
        stats.skipped = drawn.skipped
        cases = [self.prepare(op_id, generation.bound(raw, op), positive) for raw in drawn.cases]
        with ThreadPoolExecutor(self.senders(), thread_name_prefix="fuzz") as pool:
            sent = [pool.submit(self._answer, case) for case in cases]
            for case, answer in zip(cases, sent, strict=True):  # judged in draw order
                if self.server_gone:
                    break
                stats.cases += 1
                try:
                    self.send_and_judge(op_id, group, case, stats, answer=answer.result())
                except ServerGone as exc:
                    self.server_gone = str(exc)
            for future in sent:
                future.cancel()
        stats.duration_s = round(time.monotonic() - started, 3)

    def _answer(self, case: Any) -> Any:
        """The server's response to `case`, or the exception sending it raised."""
        if self.server_gone:
            return ServerGone(self.server_gone)
        try:
            return self.call(case)
        except Exception as exc:
            return exc

    def send_and_judge(
        self,
        op_id: str,
        group: str,
        case: Any,
        stats: GroupStats,
        checks: list[Checker] | None = None,
        answer: Any = None,
    ) -> None:
        """Send one case (unless its `answer`, a response or an exception, came already) and
        judge it (`checks`: instead of the usual set)."""
        index = stats.cases
        try:
            response = self.call(case) if answer is None else answer
            if isinstance(response, Exception):
                raise response
        except ServerGone:
            raise
        except Unsendable:  # never left the client: the server is not to blame
            with self._lock:
                self.unsendable += 1
            return
        except Exception as exc:  # a timeout, a refused or reset connection
            if self.config.app is not None and _app_raised(exc):
                self.server_exception(op_id, group, case, exc, index)
                return
            self.transport_error(op_id, group, case, exc, index)
            if not self.alive():
                raise ServerGone(f"the server stopped answering during {op_id}") from exc
            return
        stats.statuses[response.status_code] = stats.statuses.get(response.status_code, 0) + 1
        if group == "negative":
            # A negative draw that came out schema-valid was never made to keep the rules a
            # schema cannot state (a derender stream_state's lengths summing, one choice per
            # chunk): a 400 to it may be right. Acceptance is judged on positive cases, which
            # `prepare` makes keep them.
            chosen = checks or self.checks
            dropped = {"positive_data_acceptance"}
            if self._valid_here(op_id, case):
                stats.lax += 1
                dropped.add("negative_data_rejection")
            checks = [c for c in chosen if c.__name__ not in dropped]
        self.judge(op_id, group, case, response, index, checks=checks)

    def _valid_here(self, op_id: str, case: Any) -> bool:
        """A negative case that this server may rightly accept: its body's only faults are
        ones pydantic's lax mode coerces (`lax`), or a logprobs count above the spec's stated
        default maximum (20) but within this server's learned --max-logprobs."""
        name = request_schema(operations()[op_id][2])
        if name is None or not isinstance(case.body, (dict, list)):
            return False
        if any(_negative_in(case, where) for where in ("header", "query", "path")):
            return False
        validator = openapi.schema_validator(name)
        if lax.lax_valid(validator, case.body):
            return True
        within = _within_learned_logprobs(case.body, self.facts.max_logprobs)
        return within is not None and bool(validator.is_valid(within))

    def prepare(self, op_id: str, case: Any, positive: bool) -> Any:
        """Bound every case; make positive ones acceptable (see `sanitize`)."""
        cfg, facts = self.config, self.facts
        if positive and isinstance(case.body, dict):
            case.body = sanitize.integral_floats_to_ints(case.body)
        body = case.body if isinstance(case.body, dict) else None
        if not positive and body is not None and isinstance(body.get("model"), str):
            # Any string is a schema-valid model, so it is never what made the case negative;
            # an unknown name would be answered 404 before the field checks (as vLLM does).
            body["model"] = facts.model
        if op_id == "generate" and body is not None:
            sanitize.bound_generate(body, facts, cfg.max_tokens, cfg.max_prompt)
            if positive:
                sanitize.accept_generate(body, facts, cfg.max_tokens, None)
        elif positive and body is not None and op_id == "renderCompletions":
            sanitize.accept_render(body, facts, cfg.max_prompt)
            body["max_tokens"] = 1 + len(str(body)) % cfg.max_tokens
        elif positive and body is not None and op_id == "renderChatCompletions":
            sanitize.accept_chat(body, facts)
        elif positive and body is not None and op_id.startswith("derender"):
            sanitize.accept_derender(body, facts, chat=op_id == "derenderChatCompletions")
        if positive and case.headers:
            sanitize.accept_headers(case.headers)
        if self.auth and not (not positive and _negative_in(case, "header")):
            case.headers = {**(case.headers or {}), **self.auth}
        return case

    def served(self, op_id: str) -> str:
        return serving(operations()[op_id][2], self.facts)


def _snippet(response: Any) -> str:
    return repr(bytes(response.content or b"")[:300])


def _what_failed(failure: Failure, response: Any, case: Any) -> str:
    """A failure in one line or a few: a schema failure at its leaves, as the suite reports
    them, never schemathesis's dump of the whole body beside the whole schema."""
    if type(failure).__name__ != "JsonSchemaError":
        return f"{failure.title}: {failure.message}"
    leaves = answer_problems(response, case)
    if not leaves:  # our reading of the spec found nothing: say where schemathesis's did
        where = "/" + "/".join(str(p) for p in getattr(failure, "instance_path", []))
        rule = "/".join(str(p) for p in getattr(failure, "schema_path", [])[-2:])
        leaves = [f"at {where}: breaks {rule or 'the schema'}"]
    return f"{failure.title}: {'; '.join(leaves)}"


def _check_name(failure: Failure) -> str:
    if isinstance(failure, CustomFailure):
        return failure.title.removeprefix("Custom check failed: ").strip("`")
    return _CHECK_OF_FAILURE.get(type(failure).__name__, type(failure).__name__)


def _app_raised(exc: Exception) -> bool:
    """In-process, whether the app itself failed (what a 500 is over HTTP), not the sending:
    the streaming transport hands an app's exception on as a broken connection."""
    import requests

    if isinstance(exc, ServerBroke):
        return not exc.timed_out and "the app failed" in str(exc)
    return not isinstance(exc, (requests.RequestException, OSError, TimeoutError))


def _negative_in(case: Any, location: str) -> bool:
    """Whether schemathesis negated this part of the case (so it must be sent as generated)."""
    meta = case.meta
    if meta is None:
        return False
    for where, info in meta.components.items():
        if str(getattr(where, "value", where)) == location and info.mode.is_negative:
            return True
    return False


def _within_learned_logprobs(body: Any, limit: int) -> Any | None:
    """`body` with each logprobs count above the spec's stated maximum (vLLM's default) but
    within `limit` brought down to that maximum; None when there is none such."""
    sp = body.get("sampling_params") if isinstance(body, dict) else None
    if not isinstance(sp, dict) or limit <= VLLM_MAX_LOGPROBS:
        return None
    lowered = {
        k: VLLM_MAX_LOGPROBS
        for k in ("logprobs", "prompt_logprobs")
        if type(sp.get(k)) is int and VLLM_MAX_LOGPROBS < sp[k] <= limit
    }
    return {**body, "sampling_params": {**sp, **lowered}} if lowered else None


def wants_stream(case: Any) -> bool:
    return isinstance(case.body, dict) and case.body.get("stream") is True


__all__ = ["Fuzzer", "ServerGone", "stream_payloads"]
