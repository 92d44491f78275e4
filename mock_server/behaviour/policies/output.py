"""Build-, frame- and write-stage policies: what is rendered, chunked and sent differently
(beyond the transformers of `mock_server.transforms`, which rewrite a finished answer)."""

from mock_server.behaviour.policies.registry import setting

setting("logprobs-always", "build", logprobs_always=True)
setting("text-logprobs-tokens-shape", "build", text_logprobs=False)
setting("logprobs-legacy-token-id", "build", legacy_logprobs=True)
setting("top-logprobs-wrong-count", "build", top_logprobs_wrong_count=True)
setting("prompt-logprobs-no-leading-null", "build", prompt_logprobs_leading_null=False)
setting("render-generate-mismatch", "build", render_ids_as_strings=True)
setting("render-params-lost", "build", render_params_lost=True)
setting("derender-finish-stop", "build", derender_finish_stop=True)
setting("stream-multi-choice-chunk", "frame", multi_choice_chunks=True)
setting("stream-empty-chunk", "frame", empty_chunk=True)
setting("abort-json-body", "write", abort_json_body=True)
setting("generate-json-as-text", "write", json_media="text/plain; charset=utf-8")
setting("dev-abort-count-renamed", "write", dev_abort_count_key="aborted_count")
