"""`--mock-vllm-version 0.33|0.34` beyond the derender level: what those releases changed on the
TITO wire, as their own servers answered it (`tito-mock --real-frontend`, the release's API
server over the simulated core, diffed with `tito-conformance diff`), and what the suite makes
of it. 0.32, the default, answers exactly as before (test_mock_releases.py).
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import struct
from typing import Any

import pytest

from conformance.run.embedded import QUICK, embedded_mock
from conformance.run.runner import run
from conformance.verdicts.results import Report, Status
from live import deviations
from mock_server.harness.testing import asgi_client

pytestmark = pytest.mark.anyio
GEN = "/inference/v1/generate"
ABORT = "/inference/v1/abort_requests"
CHAT_RENDER = "/v1/chat/completions/render"
SO = ["--enable-scale-out", "--mock-vocab-size", "2048"]
DEV = {"VLLM_SERVER_DEV_MODE": "1"}
NEW = ("0.33", "0.34")
PROMPT = [321, 608, 78, 338, 10]
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def argv(version: str, *more: str) -> list[str]:
    return [*SO, "--mock-vllm-version", version, *more]


def generate(**params: Any) -> dict[str, Any]:
    return {"token_ids": PROMPT, "sampling_params": {"max_tokens": 8, **params}}


def events(text: str) -> list[Any]:
    return [
        json.loads(block[6:])
        for block in text.split("\n\n")
        if block.startswith("data: ") and block != "data: [DONE]"
    ]


# -- top_logprobs: the sampled token plus the top k (0.33) ------------------------------------
@pytest.mark.parametrize("version", ["0.32", *NEW])
@pytest.mark.parametrize("mode", ["tokens", "text"])
async def test_top_logprobs_per_release(version: str, mode: str) -> None:
    """0.32 cuts the list to max(k, 1); 0.33+ send the sampled token and the top k, k + 1
    entries when it is not among them. The derender level still cuts to k (chat's cut)."""
    k = 2
    body = {**generate(temperature=1.0, seed=3, n=4, logprobs=k), "output_mode": mode}
    async with asgi_client(argv(version)) as client:
        data = (await client.post(GEN, json=body)).json()
    counts: set[int] = set()
    for choice in data["choices"]:
        for entry in choice["logprobs"]["content"]:
            top = entry["top_logprobs"]
            counts.add(len(top))
            if mode == "tokens":
                outside = entry["rank"] > k
                ranks = [t["rank"] for t in top[1:]]
                assert ranks == sorted(ranks) and all(r <= k for r in ranks)
            else:
                outside = len(top) > k
            want = k + 1 if version != "0.32" and outside else k
            assert len(top) == want, (version, entry)
    assert counts == ({k} if version == "0.32" else {k, k + 1}), "both kinds of entry drawn"


@pytest.mark.parametrize("version", NEW)
async def test_logprobs_0_and_greedy_are_unchanged(version: str) -> None:
    async with asgi_client(argv(version)) as client:
        zero = (await client.post(GEN, json=generate(temperature=1.0, logprobs=0))).json()
        greedy = (await client.post(GEN, json=generate(temperature=0, logprobs=3))).json()
        derender = {**generate(temperature=1.0, seed=3, n=4, logprobs=2), "output_mode": "derender"}
        cut = (await client.post(GEN, json=derender)).json()
    assert {len(e["top_logprobs"]) for e in zero["choices"][0]["logprobs"]["content"]} == {1}
    assert {len(e["top_logprobs"]) for e in greedy["choices"][0]["logprobs"]["content"]} == {3}
    lengths = {len(e["top_logprobs"]) for c in cut["choices"] for e in c["logprobs"]["content"]}
    assert lengths == {2}, "derender cuts as /v1/chat/completions does"


# -- usage (0.34) ----------------------------------------------------------------------------
@pytest.mark.parametrize(("version", "details"), [("0.32", True), ("0.33", True), ("0.34", False)])
async def test_prompt_tokens_details_left_out_on_034(version: str, details: bool) -> None:
    stream = {**generate(max_tokens=2), "stream": True}
    stream["stream_options"] = {"include_usage": True, "continuous_usage_stats": True}
    async with asgi_client(argv(version)) as client:
        whole = (await client.post(GEN, json=generate(max_tokens=2))).json()
        chunks = events((await client.post(GEN, json=stream)).text)
        derendered = await client.post(
            "/v1/completions/derender", json={"generate_responses": [whole]}
        )
        openai = (
            await client.post("/v1/completions", json={"prompt": "hi", "max_tokens": 2})
        ).json()
    usages = [whole["usage"], chunks[0]["usage"], derendered.json()["usage"], openai["usage"]]
    for usage in usages:
        assert ("prompt_tokens_details" in usage) is details, usage
        assert usage["completion_tokens_details"] is None
    assert list(whole["usage"])[:3] == ["prompt_tokens", "total_tokens", "completion_tokens"]


# -- render (0.33, 0.34) ---------------------------------------------------------------------
async def test_032_render_is_unchanged() -> None:
    async with asgi_client(argv("0.32")) as client:
        chat = await client.post(CHAT_RENDER, json={"messages": HI, "return_token_ids": True})
        empty = await client.post(CHAT_RENDER, json={"messages": HI, "tools": []})
        plain = (await client.post("/v1/completions/render", json={"prompt": "hi"})).json()[0]
    assert "parse_context" not in chat.json() and chat.json()["return_token_ids"] is None
    assert empty.status_code == 200, "0.32's mock never read tools (DIFFERENCES.md row 32)"
    assert "max_tokens" not in plain["sampling_params"]


@pytest.mark.parametrize("version", NEW)
async def test_render_parse_context_and_return_token_ids(version: str) -> None:
    chat = {
        "messages": [*HI, {"role": "assistant", "content": "x", "tool_calls": [{}, {}]}, *HI],
        "max_tokens": 4,
        "return_token_ids": True,
        "return_tokens_as_token_ids": True,
        "chat_template_kwargs": {"x": 1, "cohere_format": "cmd3", "y": None, "z": "auto"},
    }
    async with asgi_client(argv(version)) as client:
        rendered = (await client.post(CHAT_RENDER, json=chat)).json()
        plain = (await client.post(CHAT_RENDER, json={"messages": HI})).json()
        completions = await client.post(
            "/v1/completions/render", json={"prompt": "hi", "return_token_ids": True}
        )
    keys = list(rendered)
    assert keys[keys.index("output_mode") + 1] == "parse_context"
    assert rendered["return_token_ids"] is True
    context = rendered["parse_context"]
    as_ids = {"return_tokens_as_token_ids": True} if version == "0.34" else {}
    assert context == {
        "tools": None,
        "tool_choice": "none",
        "parallel_tool_calls": True,
        "include_reasoning": True,
        **as_ids,
        "chat_template_kwargs": {
            "cohere_format": "cmd3",
            "x": 1,
            "add_generation_prompt": True,
            "continue_final_message": False,
        },
        "history_tool_call_cnt": 2,
    }
    assert list(context) == list({k: 0 for k in context})  # the release's field order
    assert "return_tokens_as_token_ids" not in plain["parse_context"], "exclude_if None"
    assert plain["parse_context"]["chat_template_kwargs"] == {
        "cohere_format": "cmd4",
        "add_generation_prompt": True,
        "continue_final_message": False,
    }
    (one,) = completions.json()
    assert one["parse_context"] is None and one["return_token_ids"] is True


async def test_empty_tools_per_release() -> None:
    """0.33's ChatCompletionRequest rejects `tools: []`; 0.34 reads it as no tools (and an
    "auto" tool_choice as "none")."""
    body = {"messages": HI, "tools": [], "tool_choice": "auto"}
    async with asgi_client(argv("0.33")) as client:
        r = await client.post(CHAT_RENDER, json=body)
    assert r.status_code == 400
    assert r.json()["error"]["param"] == "tools" and "`tools` must not be" in r.text
    async with asgi_client(argv("0.34")) as client:
        r = await client.post(CHAT_RENDER, json=body)
    assert r.status_code == 200, r.text
    context = r.json()["parse_context"]
    assert context["tools"] is None and context["tool_choice"] == "none"


@pytest.mark.parametrize(("version", "stated"), [("0.33", False), ("0.34", True)])
async def test_render_states_max_tokens_16_on_034(version: str, stated: bool) -> None:
    async with asgi_client(argv(version)) as client:
        (default,) = (await client.post("/v1/completions/render", json={"prompt": "hi"})).json()
        chat = {"messages": HI, "max_tokens": 16}
        sixteen = (await client.post(CHAT_RENDER, json=chat)).json()
        chat["max_tokens"] = 4
        four = (await client.post(CHAT_RENDER, json=chat)).json()
    if stated:
        assert list(default["sampling_params"])[-1] == "max_tokens"
        assert default["sampling_params"]["max_tokens"] == 16
        assert list(sixteen["sampling_params"])[-1] == "max_tokens"
    else:
        assert "max_tokens" not in default["sampling_params"]
    assert list(four["sampling_params"])[-1] != "max_tokens", "a value not 16 keeps its place"


# -- derender answers (0.33, 0.34) -------------------------------------------------------------
@pytest.mark.parametrize("version", ["0.32", *NEW])
async def test_derender_choices_end_with_weight_versions(version: str) -> None:
    new = version != "0.32"
    async with asgi_client(argv(version)) as client:
        whole = (await client.post(GEN, json=generate(max_tokens=2))).json()
        text = await client.post("/v1/completions/derender", json={"generate_responses": [whole]})
        chat = await client.post(
            "/v1/chat/completions/derender",
            json={"generate_response": whole, "prompt_token_ids": PROMPT},
        )
        chunk = {"request_id": "generate-tokens-x", "choices": [{"index": 0, "token_ids": [338]}]}
        streamed = await client.post(
            "/v1/completions/derender",
            json={"stream": True, "generate_chunk": chunk, "prompt_token_ids": PROMPT},
        )
    for choice in (text.json()["choices"][0], chat.json()["choices"][0]):
        assert (list(choice)[-1] == "weight_versions") is new
    out = streamed.json()["chunk"]
    assert (list(out)[-1] == "kv_transfer_params") is new
    assert (list(out["choices"][0])[-1] == "weight_versions") is new
    message = chat.json()["choices"][0]["message"]
    assert ("annotations" in message) is (version != "0.34")


# -- the abort body (0.34) ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "errors", "param"),
    [
        ({}, ["missing"], "body.request_ids"),
        ({"request_ids": [1]}, ["string_type", "string_type"], "body.request_ids"),
        ({"request_ids": None}, ["string_type", "list_type"], "body.request_ids"),
        ("x", ["model_type"], "body"),
    ],
)
async def test_034_validates_the_abort_body(body: Any, errors: list[str], param: str) -> None:
    for path, flags in ((ABORT, SO), ("/abort_requests", ["--tokens-only"])):
        async with asgi_client([*flags, "--mock-vllm-version", "0.34"]) as client:
            r = await client.post(path, json=body)
        error = r.json()["error"]
        assert r.status_code == 400 and error["type"] == "Bad Request", r.text
        assert error["param"] == param
        found = [part.split("'")[0] for part in error["message"].split("'type': '")[1:]]
        assert found == errors, error["message"]


