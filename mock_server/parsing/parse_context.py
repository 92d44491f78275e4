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

from mock_server.behaviour.releases import Release
from mock_server.parsing import coerce as c
from mock_server.wire.errors import ValidationFailure, validation_item

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


TEMPLATE_DEFAULTS = {"cohere_format": "cmd4"}
"""The chat template kwargs every 0.33+ server applies (`--cohere-format`'s default, put into
`--default-chat-template-kwargs` by `resolve_default_chat_template_kwargs`)."""
EMPTY_TOOLS = (
    "`tools` must not be an empty array. Either provide at least one tool or omit the field "
    "entirely."
)


def rendered(
    body: dict[str, Any], messages: list[Any], release: Release, errors: c.Errors
) -> dict[str, Any]:
    """The ParseContext chat `/render` puts into its GenerateRequest (0.33+), dumped in the
    release's field order: the request's tool fields as sent (the mock has no tools to
    normalise them with), the template kwargs with the server's defaults applied and the
    unset ones dropped (`merge_kwargs`), and the tool calls already in the conversation.
    `return_tokens_as_token_ids` (0.34) is left out when unset (`exclude_if`)."""
    tools = body.get("tools")
    read = {
        key: c.field(body, key, c.to_bool, "body", errors, default)
        for key, default in (
            ("parallel_tool_calls", True),
            ("include_reasoning", True),
            ("return_tokens_as_token_ids", None),
            ("add_generation_prompt", True),
            ("continue_final_message", False),
        )
    }
    given = c.field(body, "chat_template_kwargs", c.to_dict, "body", errors, None) or {}
    asked = {
        **given,
        "add_generation_prompt": read["add_generation_prompt"],
        "continue_final_message": read["continue_final_message"],
    }
    kwargs = TEMPLATE_DEFAULTS | {k: v for k, v in asked.items() if v not in (None, "auto")}
    calls = sum(
        _count(m.get("tool_calls"))
        for m in messages
        if isinstance(m, dict) and m.get("role") == "assistant"
    )
    values: dict[str, Any] = {
        "tools": tools,
        "tool_choice": body.get("tool_choice", "auto" if tools else "none"),
        "parallel_tool_calls": read["parallel_tool_calls"],
        "include_reasoning": read["include_reasoning"],
        "return_tokens_as_token_ids": read["return_tokens_as_token_ids"],
        "chat_template_kwargs": kwargs,
        "history_tool_call_cnt": calls,
    }
    out = {key: values[key] for key in release.parse_context_keys}
    if out.get("return_tokens_as_token_ids", False) is None:
        del out["return_tokens_as_token_ids"]
    return out


def check_tools(body: dict[str, Any], release: Release) -> dict[str, Any]:
    """ChatCompletionRequest's `check_tool_usage` (a before-validator, so ahead of every field
    error) on an empty `tools`, once render reads the tools (0.33+): 0.33's 400, or 0.34's
    omitted tools (`tool_choice` "auto" or "required" then "none"; a named one keeps them).
    The body as the rest of render reads it."""
    if body.get("tools") != []:
        return body
    if release.empty_tools_rejected:
        msg = f"Value error, {EMPTY_TOOLS} (parameter=tools)"
        item = validation_item("value_error", "body", msg, body, {"error": ValueError(EMPTY_TOOLS)})
        raise ValidationFailure([{**item, "param": "tools"}])
    if isinstance(body.get("tool_choice"), dict):
        return body
    body = {**body, "tools": None}
    if body.get("tool_choice") in ("auto", "required"):
        body["tool_choice"] = "none"
    return body


def _count(tool_calls: Any) -> int:
    """vLLM's `count_tool_calls`: none, one (a string or an object), or each of a list."""
    if tool_calls is None:
        return 0
    return len(tool_calls) if isinstance(tool_calls, list) else 1


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
