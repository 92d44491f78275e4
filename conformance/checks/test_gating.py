"""Registration: the 403 without either flag, and tokens-only."""

from __future__ import annotations

from conformance import api
from conformance.checks.test_stop import stop_token_case
from conformance.registry import checks
from conformance.requirements.gating import DISABLED_MESSAGE
from conformance.session import Session
from conformance.tito.semantics import choices_of, fail


@checks("DISABLED-001")
def test_disabled_403(tito: Session) -> None:
    api.rejected(tito, api.body(2), status=403, what="generate with neither flag")


@checks("DISABLED-002", builds_on=("DISABLED-001",))
def test_disabled_message(tito: Session) -> None:
    reply = api.rejected(tito, api.body(2), status=403, what="generate with neither flag")
    data = reply.json()
    message = (data.get("error") or {}).get("message") if isinstance(data, dict) else None
    if message != DISABLED_MESSAGE:
        fail(f"the 403 message is {message!r}, expected {DISABLED_MESSAGE!r}")


@checks("DISABLED-003", builds_on=("DISABLED-001",))
def test_disabled_before_validation(tito: Session) -> None:
    api.rejected(tito, {"token_ids": []}, status=403, what="invalid body with neither flag")


@checks("DISABLED-004")
def test_disabled_other_routes(tito: Session) -> None:
    for path, payload in (
        (api.ABORT, {"request_ids": []}),
        ("/v1/completions/render", {"prompt": "hi"}),
        ("/v1/completions/derender", {"generate_responses": []}),
    ):
        api.rejected(tito, payload, status=403, path=path, what=f"{path} with neither flag")


@checks("TOKONLY-001")
def test_tokens_only_generates(tito: Session) -> None:
    api.generate(tito, api.body(2))


@checks("TOKONLY-002")
def test_tokens_only_refuses_text(tito: Session) -> None:
    api.rejected(
        tito, api.body(2, top={"output_mode": "text"}), what='output_mode "text" on tokens-only'
    )


@checks("TOKONLY-003")
def test_tokens_only_forces_no_detokenize(tito: Session) -> None:
    data = api.generate(tito, api.body(2, detokenize=True))
    if any("text" in c for c in choices_of(data)):
        fail("detokenize true on tokens-only produced text")


@checks("TOKONLY-004")
def test_tokens_only_refuses_stop(tito: Session) -> None:
    api.rejected(tito, api.body(2, stop=["zz"]), what="stop strings on tokens-only")


@checks("TOKONLY-005")
def test_tokens_only_stop_token_ids(tito: Session) -> None:
    _, _, token, choice = stop_token_case(tito)
    # Only the stop itself: which stop_reason names it is STOP-001's, which runs here too (a
    # release without stop_reason fails that one requirement, not this one as well).
    if choice.get("finish_reason") != "stop":
        fail(
            f"stop_token_ids [{token}] on tokens-only: finish_reason "
            f"{choice.get('finish_reason')!r}, stop_reason {choice.get('stop_reason')!r}"
        )
