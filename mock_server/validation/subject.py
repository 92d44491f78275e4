"""What the rows of the validate table read, and what a row is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mock_server.wire.errors import ApiError


@dataclass
class Subject:
    """What the rows read: the parsed request, the raw sampling params, the server."""

    req: Any  # request.GenerateRequest
    sp: dict[str, Any]
    cfg: Any  # config.MockConfig
    rank: int | None = None
    parsed: dict[str, Any] | None = None  # the ignored fields, typed (extra_fields)

    @property
    def s(self) -> Any:
        return self.req.sampling

    def ints(self, key: str) -> list[int] | None:
        """A list-of-ints field as sent (its types already checked), else None."""
        value = self.sp.get(key)
        return value if isinstance(value, list) else None


Check = Callable[[Subject], ApiError | None]


@dataclass(frozen=True)
class Rule:
    name: str
    field: str
    level: str  # schema, sampling, serving, engine
    vllm: str  # what vLLM 0.32 answers, in words
    check: Check | None = None  # None: the parser reads the rule by name


def engine_error(message: str, param: str | None = None) -> ApiError:
    """An input-processor rejection: a streamed request gets it as a 200 stream."""
    return ApiError(400, message, "BadRequestError", param, engine_side=True)