@pytest.mark.parametrize("version", ["0.32", "0.33"])
async def test_before_034_a_missing_request_ids_is_the_handler_s_400(version: str) -> None:
    async with asgi_client(argv(version)) as client:
        missing = await client.post(ABORT, json={})
        ints = await client.post(ABORT, json={"request_ids": [1]})
    assert missing.json()["error"]["message"] == "Missing 'request_ids' in request body"
    assert missing.json()["error"]["param"] is None
    assert ints.status_code == 200


@pytest.mark.parametrize(
    "body", [{"request_ids": ["a"]}, {"request_ids": "a"}, {"request_ids": []}]
)
async def test_034_still_takes_string_ids(body: dict[str, Any]) -> None:
    async with asgi_client(argv("0.34")) as client:
        r = await client.post(ABORT, json=body)
    assert r.status_code == 200 and r.content == b""


# -- prompt logprobs (0.34) -----------------------------------------------------------------
def npy(b64: str) -> tuple[tuple[int, ...], list[float]]:
    """The shape and float32 values of a base64 `.npy` (numpy is not a dependency)."""
    raw = base64.b64decode(b64)
    size = struct.unpack("<H", raw[8:10])[0]
    header = raw[10 : 10 + size].decode("latin1")
    assert "'descr': '<f4'" in header
    shape = tuple(int(n) for n in header.split("(")[1].split(")")[0].split(",") if n.strip())
    data = raw[10 + size :]
    return shape, list(struct.unpack(f"<{len(data) // 4}f", data))


