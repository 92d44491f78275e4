"""Release extensions: what vLLM 0.33 and 0.34 add to generate, judged where claimed or found.

The API document describes vLLM 0.32. Later releases add `output_mode: "derender"` (0.33: a
parsed assistant message per choice; 0.34: streamed, a chat `delta` per chunk) and the
`parse_context` request field (0.33; `return_tokens_as_token_ids` in it since 0.34). New
optional fields and enum values are never failures under the document's rules, so none of
these applies to a server that shows neither the feature nor a claim of it (`needs`); a server
that shows or claims one must do it as the release does. Their words are the release's own
(`Source.RELEASE`): quoted from its field descriptions where it has one, else stated, with
`evidence` naming the file and class of the wheel
(`tito-conformance drift --vllm-version 0.34.0` caches it).

They belong to the text mode's feature (derender is the text level, parsed) and to the
`derender-mode` and `parse-context` groups of `conformance.verdicts.levels`.
"""

from __future__ import annotations

from conformance.requirements.model import MUST, Feature, Requirement, Source

F = Feature.TEXT
PROTOCOL = "vllm/entrypoints/scale_out/token_in_token_out/protocol.py"
SERVING = "vllm/entrypoints/scale_out/token_in_token_out/serving.py"

REQUIREMENTS = [
    Requirement(
        "EXT-DERENDER-001",
        MUST,
        F,
        "'derender' returns the parsed assistant message: the answer echoes output_mode "
        '"derender" and carries one `message` per choice with role "assistant"; a server '
        "without a tool or reasoning parser sends the text the text mode gives as its `content`.",
        "derender mode answers one assistant message per choice, its content the text mode's text",
        source=Source.RELEASE,
        evidence=f"vLLM 0.33.0 and 0.34.0 {PROTOCOL}: GenerateDerenderResponse, "
        f"GenerateDerenderChoice.message (ChatMessage); {SERVING}: "
        "serve_tokens_full_generator (derender_mode is the text level, then parsed)",
        needs=("output-mode-derender", "text-mode"),
        anchor="output-mode-derender",
        fields=("message",),
    ),
    Requirement(
        "EXT-DERENDER-002",
        MUST,
        F,
        "With `stream`, 'derender' returns a parsed chat `delta` per chunk: every chunk echoes "
        'output_mode "derender", each choice\'s first delta carries role "assistant", and a '
        "choice's delta contents join to the non-streamed message's content.",
        "streamed derender chunks echo derender; deltas join to the message, role first",
        source=Source.RELEASE,
        evidence=f"vLLM 0.34.0 {PROTOCOL}: GenerateDerenderStreamResponse (output_mode "
        "Literal['derender']), GenerateDerenderStreamChoice.delta (DeltaMessage, dumped "
        f"without nulls); {SERVING}: serve_tokens_stream_generator (role_sent)",
        needs=("derender-stream", "output-mode-derender", "text-mode"),
        anchor="derender-stream",
        fields=("delta",),
    ),
    Requirement(
        "EXT-PARSE-001",
        MUST,
        F,
        "parse_context.return_tokens_as_token_ids overrides --return-tokens-as-token-ids at the "
        "derender level: true makes every logprob token, top_logprobs included, a token_id:N "
        "placeholder naming its token.",
        "parse_context.return_tokens_as_token_ids true makes derender logprob tokens token_id:N",
        source=Source.RELEASE,
        evidence=f"vLLM 0.34.0 {PROTOCOL}: ParseContext.return_tokens_as_token_ids; "
        f"{SERVING}: _logprobs_tokenizer (the parse_context's value wins in derender mode)",
        needs=("parse-context", "output-mode-derender"),
        anchor="parse-context",
    ),
    Requirement(
        "EXT-PARSE-002",
        MUST,
        F,
        "Chat context from `/render`. Read only when output_mode='derender' and ignored at "
        "other levels, so a rendered request can be sent to a prefill leg unchanged.",
        "a text-mode request with a parse_context (a newer field too) is answered as without",
        source=Source.RELEASE,
        evidence=f"vLLM 0.33.0 and 0.34.0 {PROTOCOL}: GenerateRequest.parse_context (its "
        "description, quoted) and GenerateRequest._check_parse_context_fields (unknown fields "
        "are a 400 in derender mode only)",
        needs=("parse-context", "text-mode"),
    ),
]
