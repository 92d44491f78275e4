"""`--mock-vllm-version 0.30|0.31`: each point of vllm-versions.md's feature table, over HTTP.

0.30.0 and 0.31.0 answer alike on every TITO point but the tokens-only stop-string text and
two top-level keys; 0.32 (the default) must stay exactly what it was.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import respx

from mock_server import transforms
from mock_server.behaviour.config import FastPaths, MockConfig, parse_args
from mock_server.behaviour.releases import DETOKENIZE_STOP, RELEASES, TOKENS_ONLY_STOP
from mock_server.harness.respx_routes import add_routes
from mock_server.harness.testing import asgi_client, running_server
from mock_server.harness.tito_mock import TitoMock
from mock_server.transforms.transformers import KINDS

pytestmark = pytest.mark.anyio
GEN = "/inference/v1/generate"
ABORT = "/inference/v1/abort_requests"
OLD = ("0.30", "0.31")
SO = ["--enable-scale-out"]
TOK = ["--tokens-only"]
BODY: dict[str, Any] = {"token_ids": [1, 2, 3], "sampling_params": {"max_tokens": 4, "seed": 7}}
NOT_FOUND = {"detail": "Not Found"}
BODY_030 = [
    "request_id", "model", "created", "choices", "usage", "prompt_logprobs", "prompt_token_ids",
    "mm_placeholders", "kv_transfer_params", "ec_transfer_params",
]  # fmt: skip
BODY_031 = [
    "request_id", "model", "created", "choices", "usage", "prompt_logprobs",
    "prompt_token_id_logprobs", "prompt_token_ids", "mm_placeholders", "metrics",
    "kv_transfer_params", "ec_transfer_params",
]  # fmt: skip
CHOICE_OLD = ["index", "logprobs", "finish_reason", "token_ids", "routed_experts", "sampling_mask"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def with_params(**params: Any) -> dict[str, Any]:
    return {**BODY, "sampling_params": {**BODY["sampling_params"], **params}}


def events(text: str) -> list[Any]:
    """The SSE events of a buffered stream: JSON objects, then the final "[DONE]"."""
    out: list[Any] = []
    for block in text.split("\n\n"):
        if block.startswith("data: "):
            data = block[6:]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


async def post(argv: list[str], path: str, body: Any, **kw: Any) -> httpx.Response:
    async with asgi_client(argv) as client:
        return await client.post(path, json=body, **kw)


# -- flags -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("flag", "version"), [("0.30", "0.30.0"), ("0.31.0", "0.31.0"), ("0.32", "0.32.0")]
)
def test_the_flag_takes_short_and_full_versions(flag: str, version: str) -> None:
    assert parse_args(["--mock-vllm-version", flag], {}).release.version == version


def test_the_default_is_032_with_integer_logprobs() -> None:
    cfg = parse_args([], {})
    assert cfg.release is RELEASES["0.32"] and cfg.mock_logprobs_format == "integer"
    assert parse_args(["--mock-logprobs-format", "legacy"], {}).mock_logprobs_format == "legacy"


@pytest.mark.parametrize("version", OLD)
def test_old_releases_imply_legacy_logprobs(version: str) -> None:
    cfg = parse_args(["--mock-vllm-version", version], {})
    assert cfg.mock_logprobs_format == "legacy"
    assert MockConfig(release=RELEASES[version]).mock_logprobs_format == "legacy"
    argv = ["--mock-vllm-version", version, "--mock-logprobs-format", "legacy"]
    assert parse_args(argv, {}).mock_logprobs_format == "legacy"


@pytest.mark.parametrize(
    "argv",
    [
        ["--mock-vllm-version", "0.29"],
        ["--mock-vllm-version", "0.31.1"],
        ["--mock-vllm-version", "0.31", "--mock-logprobs-format", "integer"],
    ],
)
def test_bad_version_flags_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv, {})
    assert exc.value.code == 2


# -- GET /version and the response keys -------------------------------------------------
@pytest.mark.parametrize("version", ["0.30", "0.31", "0.32"])
async def test_version_endpoint(version: str) -> None:
    async with asgi_client(["--mock-vllm-version", version]) as client:
        assert (await client.get("/version")).json() == {"version": f"{version}.0"}


@pytest.mark.parametrize(("version", "keys"), [("0.30", BODY_030), ("0.31", BODY_031)])
async def test_response_keys_and_order(version: str, keys: list[str]) -> None:
    r = await post([*SO, "--mock-vllm-version", version], GEN, {**BODY, "return_token_ids": True})
    assert r.status_code == 200
    body = r.json()
    assert list(body) == keys
    assert list(body["choices"][0]) == CHOICE_OLD
    assert body["prompt_token_ids"] == [1, 2, 3]
    assert list(body["usage"]) == [
        "prompt_tokens", "total_tokens", "completion_tokens", "prompt_tokens_details",
        "completion_tokens_details",
    ]  # fmt: skip


# -- stop_reason, weight_versions -------------------------------------------------------
@pytest.mark.parametrize("version", OLD)
async def test_stop_token_match_has_no_stop_reason(version: str) -> None:
    argv = [*SO, "--mock-vllm-version", version]
    first = (await post(argv, GEN, BODY)).json()["choices"][0]["token_ids"]
    stopped = (await post(argv, GEN, with_params(stop_token_ids=[first[1]]))).json()
    choice = stopped["choices"][0]
    assert choice["finish_reason"] == "stop" and choice["token_ids"] == first[:2]
    assert "stop_reason" not in choice and "weight_versions" not in choice


@pytest.mark.parametrize("version", OLD)
async def test_no_weight_versions_even_in_dev_mode(version: str) -> None:
    async with asgi_client(
        [*SO, "--mock-vllm-version", version], {"VLLM_SERVER_DEV_MODE": "1"}
    ) as c:
        assert (
            await c.post("/update_weight_version", json={"new_version": "v2"})
        ).status_code == 200
        assert (await c.get("/weight_info")).json() == {"weight_version": "v2"}
        choice = (await c.post(GEN, json=BODY)).json()["choices"][0]
        assert "weight_versions" not in choice


# -- output_mode: an unknown field -------------------------------------------------------
@pytest.mark.parametrize("version", OLD)
@pytest.mark.parametrize("flags", [SO, TOK])
@pytest.mark.parametrize("mode", ["text", "bogus", None, "tokens"])
async def test_output_mode_is_ignored(version: str, flags: list[str], mode: Any) -> None:
    argv = [*flags, "--mock-vllm-version", version]
    plain = (await post(argv, GEN, BODY)).json()
    r = await post(argv, GEN, {**BODY, "output_mode": mode})
    assert r.status_code == 200
    body = r.json()
    assert "output_mode" not in body and "text" not in body["choices"][0]
    assert body["choices"][0]["token_ids"] == plain["choices"][0]["token_ids"]


@pytest.mark.parametrize("version", OLD)
async def test_text_mode_with_detokenize_false_is_200(version: str) -> None:
    body = {**with_params(detokenize=False), "output_mode": "text"}
    r = await post([*SO, "--mock-vllm-version", version], GEN, body)
    assert r.status_code == 200 and "text" not in r.json()["choices"][0]


@pytest.mark.parametrize("version", OLD)
async def test_stream_chunks_have_no_output_mode(version: str) -> None:
    body = {
        **BODY,
        "output_mode": "text",
        "stream": True,
        "return_token_ids": True,
        "stream_options": {"include_usage": True},
    }
    r = await post([*SO, "--mock-vllm-version", version], GEN, body)
    chunks = events(r.text)
    assert chunks[-1] == "[DONE]"
    first, *middle, usage = chunks[:-1]
    assert list(first) == ["request_id", "choices", "usage", "prompt_token_ids"]
    assert all(list(chunk) == ["request_id", "choices", "usage"] for chunk in middle)
    assert all(list(chunk["choices"][0]) == CHOICE_OLD for chunk in [first, *middle])
    assert usage["choices"] == [] and list(usage) == ["request_id", "choices", "usage"]
    assert list(usage["usage"]) == ["prompt_tokens", "total_tokens", "completion_tokens"]
    last = middle[-1]["choices"][0]
    assert last["finish_reason"] == "length" and "weight_versions" not in last


# -- logprobs ----------------------------------------------------------------------------
@pytest.mark.parametrize("version", OLD)
@pytest.mark.parametrize("k", [0, 1, 3])
async def test_legacy_logprobs_sampled_first(version: str, k: int) -> None:
    r = await post([*SO, "--mock-vllm-version", version], GEN, with_params(logprobs=k))
    choice = r.json()["choices"][0]
    content = choice["logprobs"]["content"]
    assert len(content) == len(choice["token_ids"])
    for token_id, entry in zip(choice["token_ids"], content, strict=True):
        assert list(entry) == ["token", "logprob", "bytes", "top_logprobs"]
        assert entry["token"] == f"token_id:{token_id}" and entry["bytes"] is None
        top = entry["top_logprobs"]
        assert len(top) == max(k, 1) and top[0]["token"] == entry["token"]
        assert all(list(t) == ["token", "logprob", "bytes"] for t in top)


@pytest.mark.parametrize("version", OLD)
async def test_streamed_logprobs_are_legacy_too(version: str) -> None:
    body = {**with_params(logprobs=1), "stream": True}
    r = await post([*SO, "--mock-vllm-version", version], GEN, body)
    entries = [e for c in events(r.text)[:-1] for e in c["choices"][0]["logprobs"]["content"]]
    assert entries and all(e["token"].startswith("token_id:") for e in entries)
    assert all("token_id" not in e and "rank" not in e for e in entries)


# -- routes: no v1 abort route, no 403 gating, the legacy abort route ------------------
@pytest.mark.parametrize("version", OLD)
@pytest.mark.parametrize("flags", [SO, TOK, [*SO, "--api-key", "k"]])
async def test_v1_abort_route_is_404_in_every_profile(version: str, flags: list[str]) -> None:
    headers = {"Authorization": "Bearer k"}
    r = await post(
        [*flags, "--mock-vllm-version", version], ABORT, {"request_ids": []}, headers=headers
    )
    assert r.status_code == 404 and r.json() == NOT_FOUND


SCALE_OUT_CALLS = [
    (GEN, BODY),
    (GEN, {"token_ids": []}),  # an invalid body is not validated either
    (GEN, "not an object"),
    (ABORT, {"request_ids": []}),
    ("/v1/completions/render", {"prompt": "hi"}),
    ("/v1/chat/completions/render", {"messages": [{"role": "user", "content": "hi"}]}),
    ("/v1/completions/derender", {}),
    ("/v1/chat/completions/derender", {}),
    ("/v1/messages/render", {}),
    ("/v1/responses/render", {}),
]


@pytest.mark.parametrize("version", OLD)
@pytest.mark.parametrize(("path", "body"), SCALE_OUT_CALLS)
async def test_without_the_flags_the_routes_do_not_exist(
    version: str, path: str, body: Any
) -> None:
    r = await post(["--mock-vllm-version", version], path, body)
    assert r.status_code == 404 and r.json() == NOT_FOUND


async def test_032_still_answers_403_without_the_flags() -> None:
    for version in ([], ["--mock-vllm-version", "0.32"]):
        r = await post(version, GEN, BODY)
        assert r.status_code == 403 and r.json()["error"]["type"] == "PermissionDeniedError"


@pytest.mark.parametrize("version", OLD)
async def test_the_other_routes_stay_without_the_flags(version: str) -> None:
    async with asgi_client(["--mock-vllm-version", version]) as client:
        assert (await client.get("/health")).status_code == 200
        assert (await client.post("/tokenize", json={"prompt": "hi"})).status_code == 200
        completion = {"prompt": "hi", "max_tokens": 2}
        assert (await client.post("/v1/completions", json=completion)).status_code == 200


@pytest.mark.parametrize("version", OLD)
@pytest.mark.parametrize(("flags", "status"), [(TOK, 200), (SO, 404), ([], 404)])
async def test_legacy_abort_only_with_tokens_only(
    version: str, flags: list[str], status: int
) -> None:
    argv = [*flags, "--mock-vllm-version", version]
    assert (await post(argv, "/abort_requests", {"request_ids": []})).status_code == status
    if status == 200:
        assert (await post(argv, "/abort_requests", {})).status_code == 400


# -- aborts -------------------------------------------------------------------------------
@pytest.mark.parametrize("version", OLD)
async def test_aborted_stream_stops_without_an_abort_chunk(version: str) -> None:
    body = {**with_params(max_tokens=50), "stream": True, "stream_options": {"include_usage": True}}
    headers = {"X-Mock-Abort-After-Tokens": "3"}
    r = await post([*SO, "--mock-vllm-version", version], GEN, body, headers=headers)
    chunks = events(r.text)
    assert chunks[-1] == "[DONE]"
    tokens = [c for c in chunks[:-1] if c["choices"]]
    assert len(tokens) == 3
    assert all(c["choices"][0]["finish_reason"] is None for c in tokens)


async def test_032_still_sends_the_abort_chunk() -> None:
    body = {**with_params(max_tokens=50), "stream": True}
    r = await post(SO, GEN, body, headers={"X-Mock-Abort-After-Tokens": "3"})
    last = events(r.text)[-2]["choices"][0]
    assert last["finish_reason"] == "abort" and last["token_ids"] == []


@pytest.mark.parametrize("version", OLD)
async def test_aborted_request_returns_its_partial_output(version: str) -> None:
    r = await post(
        [*SO, "--mock-vllm-version", version],
        GEN,
        with_params(max_tokens=50),
        headers={"X-Mock-Abort-After-Tokens": "3"},
    )
    choice = r.json()["choices"][0]
    assert choice["finish_reason"] == "abort" and len(choice["token_ids"]) == 3


@pytest.mark.parametrize("version", OLD)
async def test_legacy_abort_ends_a_stream_on_tokens_only(version: str) -> None:
    argv = [*TOK, "--mock-vllm-version", version, "--mock-itl-ms", "2"]
    long = {**with_params(max_tokens=2000, ignore_eos=True), "stream": True}
    with running_server(argv) as url:
        async with httpx.AsyncClient(base_url=url) as client:
            headers = {"X-Request-Id": "ab1"}
            async with client.stream("POST", GEN, json=long, headers=headers) as r:
                lines = r.aiter_lines()
                seen = [line async for line in _until_data(lines)]
                ok = await client.post(
                    "/abort_requests", json={"request_ids": ["generate-tokens-ab1"]}
                )
                assert ok.status_code == 200 and ok.content == b""
                seen += [line async for line in lines if line]
    chunks = [json.loads(line[6:]) for line in seen if line.startswith("data: {")]
    assert seen[-1] == "data: [DONE]" and len(chunks) < 2000
    assert chunks[-1]["choices"][0]["finish_reason"] is None


async def _until_data(lines: Any) -> Any:
    async for line in lines:
        if line:
            yield line
            return


@pytest.mark.parametrize("version", OLD)
async def test_streamed_n2_finishes_both_choices(version: str) -> None:
    """The 0.30/0.31 race ("list index out of range") is not reproduced (DIFFERENCES.md)."""
    body = {**with_params(n=2, temperature=1.0, max_tokens=6), "stream": True}
    for _ in range(3):
        chunks = events((await post([*SO, "--mock-vllm-version", version], GEN, body)).text)
        finished = {
            c["choices"][0]["index"] for c in chunks[:-1] if c["choices"][0]["finish_reason"]
        }
        assert finished == {0, 1} and all("error" not in c for c in chunks[:-1])


# -- tokens-only stop strings -----------------------------------------------------------
@pytest.mark.parametrize(
    ("version", "text"),
    [("0.30", DETOKENIZE_STOP), ("0.31", TOKENS_ONLY_STOP), ("0.32", TOKENS_ONLY_STOP)],
)
async def test_tokens_only_stop_strings(version: str, text: str) -> None:
    r = await post([*TOK, "--mock-vllm-version", version], GEN, with_params(stop=["x"]))
    assert r.status_code == 400
    assert r.json() == {
        "error": {"message": text, "type": "BadRequestError", "param": None, "code": 400}
    }


# -- derender -----------------------------------------------------------------------------
@pytest.mark.parametrize("version", OLD)
async def test_derender_reads_the_legacy_shape_only(version: str) -> None:
    async with asgi_client([*SO, "--mock-vllm-version", version]) as client:
        out = (await client.post(GEN, json=with_params(logprobs=1))).json()
        r = await client.post("/v1/chat/completions/derender", json={"generate_response": out})
        assert r.status_code == 200, r.text
        choice = r.json()["choices"][0]
        assert choice["logprobs"]["content"][0]["token"]  # resolved to the token's text
        assert len(choice["logprobs"]["content"]) == len(out["choices"][0]["token_ids"])
        integer = json.loads(json.dumps(out))
        entry = integer["choices"][0]["logprobs"]["content"][0]
        integer["choices"][0]["logprobs"]["content"][0] = {
            "token_id": out["choices"][0]["token_ids"][0],
            "logprob": entry["logprob"],
            "rank": 1,
            "top_logprobs": [],
        }
        r = await client.post("/v1/chat/completions/derender", json={"generate_response": integer})
        assert r.status_code == 400
        assert (
            "generate_response.choices.0.logprobs.content.0.token" in r.json()["error"]["message"]
        )


@pytest.mark.parametrize("version", OLD)
async def test_derender_ignores_output_mode(version: str) -> None:
    """Their GenerateResponse has no output_mode: a "text" one derenders (live diff, 0.30 and
    0.31: 200 text_completion), where 0.32 answers 400."""
    async with asgi_client([*SO, "--mock-vllm-version", version]) as client:
        out = (await client.post(GEN, json=BODY)).json()
        r = await client.post(
            "/v1/completions/derender",
            json={"generate_responses": [{**out, "output_mode": "text"}]},
        )
        assert r.status_code == 200, r.text


# -- render and newer sampling fields (live diffs of 2026-12-03) --------------------------
RENDER_031 = [
    "request_id", "token_ids", "token_offsets", "features", "content_parts", "sampling_params",
    "model", "return_token_ids", "stream", "stream_options", "cache_salt", "priority",
    "kv_transfer_params", "ec_transfer_params",
]  # fmt: skip


@pytest.mark.parametrize(
    ("version", "keys"),
    [("0.30", [*RENDER_031[:2], "assistant_tokens_mask", *RENDER_031[2:]]), ("0.31", RENDER_031)],
)
async def test_render_answers_the_release_keys(version: str, keys: list[str]) -> None:
    async with asgi_client([*SO, "--mock-vllm-version", version]) as client:
        chat = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
        r = await client.post("/v1/chat/completions/render", json=chat)
        assert r.status_code == 200, r.text
        assert list(r.json()) == keys
        r = await client.post("/v1/completions/render", json={"prompt": "hi", "max_tokens": 2})
        assert [list(x) for x in r.json()] == [keys]


@pytest.mark.parametrize(("version", "status"), [("0.30", 200), ("0.31", 400), ("0.32", 400)])
async def test_prompt_logprob_token_ids_per_release(version: str, status: int) -> None:
    """0.30 has no such field (ignored); 0.31's is a flat list[int] (nested lists: pydantic's
    400); 0.32's nested lists need the V2 model runner (400 BadRequestError)."""
    nested = with_params(max_tokens=1, prompt_logprob_token_ids=[[5, 6], [5, 6]])
    r = await post([*SO, "--mock-vllm-version", version], GEN, nested)
    assert r.status_code == status, r.text
    if version == "0.31":
        error = r.json()["error"]
        assert error["type"] == "Bad Request" and "int_type" in error["message"]


