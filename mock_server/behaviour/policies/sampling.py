"""Generate-stage policies: sampling, stop handling and weight labels of the engine."""

from mock_server.behaviour.policies.registry import setting

setting("n-ignored", "generate", n_honoured=False)
setting("seed-ignored", "generate", seeded=False)
setting("text-mode-other-tokens", "generate", text_seed_offset=1)
setting("greedy-not-greedy", "generate", greedy_rank=2)
setting("stop-token-ids-ignored", "generate", stop_token_ids_honoured=False)
setting("tokens-only-stop-token-ids-ignored", "generate", stop_token_ids_honoured_tokens_only=False)
setting("include-stop-str-ignored", "generate", include_stop_str_honoured=False)
setting("skip-special-ignored", "generate", skip_special_honoured=False)
setting("stop-string-not-cut", "generate", cut_stop_string=False)
setting("eos-stop-reason-set", "generate", eos_stop_reason=True)
setting("stop-reason-null", "generate", stop_reason_reported=False)
setting("stop-token-dropped", "generate", drop_stop_token=True)
setting("stop-string-trims-tokens", "generate", stop_string_trims=True)
setting("length-stop-reason-set", "generate", length_stop_reason=0)
setting("abort-stop-reason-set", "generate", abort_stop_reason="abort")
setting("weight-versions-not-reset", "generate", weight_updates=False)
setting("weight-label-not-default", "generate", default_label="v0")
