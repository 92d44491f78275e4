"""Render -> generate -> derender, and multimodal input."""

from __future__ import annotations

from conformance import api
from conformance.grounds import builds_on
from conformance.outcomes import Blocked
from conformance.registry import checks
from conformance.requirements.model import MUST, Feature, Requirement, fuzz
from conformance.server.features import CHAT_RENDER, DERENDER, RENDER
from conformance.session import Session
from conformance.tito.semantics import fail

REQUIREMENTS = [
    Requirement(
        "RENDER-001",
        MUST,
        Feature.RENDER,
        "--enable-scale-out registers it, with /render, /derender",
        "render and derender answer on a scale-out server",
        expected_status=200,
        needs=("scale-out",),
        anchor="render",
        fuzz=(
            fuzz(
                130,
                operations=(
                    "renderCompletions",
                    "renderChatCompletions",
                    "derenderCompletions",
                    "derenderChatCompletions",
                ),
            ),
        ),
        diff=(
            "render-completions-text",
            "render-completions-token-prompt",
            "render-chat",
            "derender-completions",
            "derender-chat",
            "derender-minimal",
        ),
    ),
    Requirement(
        "RENDER-002",
        MUST,
        Feature.RENDER,
        "It is also the generation step of the render → generate → derender pipeline used in "
        "disaggregated serving",
        "a render result posts to generate unchanged, and its response derenders",
        expected_status=200,
        needs=("render",),
        sequences=("render-generate-derender",),
    ),
    Requirement(
        "RENDER-003",
        MUST,
        Feature.RENDER,
        '/derender only accepts output_mode: "tokens" responses and returns a 400 for text '
        "responses which are already detokenized.",
        "derender refuses a text-mode response with a 400",
        expected_status=400,
        needs=("render", "text-mode"),
        diff=("derender-text-rejected",),
    ),
    Requirement(
        "MM-001",
        MUST,
        Feature.MULTIMODAL,
        "Multimodal input, mutually exclusive.",
        "features together with content_parts is a 400",
        expected_status=400,
        needs=("generate",),
        diff=("features-and-content-parts",),
    ),
]

ASKED = {"max_tokens": 4, "temperature": 0.8, "top_p": 0.9, "min_p": 0.05, "seed": 7}
"""What the render requests set, each of them in the result; the rest of a render's
sampling_params is vLLM's default. Sampled and seeded: a greedy render leaves top_p and min_p
out (vLLM resets them), so a render that loses them would go unseen."""
DEFAULTS: dict[str, object] = {
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "repetition_penalty": 1.0,
    "top_p": 1.0,
    "min_p": 0.0,
    "stop": [],
    "stop_token_ids": [],
    "bad_words": [],
}
REQUEST_DEFAULTS: dict[str, object] = {"output_mode": "tokens", "stream": False, "priority": 0}
"""A render request that sets none of these gets vLLM's GenerateRequest defaults."""


def rendered(s: Session) -> dict:
    def make() -> dict:
        asked = {"model": s.features.model, "prompt": api.PROMPT, **ASKED}
        reply = s.client.post(RENDER, asked)
        api.status_is(reply, 200, "completions render")
        api.json_media(reply, "completions render")
        data = reply.json()  # its schema is RENDER-002's: the result must post to generate
        if not isinstance(data, list) or not data or not isinstance(data[0], dict):
            fail(f"render returned {data!r:.200}, not a non-empty list of GenerateRequest")
        return data[0]

    return s.remember("render", make)


def rendered_chat(s: Session) -> dict:
    def make() -> dict:
        messages = [{"role": "user", "content": "Hello there"}]
        reply = s.client.post(
            CHAT_RENDER, {"model": s.features.model, "messages": messages, **ASKED}
        )
        api.status_is(reply, 200, "chat completions render")
        api.json_media(reply, "chat completions render")
        data = reply.json()
        if not isinstance(data, dict):
            fail(f"chat render returned {data!r:.200}, not a GenerateRequest")
        return data

    return s.remember("render-chat", make)


