"""Render -> generate -> derender, and multimodal input."""

from __future__ import annotations

import pytest

from conformance import api
from conformance.registry import checks
from conformance.semantics import fail
from conformance.session import BLOCKED_PREFIX, Session

RENDER = "/v1/completions/render"
DERENDER = "/v1/completions/derender"


def rendered(s: Session) -> dict:
    def make() -> dict:
        reply = s.client.post(
            RENDER,
            {"model": s.features.model, "prompt": api.PROMPT, "max_tokens": 4, "temperature": 0},
        )
        api.status_is(reply, 200, "completions render")
        data = reply.json()  # its schema is RENDER-002's: the result must post to generate
        if not isinstance(data, list) or not data or not isinstance(data[0], dict):
            fail(f"render returned {data!r:.200}, not a non-empty list of GenerateRequest")
        return data[0]

    return s.remember("render", make)


@checks("RENDER-001")
def test_render_served(tito: Session) -> None:
    rendered(tito)  # demands a 200; a missing route fails with the exchange that shows it
    reply = tito.client.post(DERENDER, {"generate_responses": []})
    if reply.status in (404, 405):
        fail(f"a scale-out server must serve derender; it answered {reply.status}")


@checks("RENDER-002")
def test_pipeline(tito: Session) -> None:
    request = rendered(tito)
    api.validate("RenderCompletionResponse", [request], "render response")
    response = api.generate(tito, request, what="generate of the render result")
    problems = api.schema_problems("GenerateResponse", response)
    if problems:  # derender is judged on valid responses only; the rest is SCHEMA-GEN-001's
        pytest.skip(
            f"{BLOCKED_PREFIX} the generate response is not valid (SCHEMA-GEN-001): {problems[0]}"
        )
    if not tito.features.tokenizer:
        return  # derender detokenizes: a server without a tokenizer only renders token prompts
    reply = tito.client.post(DERENDER, {"generate_responses": [response]})
    api.status_is(reply, 200, "derender of the generate response")
    api.validate("CompletionResponse", reply.json(), "derender response")


@checks("RENDER-003")
def test_derender_refuses_text(tito: Session) -> None:
    text = api.generate(tito, api.body(3, top={"output_mode": "text"}))
    text["output_mode"] = "text"  # labelled as what it is: a wrong echo is TEXT-007's
    api.rejected(
        tito, {"generate_responses": [text]}, path=DERENDER, what="derender of a text-mode response"
    )


@checks("MM-001")
def test_features_and_content_parts(tito: Session) -> None:
    payload = api.body(
        2,
        top={
            "features": {
                "mm_hashes": {"image": ["tito"]},
                "mm_placeholders": {"image": [{"offset": 0, "length": 1}]},
            },
            "content_parts": [{"type": "image_url", "url": "http://127.0.0.1:9/none.png"}],
        },
    )
    api.rejected(tito, payload, what="features together with content_parts")
