"""Weight versions: which weights sampled which output tokens."""

from __future__ import annotations

from conformance.requirements.model import MUST, Feature, Proof, Requirement, fuzz

F = Feature.WEIGHT_VERSIONS

REQUIREMENTS = [
    Requirement(
        "WV-001",
        MUST,
        F,
        "The final output of every choice carries weight_versions",
        "every non-streamed choice carries a weight_versions list",
        needs=("generate",),
        ground="weight-lists",
        fields=("weight_versions",),
    ),
    Requirement(
        "WV-002",
        MUST,
        F,
        "Ranges are half-open over output-token indexes (prompt excluded), contiguous and in "
        "generation order",
        "spans start at 0, are contiguous and non-empty, and end at len(token_ids)",
        needs=("generate",),
        ground="spans-cover",
        sequences=("label-then-generate",),
    ),
    Requirement(
        "WV-003",
        MUST,
        F,
        "With stream: true, only the last chunk of each choice carries the list, including the "
        "last chunk after an abort.",
        "each choice's last chunk carries the list, also after an abort",
        needs=("generate",),
        ground="stream-lists",
        fields=("weight_versions",),
    ),
    Requirement(
        "WV-004",
        MUST,
        F,
        "Its offsets cover the whole output.",
        "the streamed list covers every streamed token of the choice",
        needs=("generate",),
    ),
    Requirement(
        "WV-005",
        MUST,
        F,
        "Earlier chunks carry null or omit the field.",
        "no list before a choice's last chunk",
        needs=("generate",),
        fields=("weight_versions",),
    ),
    Requirement(
        "WV-006",
        MUST,
        F,
        "An output with no tokens, such as a request aborted before its first token, gets [].",
        "a zero-token output gets []",
        needs=("generate",),
    ),
    Requirement(
        "WV-007",
        MUST,
        F,
        "The labels are the ones you set with /update_weight_version or /finish_weight_update",
        "a label set with /update_weight_version labels the next requests",
        needs=("weight-labels",),
        anchor="weight-labels",
        ground="label-applied",
        fuzz=(fuzz(130, operations=("updateWeightVersion", "finishWeightUpdate")),),
        sequences=("label-then-generate",),
    ),
    Requirement(
        "WV-008",
        MUST,
        F,
        'the label is "default" until you set one.',
        'the label is "default" (or the one /weight_info reports)',
        needs=("generate",),
        fuzz=(fuzz(130, operations=("weightInfo",)),),
    ),
    Requirement(
        "WV-009",
        MUST,
        F,
        "so a request that crossed one weight update gets two",
        "a label change during a request splits its spans there",
        needs=("weight-labels",),
        proofs=(Proof.STATEMENT, Proof.BOUND),
    ),
]
