"""Parse-stage policies: how the generate body is read (media type, JSON)."""

from mock_server.behaviour.policies.registry import setting

setting("wrong-content-type-accepted", "parse", media_type_checked=False)
setting("invalid-json-500", "parse", bad_json_status=500)
setting("stream-schema-error-200", "parse", schema_error_streamed=True)
