"""Render, derender and multimodal input: the disaggregated pipeline around generate."""

from __future__ import annotations

from conformance.requirements.model import MUST, Feature, Requirement, fuzz

R = Feature.RENDER
M = Feature.MULTIMODAL

REQUIREMENTS = [
    Requirement(
        "RENDER-001",
        MUST,
        R,
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
        R,
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
        R,
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
        M,
        "Multimodal input, mutually exclusive.",
        "features together with content_parts is a 400",
        expected_status=400,
        needs=("generate",),
        diff=("features-and-content-parts",),
    ),
]