async def test_032_derender_still_takes_the_integer_shape() -> None:
    async with asgi_client(SO) as client:
        out = (await client.post(GEN, json=with_params(logprobs=1))).json()
        r = await client.post("/v1/completions/derender", json={"generate_responses": [out]})
        assert r.status_code == 200


# -- 0.32 is unchanged; the machinery ---------------------------------------------------
def test_032_runs_no_rewrite() -> None:
    cfg = parse_args(["--mock-vllm-version", "0.32"], {})
    assert all(transforms.active(cfg, kind) == () for kind in KINDS)
    assert RELEASES["0.32"].rewrites == () and cfg == parse_args([], {})


def test_release_rewrites_run_after_the_defects() -> None:
    cfg = parse_args(["--mock-vllm-version", "0.31", "--mock-defect", "usage-miscount"], {})
    names = [fn.__name__ for fn in transforms.active(cfg, "body")]
    assert names == ["usage_miscount", "release_shape_body"]


@pytest.mark.parametrize("stream", [False, True])
async def test_032_answers_as_before(stream: bool) -> None:
    body = {**with_params(logprobs=2, stop_token_ids=[5]), "stream": stream}
    body["return_token_ids"] = True
    answers = []
    for argv in (SO, [*SO, "--mock-vllm-version", "0.32.0"]):
        r = await post(argv, GEN, body, headers={"X-Request-Id": "same"})
        answers.append(re.sub(r'"created":\d+', '"created":0', r.text))
    assert answers[0] == answers[1]
    assert '"output_mode":"tokens"' in answers[0] and '"weight_versions":' in answers[0]


