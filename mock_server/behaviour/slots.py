"""The stages of the mock and the slot of behaviour each one reads, with vLLM 0.32's defaults.

parse (media type, JSON) -> gate (routes, API key, disabled endpoints) -> validate (the rule
table of `mock_server.validation`) -> admit (request ids, max_tokens, aborts) -> generate
(sampling, stops, weight labels) -> build (bodies, chunks, logprobs) -> frame (SSE events)
-> write (bytes on the wire). A slot is plain data: a defect's policy (its catalogue entry's
`policy`, `mock_server.behaviour.bends`) returns a changed copy. The stages' code is
`mock_server.stages`; the slots sit down here because the rooms it drives (parsing, the
engine, the answers) read them too, and the config makes them once.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from mock_server.validation import DEFAULT_RULES

STAGES = ("parse", "gate", "validate", "admit", "generate", "build", "frame", "write")


@dataclass(frozen=True, slots=True)
class Parse:
    media_type_checked: bool = True  # anything but application/json is a 400
    bad_json_status: int = 400
    schema_error_streamed: bool = False  # a streamed request's schema error as a 200 stream


@dataclass(frozen=True, slots=True)
class Gate:
    guarded: tuple[tuple[str, bool], ...] = ()  # path -> needs the API key, overriding prefixes
    api_key_checked: bool = True
    abort_route: bool = True
    render_routes: bool = True
    legacy_abort_everywhere: bool = False  # /abort_requests also without --tokens-only
    generate_404: bool = False  # generate answers 404 under --enable-scale-out
    tokens_only_generate_disabled: bool = False
    disabled_validates_first: bool = False  # a disabled generate still validates the body
    hang_generate: bool = False
    disabled_abort_open: bool = False


@dataclass(frozen=True, slots=True)
class Validate:
    rules: frozenset[str] = DEFAULT_RULES  # names of the rows of the table in force
    default_output_mode: str = "tokens"


@dataclass(frozen=True, slots=True)
class Admit:
    request_id_header: bool = True  # X-Request-Id names the request
    request_id_body_first: bool = False
    default_max_tokens: int | None = None  # None: the remaining context
    max_tokens_extra: int = 0
    aborts_honoured: bool = True
    abort_ids_required: bool = True
    legacy_abort_acts: bool = True
    abort_on_disconnect: bool = True
    abort_on_whole_disconnect: bool = True  # a non-streamed request's client hanging up
    # under load only (`Defect.shows == "load"`): a number is the threshold past which it bends
    aborts_ignored_above: int | None = None  # requests in flight past which an abort is lost
    pins_ignored_above: int | None = None  # requests its rank holds past which a pin is moved


@dataclass(frozen=True, slots=True)
class Generate:
    n_honoured: bool = True
    seeded: bool = True
    text_seed_offset: int = 0
    greedy_rank: int = 1
    stop_token_ids_honoured: bool = True
    stop_token_ids_honoured_tokens_only: bool = True
    include_stop_str_honoured: bool = True
    skip_special_honoured: bool = True
    cut_stop_string: bool = True
    eos_stop_reason: bool = False
    stop_reason_reported: bool = True
    drop_stop_token: bool = False
    stop_string_trims: bool = False
    length_stop_reason: int | None = None
    abort_stop_reason: str | None = None
    weight_updates: bool = True
    default_label: str = "default"
    label_skew_above: int | None = None  # running past which a label change skews the spans
    resume_repeat_s: float | None = None  # seconds after /resume a new request repeats a token


@dataclass(frozen=True, slots=True)
class Build:
    logprobs_always: bool = False
    text_logprobs: bool = True  # text mode renders the text logprobs shape
    legacy_logprobs: bool = False
    top_logprobs_wrong_count: bool = False
    prompt_logprobs_leading_null: bool = True
    render_ids_as_strings: bool = False
    render_params_lost: bool = False  # the render carries vLLM's defaults, not what was asked
    derender_finish_stop: bool = False  # a derendered choice says "stop" whatever it said
    usage_first_choice_above: int | None = None  # in flight past which n > 1 usage is choice 0's


@dataclass(frozen=True, slots=True)
class Frame:
    multi_choice_chunks: bool = False
    empty_chunk: bool = False
    unended_queue_at: int | None = None  # queued behind this many: the stream never ends


@dataclass(frozen=True, slots=True)
class Write:
    abort_json_body: bool = False
    json_media: str = "application/json"  # the non-streamed generate answer's content type
    dev_abort_count_key: str = "aborted"  # the dev-mode /abort_requests answer's count key


@dataclass(frozen=True, slots=True)
class Policies:
    """One slot per stage, and per stage whether it is the default (its fast path holds)."""

    parse: Parse = Parse()
    gate: Gate = Gate()
    validate: Validate = Validate()
    admit: Admit = Admit()
    generate: Generate = Generate()
    build: Build = Build()
    frame: Frame = Frame()
    write: Write = Write()
    plain: frozenset[str] = field(default=frozenset(STAGES), init=False, compare=False)

    def __post_init__(self) -> None:
        plain = frozenset(
            f.name for f in fields(self) if getattr(self, f.name) == _DEFAULTS.get(f.name)
        )
        object.__setattr__(self, "plain", plain)


SLOTS: dict[str, type] = {
    "parse": Parse,
    "gate": Gate,
    "validate": Validate,
    "admit": Admit,
    "generate": Generate,
    "build": Build,
    "frame": Frame,
    "write": Write,
}
"""Stage -> the class of its slot."""

_DEFAULTS = {stage: slot() for stage, slot in SLOTS.items()}