async def test_034_scores_prompt_logprob_token_ids() -> None:
    rows = [[5, 6], [5, -1], [5], [5, 6]]
    async with asgi_client(argv("0.34")) as client:
        r = await client.post(GEN, json=generate(max_tokens=1, prompt_logprob_token_ids=rows))
        again = await client.post(GEN, json=generate(max_tokens=1, prompt_logprob_token_ids=rows))
    assert r.status_code == 200, r.text
    shape, values = npy(r.json()["prompt_token_id_logprobs"])
    assert shape == (4, 2)
    assert [math.isinf(v) for v in values] == [False, False, False, True, False, True, False, False]
    assert all(v < 0 for v in values)
    assert again.json()["prompt_token_id_logprobs"] == r.json()["prompt_token_id_logprobs"]


@pytest.mark.parametrize(
    ("params", "param", "text"),
    [
        ({"prompt_logprob_token_ids": [[5]] * 3}, "prompt_logprob_token_ids", "has 3 rows, but"),
        ({"prompt_logprob_token_ids": [[5]] * 4, "prompt_logprob_start": 1}, None, "has 4 rows"),
        ({"prompt_logprob_token_ids": [[5, 2048]] * 4}, None, "out-of-vocab"),
        ({"prompt_logprob_token_ids": [list(range(21))] * 4}, None, "greater than max allowed"),
        ({"prompt_logprobs": 1, "prompt_logprob_start": 4}, None, "less than prompt_len - 1 (4)"),
        ({"prompt_logprob_start": 1}, None, "requires prompt_logprobs or prompt_logprob_token_ids"),
        ({"prompt_logprobs": 1, "prompt_logprob_start": -1}, None, "must be non-negative"),
    ],
)
async def test_034_prompt_logprob_checks(
    params: dict[str, Any], param: str | None, text: str
) -> None:
    async with asgi_client(argv("0.34")) as client:
        r = await client.post(GEN, json=generate(max_tokens=1, **params))
    assert r.status_code == 400 and text in r.json()["error"]["message"], r.text
    if param is not None:
        assert r.json()["error"]["param"] == param


