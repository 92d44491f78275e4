"""Which statuses each operation must answer in the server's profile, read from the spec.

The spec's `x-tito-profiles` says, per operation, whether a profile serves it, forbids it with
the 403 or does not register it. That, not a hand-kept table, decides what schemathesis's
positive_data_acceptance and negative_data_rejection expect. Negative cases expect the
document's 400, never 422 or 5xx.
"""

from __future__ import annotations

import functools
from typing import Any

import openapi
from conformance.fuzz.settings import ServerFacts

NEEDS_TOKENIZER_400 = {"renderChatCompletions", "derenderCompletions", "derenderChatCompletions"}
"""Served without a tokenizer, but every valid body is a 400 there: a chat template and
detokenization both need one ("Tokenizer not available when `skip_tokenizer_init=True`")."""
LENIENT_ABORT = {"abortRequests", "abortRequestsLegacy"}
"""vLLM reads `request_ids` without validating its type: only a missing one is a 400."""


@functools.cache
def operations() -> dict[str, tuple[str, str, dict[str, Any]]]:
    """operationId -> (method, path, operation object); built once (read per case), never
    mutated."""
    found: dict[str, tuple[str, str, dict[str, Any]]] = {}
    for path, item in openapi.load_spec()["paths"].items():
        for method, op in item.items():
            if isinstance(op, dict) and "operationId" in op:
                found[op["operationId"]] = (method.upper(), path, op)
    return found


def request_schema(op: dict[str, Any]) -> str | None:
    """The component name of the operation's JSON request body, if it has one."""
    content = (op.get("requestBody") or {}).get("content") or {}
    ref = str(((content.get("application/json") or {}).get("schema") or {}).get("$ref", ""))
    prefix = "#/components/schemas/"
    return ref.removeprefix(prefix) if ref.startswith(prefix) else None


def serving(op: dict[str, Any], facts: ServerFacts) -> str:
    """How the profile serves `op`: served, forbidden-403, not-registered-404, dev-semantics."""
    profiles = op.get("x-tito-profiles", {})
    value = str(profiles.get(facts.profile, "served"))
    if facts.dev_mode and "dev-mode" in profiles:
        dev = str(profiles["dev-mode"])
        if dev != "served" or value == "not-registered-404":
            value = dev
    return value


def expected_statuses(op_id: str, op: dict[str, Any], facts: ServerFacts) -> tuple[str, str]:
    """(positive statuses, negative statuses) as schemathesis status patterns."""
    how = serving(op, facts)
    if how == "forbidden-403":
        return "403", "403"
    if how == "not-registered-404":
        return "404", "404"
    positive = "2XX"
    if op_id in NEEDS_TOKENIZER_400 and not facts.has_tokenizer:
        positive = "400"
    return positive, "400"


def schemathesis_config(
    facts: ServerFacts,
    *,
    seed: int,
    max_examples: int,
    answer_budget_s: float,
    request_timeout_s: float,
    headers: dict[str, str],
    base_url: str | None,
) -> dict[str, Any]:
    """The schemathesis configuration (the `schemathesis.toml` structure) of one run."""
    per_op = []
    for op_id, (_, _, op) in operations().items():
        positive, negative = expected_statuses(op_id, op, facts)
        guarded = bool(op.get("security")) and facts.api_key_required
        negatives = [negative, "401"] if guarded and negative == "400" else [negative]
        if op_id in LENIENT_ABORT and negative == "400":
            negatives.append("200")
        per_op.append(
            {
                "include-operation-id": op_id,
                "checks": {
                    "positive_data_acceptance": {"expected-statuses": [positive]},
                    "negative_data_rejection": {"expected-statuses": negatives},
                },
            }
        )
    config: dict[str, Any] = {
        "seed": seed,
        "headers": headers,
        "request-timeout": request_timeout_s,
        "generation": {
            "max-examples": max_examples,
            "deterministic": True,
            "allow-x00": False,
            # the key is only checked with --api-key: elsewhere a missing one is no error
            "with-security-parameters": facts.api_key_required,
        },
        "checks": {"max_response_time": answer_budget_s},
        "output": {"sanitization": {"enabled": False}},  # reproducers need the real values
        "operations": per_op,
    }
    if base_url is not None:
        config["base-url"] = base_url
    return config
