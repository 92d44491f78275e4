"""Validate-stage policies: each removes a row of `mock_server.validation.TABLE`, or swaps in
one that is off by default."""

from dataclasses import replace

from mock_server.behaviour.policies.registry import policy, setting
from mock_server.behaviour.policies.slots import Validate
from mock_server.validation import RULES


def _rows(name: str, drop: tuple[str, ...], add: tuple[str, ...] = ()) -> None:
    """Register `name` as the policy that takes rows `drop` out of the table, `add` in."""
    for row in (*drop, *add):
        if row not in RULES:  # a typo must not silently leave the table as it is
            raise KeyError(row)

    def bend(slot: Validate) -> Validate:
        return replace(slot, rules=slot.rules - frozenset(drop) | frozenset(add))

    bend.__name__ = bend.__qualname__ = name.replace("-", "_")
    policy(name, "validate")(bend)


_rows("unknown-field-rejected", ("unknown_fields.ignored",))
_rows("token-ids-missing-accepted", ("token_ids.required",))
_rows("empty-token-ids-accepted", ("token_ids.non_empty",))
_rows("negative-token-ids-accepted", ("token_ids.non_negative",))
_rows("sampling-params-optional", ("sampling_params.required",))
_rows("output-mode-any-accepted", ("output_mode.literal",))
_rows("null-rejected", ("stop.nullable",))
_rows("type-error-500", ("temperature.type_400",))
_rows("optional-fields-rejected", ("cache_salt.accepted",))
_rows("max-tokens-zero-accepted", ("max_tokens.at_least_1",), ("max_tokens.at_least_0",))
_rows("features-content-parts-accepted", ("content_parts.exclusive",))
_rows("text-detokenize-false-accepted", ("output_mode.text_needs_detokenize",))
_rows("tokens-only-stop-accepted", ("stop.tokens_only",))
_rows("tokens-only-detokenize-text", (), ("detokenize.tokens_only",))
_rows("tokens-only-text-accepted", ("output_mode.text_needs_tokenizer",))
# also a transformer (no echo); here: text mode is then served as tokens, tokenizer or not
_rows("output-mode-not-echoed", ("output_mode.text_needs_tokenizer",))
_rows("dp-rank-non-int-400", ("dp_rank.non_int_ignored",))
_rows("dp-rank-zero-rejected", ("dp_rank.in_range",), ("dp_rank.from_1",))
_rows("dp-rank-unchecked", ("dp_rank.in_range",))
_rows("oov-token-500", ("token_ids.oov_400", "token_ids.in_vocab"))
_rows("logprobs-over-max-accepted", ("logprobs.max", "prompt_logprobs.max"))
_rows("stream-error-as-http", ("errors.streamed",))
_rows("derender-accepts-text", ("derender.text_rejected",))
setting("default-output-mode-text", "validate", default_output_mode="text")
