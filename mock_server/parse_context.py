"""`GenerateRequest.parse_context` (vLLM 0.33+): checked as its pydantic model does, then kept.

`/render` builds it from the chat request so a generate server with a tool or reasoning parser
can parse its output (`output_mode: "derender"`). The mock has no parser, so, like such a vLLM
server, it reads nothing of it but `return_tokens_as_token_ids` (0.34, the logprob tokens of
the derender level). It still checks the field types (a 400 at any output mode, as pydantic
validates before the server looks), and an unknown field is a 400 in derender mode only:
`extra="allow"` keeps it so `_check_parse_context_fields` can reject it where it is read.

Source: vLLM 0.33.0 / 0.34.0 `vllm/entrypoints/scale_out/token_in_token_out/protocol.py`
(`ParseContext`, `GenerateRequest._check_parse_context_fields`).
"""

from __future__ import annotations

from typing import Any

from mock_server import coerce as c
from mock_server.errors import validation_item
from mock_server.releases import Release

LOC = "body.parse_context"
TOOL_CHOICES = ("none", "auto", "required")


def parse(value: Any, errors: c.Errors) -> dict[str, Any] | None:
    """The parse_context as sent (None when absent or null); type errors appended."""
    if value is None:
        return None
    if not isinstance(value, dict):
        msg = "Input should be a valid dictionary or instance of ParseContext"
        errors.append(validation_item("model_type", LOC, msg, value))
        return None
    c.field(value, "parallel_tool_calls", c.to_bool, LOC, errors, None)
    c.field(value, "include_reasoning", c.to_bool, LOC, errors, True, nullable=False)
    c.field(value, "return_tokens_as_token_ids", c.to_bool, LOC, errors, None)
    c.field(value, "chat_template_kwargs", c.to_dict, LOC, errors, {}, nullable=False)
    count = c.field(value, "history_tool_call_cnt", c.to_int, LOC, errors, 0, nullable=False)
    if isinstance(count, int) and count < 0:
        msg = "Input should be greater than or equal to 0"
        where = f"{LOC}.history_tool_call_cnt"
        errors.append(validation_item("greater_than_equal", where, msg, count, {"ge": 0}))
    _tools(value.get("tools"), errors)
    _tool_choice(value.get("tool_choice", "none"), errors)
    return value


def _tools(tools: Any, errors: c.Errors) -> None:
    """`list[ChatCompletionToolsParam] | None`: each an object whose `function` has a name."""
    if tools is None:
        return
    if not isinstance(tools, list):
        errors.append(
            validation_item("list_type", f"{LOC}.tools", "Input should be a valid list", tools)
        )
        return
    for i, tool in enumerate(tools):
        where = f"{LOC}.tools.{i}"
        if not isinstance(tool, dict):
            msg = "Input should be a valid dictionary or instance of ChatCompletionToolsParam"
            errors.append(validation_item("model_type", where, msg, tool))
        elif not isinstance(tool.get("function"), dict):
            errors.append(validation_item("missing", f"{where}.function", "Field required", tool))
        else:
            c.field(tool["function"], "name", c.to_str, f"{where}.function", errors, None, False)


def _tool_choice(choice: Any, errors: c.Errors) -> None:
    """`Literal["none", "auto", "required"] | ChatCompletionNamedToolChoiceParam | None`."""
    if choice is None or choice in TOOL_CHOICES:
        return
    where = f"{LOC}.tool_choice"
    if isinstance(choice, dict):
        function = choice.get("function")
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            return
        errors.append(validation_item("missing", f"{where}.function", "Field required", choice))
        return
    msg = "Input should be 'none', 'auto' or 'required'"
    ctx = {"expected": "'none', 'auto' or 'required'"}
    errors.append(validation_item("literal_error", where, msg, choice, ctx))


def unknown_fields(
    parse_context: dict[str, Any] | None, release: Release, body: Any
) -> list[dict[str, Any]]:
    """The derender-mode rejection of fields the release's ParseContext lacks (a newer
    `/render`'s): one model-level value_error, or none."""
    unknown = sorted(k for k in parse_context or () if k not in release.parse_context_keys)
    if not unknown:
        return []
    text = (
        f"Unknown parse_context fields {unknown}; the render server is newer than this "
        "generate server"
    )
    ctx = {"error": ValueError(text)}
    return [validation_item("value_error", "body", f"Value error, {text}", body, ctx)]


def tokens_as_ids(parse_context: dict[str, Any] | None, default: bool) -> bool:
    """The derender level's `return_tokens_as_token_ids`: the parse_context's when set (0.34;
    0.33 rejects the field in derender mode), else the server's flag."""
    if parse_context is None:
        return default
    override = parse_context.get("return_tokens_as_token_ids")
    if override is None:
        return default
    return bool(c.to_bool(override, LOC, []))