async def test_034_prompt_logprob_start_with_prompt_logprobs_alone() -> None:
    async with asgi_client(argv("0.34")) as client:
        r = await client.post(
            GEN, json=generate(max_tokens=1, prompt_logprobs=1, prompt_logprob_start=2)
        )
    plp = r.json()["prompt_logprobs"]
    assert plp[:3] == [None, None, None] and all(plp[3:]) and len(plp) == len(PROMPT)


@pytest.mark.parametrize("version", ["0.32", "0.33"])
async def test_before_034_prompt_logprob_ids_need_the_v2_runner(version: str) -> None:
    async with asgi_client(argv(version)) as client:
        ids = await client.post(
            GEN, json=generate(max_tokens=1, prompt_logprob_token_ids=[[5]] * 4)
        )
        start = await client.post(
            GEN, json=generate(max_tokens=1, prompt_logprobs=1, prompt_logprob_start=1)
        )
    assert "V2 model runner" in ids.json()["error"]["message"]
    assert "requires prompt_logprob_token_ids" in start.json()["error"]["message"]


# -- dev mode's pause (0.33) ----------------------------------------------------------------
@pytest.mark.parametrize("version", NEW)
async def test_paused_engine_refuses_new_requests(version: str) -> None:
    async with asgi_client(argv(version), DEV) as client:
        assert (await client.post("/pause")).json() == {"status": "paused"}
        assert (await client.get("/is_paused")).json() == {"is_paused": True}
        whole = await client.post(GEN, json=generate(max_tokens=2))
        streamed = await client.post(GEN, json={**generate(max_tokens=2), "stream": True})
        invalid = await client.post(GEN, json=generate(max_tokens=0))
        chat = await client.post("/v1/chat/completions", json={"messages": HI, "max_tokens": 2})
        render = await client.post("/v1/completions/render", json={"prompt": "hi"})
        abort = await client.post(ABORT, json={"request_ids": []})
        assert (await client.post("/resume")).json() == {"status": "resumed"}
        after = await client.post(GEN, json=generate(max_tokens=2))
    for r in (whole, chat):
        assert r.status_code == 503
        assert r.json()["error"] == {
            "message": "Generation is paused. Please retry after it resumes.",
            "type": "ServiceUnavailableError",
            "param": None,
            "code": 503,
        }
    assert streamed.status_code == 200 and events(streamed.text)[0]["error"]["code"] == 503
    assert invalid.status_code == 400, "the checks come first"
    assert (render.status_code, abort.status_code, after.status_code) == (200, 200, 200)