@pytest.mark.parametrize("version", OLD)
async def test_templated_chunks_equal_built_ones(version: str) -> None:
    body = {
        **with_params(max_tokens=40, n=2, temperature=1.0),
        "stream": True,
        "return_token_ids": True,
    }
    argv = [*SO, "--mock-vllm-version", version]
    same = {"X-Request-Id": "same"}
    templated = (await post(argv, GEN, body, headers=same)).text
    async with asgi_client(argv, fast=FastPaths(templates=False)) as client:
        assert (await client.post(GEN, json=body, headers=same)).text == templated


# -- pytest fixtures and respx ----------------------------------------------------------
@pytest.mark.tito_mock(vllm_version="0.31")
def test_the_marker_takes_a_version(tito_mock: TitoMock) -> None:
    with httpx.Client(transport=tito_mock.transport(), base_url="http://tito.mock") as client:
        assert client.get("/version").json() == {"version": "0.31.0"}
        assert client.post(ABORT, json={"request_ids": []}).status_code == 404


def test_the_factory_takes_a_version(tito_mock_factory: Callable[..., TitoMock]) -> None:
    mock = tito_mock_factory(vllm_version="0.30.0", flags=["--tokens-only"])
    assert mock.config.release.version == "0.30.0"
    with pytest.raises(ValueError):
        tito_mock_factory(vllm_version="0.1")


@pytest.mark.tito_mock(vllm_version="0.31")
def test_respx_routes_the_missing_abort_route_to_the_mock(tito_mock: TitoMock) -> None:
    with respx.mock(assert_all_called=False) as router:
        add_routes(router, tito_mock)
        assert httpx.post("http://tito.mock" + ABORT, json={"request_ids": []}).status_code == 404
        assert httpx.post("http://tito.mock" + GEN, json=BODY).status_code == 200


def test_respx_routes_the_unregistered_scale_out_paths(
    tito_mock_factory: Callable[..., TitoMock],
) -> None:
    mock = tito_mock_factory(vllm_version="0.30", flags=["--no-enable-scale-out"])
    with respx.mock(assert_all_called=False) as router:
        add_routes(router, mock)
        r = httpx.post("http://tito.mock" + GEN, json=BODY)
        assert r.status_code == 404 and r.json() == NOT_FOUND