def as_asked(request: dict, what: str, model: str | None) -> None:
    """A render result is the GenerateRequest its request asks for: the parameters it set, and
    vLLM's defaults for the others. One that changes a parameter changes what generate does
    with it, though it posts fine."""
    params = request.get("sampling_params")
    params = params if isinstance(params, dict) else {}
    wrong = [
        f"sampling_params.{key} is {params.get(key, 'missing')!r}, where the request asked "
        f"{value!r}"
        for key, value in (DEFAULTS | ASKED).items()
        if (key in params or key in ASKED) and params.get(key) != value
    ]
    wrong += [
        f"{key} is {request[key]!r}, where the request (which did not set it) means {value!r}"
        for key, value in REQUEST_DEFAULTS.items()
        if key in request and request[key] != value
    ]
    if model is not None and request.get("model", model) != model:
        wrong.append(f"model is {request['model']!r}, where the request named {model!r}")
    if wrong:
        fail(f"{what}: " + "; ".join(wrong))


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
    as_asked(request, "the completions render", tito.features.model)
    if request.get("token_ids") != api.PROMPT:
        fail(
            f"the completions render of the token prompt {api.PROMPT} gave token_ids "
            f"{request.get('token_ids')!r:.120}: a token prompt is its own rendering"
        )
    if tito.features.tokenizer:  # a chat template needs one (vLLM: 400 without)
        chat = rendered_chat(tito)
        api.validate("GenerateRequest", chat, "chat render response")
        as_asked(chat, "the chat render", tito.features.model)
        api.generate(tito, chat, what="generate of the chat render result")
    response = api.generate(tito, request, what="generate of the render result")
    problems = api.schema_problems("GenerateResponse", response)
    if problems:  # derender is judged on valid responses only; the rest is SCHEMA-GEN-001's
        raise Blocked("SCHEMA-GEN-001", f"the generate response is not valid: {problems[0]}")
    if not tito.features.tokenizer:
        return  # derender detokenizes: a server without a tokenizer only renders token prompts
    prompt = len(request.get("token_ids") or [])
    asked = {"generate_responses": [response], "prompt_tokens": [prompt]}
    reply = tito.client.post(DERENDER, asked)
    api.status_is(reply, 200, "derender of the generate response")
    api.json_media(reply, "derender of the generate response")
    derendered = reply.json()
    api.validate("CompletionResponse", derendered, "derender response")
    same_outcome(response, derendered, prompt)
    # the same seeded request in text mode: the server's own detokenization of those tokens
    text = api.generate(tito, {**request, "output_mode": "text"}, what="text mode of it")
    same_text(tito, response, text, derendered)


def same_outcome(response: dict, derendered: dict, prompt: int) -> None:
    """A derender turns tokens into text and keeps the rest of the answer: each choice's index
    and finish_reason, and counts the tokens it returned beside the `prompt_tokens` its
    request gave (vLLM 0.32)."""
    finished = {c.get("index"): c.get("finish_reason") for c in response.get("choices") or []}
    got = {c.get("index"): c.get("finish_reason") for c in derendered.get("choices") or []}
    if got != finished:
        fail(f"derender's choices (index: finish_reason) are {got}, the response's {finished}")
    returned = sum(len(c.get("token_ids") or []) for c in response.get("choices") or [])
    usage = derendered.get("usage") or {}
    counted = usage.get("completion_tokens")
    if counted != returned:  # the response's own count is GEN-RESP-003's
        fail(f"derender counts {counted} completion tokens; the response returned {returned}")
    if usage.get("prompt_tokens") != prompt:
        fail(
            f"derender counts {usage.get('prompt_tokens')} prompt tokens; its request gave {prompt}"
        )
    if usage.get("total_tokens") != prompt + returned:
        fail(f"derender's usage {usage} does not add up: total is not prompt + completion")


def same_text(s: Session, response: dict, text: dict, derendered: dict) -> None:
    """Derender is the detokenization text mode does in one call (tito-api.md: text "returns
    text and token IDs in a single call, without a separate derender hop"): where the text-mode
    answer carries the same tokens, each choice's derendered text is its text. (Other tokens:
    a seeded request that differs between modes is TEXT-*'s to judge, not this.)"""
    ids = {c.get("index"): c.get("token_ids") for c in response.get("choices") or []}
    twins = {c.get("index"): c for c in text.get("choices") or []}
    for choice in derendered.get("choices") or []:
        index = choice.get("index")
        twin = twins.get(index, {})
        said = twin.get("text")
        if twin.get("token_ids") != ids.get(index) or not isinstance(said, str):
            continue  # other tokens, or text mode without text: TEXT-*'s
        if choice.get("text") != said:
            builds_on(s, "GEN-RESP-001")  # ids that are not the tokens sampled: GEN-RESP-001's
            builds_on(s, "TEXT-001")  # a text that is not its tokens': TEXT-001's
            fail(
                f"derender gave choice {index} the text {choice.get('text')!r:.120}; text mode "
                f"gave the same tokens the text {said!r:.120}"
            )


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
