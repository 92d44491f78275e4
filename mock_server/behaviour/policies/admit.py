"""Admit-stage policies: how a request is named, how many tokens it may take, how aborts
(by id, by hang-up) reach it."""

from mock_server.behaviour.policies.registry import setting

setting("request-id-header-ignored", "admit", request_id_header=False)
setting("request-id-body-wins", "admit", request_id_body_first=True)
setting("max-tokens-default-16", "admit", default_max_tokens=16)
setting("max-tokens-overrun", "admit", max_tokens_extra=1)
setting("abort-ignored", "admit", aborts_honoured=False)
setting("abort-missing-ids-200", "admit", abort_ids_required=False)
setting("legacy-abort-ignored", "admit", legacy_abort_acts=False)
setting("disconnect-no-abort", "admit", abort_on_disconnect=False)
setting("disconnect-whole-no-abort", "admit", abort_on_whole_disconnect=False)