async def test_keep_holds_new_requests_until_resume() -> None:
    async with asgi_client(argv("0.34"), DEV) as client:
        await client.post("/pause", params={"mode": "keep"})
        held = asyncio.create_task(client.post(GEN, json=generate(max_tokens=2)))
        await asyncio.sleep(0.2)
        assert not held.done()
        await client.post("/resume")
        assert (await held).status_code == 200


async def test_pause_query_is_validated_and_032_has_no_pause() -> None:
    async with asgi_client(argv("0.34"), DEV) as client:
        r = await client.post("/pause", params={"mode": "later"})
    assert r.status_code == 400 and r.json()["error"]["param"] == "query.mode"
    async with asgi_client(argv("0.32"), DEV) as client:
        assert (await client.post("/pause")).status_code == 404
        assert (await client.post(GEN, json=generate(max_tokens=2))).status_code == 200


# -- what the suite makes of it ------------------------------------------------------------
def suite(
    version: str, profile: str, defects: tuple[str, ...] = (), ids: tuple[str, ...] = ()
) -> Report:
    config: dict[str, Any] = dict(QUICK)
    if ids:
        config["requirement_ids"] = frozenset(ids)
    with embedded_mock(profile, ["--mock-vllm-version", version], defects, **config) as (_, c):
        return run(c)


def failed(report: Report) -> list[str]:
    return [
        r.requirement.id for r in report.requirements if r.status in (Status.FAIL, Status.ERROR)
    ]


@pytest.mark.parametrize("version", NEW)
def test_the_suite_judges_the_mock_as_the_release(version: str) -> None:
    """The suite's failures on a 0.33/0.34 mock are exactly the release's listed deviations
    (LOGP-008: k + 1 top_logprobs where the document says max(k, 1)); nothing goes stale."""
    report = suite(version, "scale-out")
    verdict = deviations.judge(report, deviations.for_version(deviations.load(), f"{version}.0"))
    assert verdict.ok, (verdict.unexpected, verdict.stale, verdict.harness_error)
    assert failed(report) == ["LOGP-008"] and report.server.version == f"{version}.0"


def test_abort_checks_judge_034_right_and_still_catch_the_defect() -> None:
    """0.34's pydantic 400s meet ABORT-005/006 as the handler's did; a server that takes a
    body without request_ids still fails ABORT-005 on the 0.34 wire."""
    ids = ("ABORT-005", "ABORT-006")
    assert not failed(suite("0.34", "scale-out", ids=ids))
    assert failed(suite("0.34", "scale-out", ("abort-missing-ids-200",), ids)) == ["ABORT-005"]
    legacy = suite("0.34", "tokens-only", ids=("ABORT-007",))
    assert not failed(legacy)


def test_logp_008_still_fails_on_its_defect() -> None:
    """The check stays the document's exact count: the 0.32 mock's defect fails it."""
    report = suite("0.32", "scale-out", ("top-logprobs-wrong-count",), ("LOGP-008",))
    assert failed(report) == ["LOGP-008"]
