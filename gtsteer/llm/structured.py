"""Parsing and validating structured answers, and the feedback sent back on a bad one."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ValidationError, create_model
from pydantic_core import ErrorDetails


def extract_json(raw: str) -> Any:
    """Parse the first JSON object in `raw` (models like to wrap JSON in prose or fences)."""
    text = raw.strip()
    try:
        return json.loads(text, strict=False)
    except json.JSONDecodeError:
        pass
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end <= start:
        raise ValueError("the answer contains no JSON object")
    return json.loads(text[start : end + 1], strict=False)


def problems_of(raw: str, schema: type[BaseModel]) -> tuple[BaseModel | None, list[str]]:
    """Return (value, []) when valid, else (None, human-readable problems naming fields)."""
    try:
        data = extract_json(raw)
    except (ValueError, json.JSONDecodeError) as exc:
        return None, [f"the answer was not valid JSON ({exc})"]
    try:
        return schema.model_validate(data), []
    except ValidationError as exc:
        return None, [_describe(err) for err in exc.errors()]


def _describe(err: ErrorDetails) -> str:
    field = ".".join(str(p) for p in err.get("loc", ())) or "the object"
    kind = err.get("type", "")
    if kind in ("literal_error", "enum"):
        expected = err.get("ctx", {}).get("expected", "")
        expected = expected.replace("'", "").replace(" or ", ", ")
        return f"`{field}` must be one of: {expected} (got {err.get('input')!r})"
    if kind == "missing":
        return f"`{field}` is missing"
    return f"`{field}`: {err.get('msg')} (got {err.get('input')!r})"


def feedback_text(raw: str, problems: list[str]) -> str:
    shown = raw if len(raw) <= 400 else raw[:400] + "..."
    return (
        f"Your previous answer was: {shown}\nIt was invalid: {'; '.join(problems)}.\n"
        "Answer again with only a corrected JSON object."
    )


def choice_model(options: list[str]) -> type[BaseModel]:
    """A one-field model whose `choice` is an enum of the options (for constrained choice)."""
    choice: Any = Literal[tuple(options)]  # built at run time, so a value, not a type to mypy
    return create_model("Choice", choice=(choice, ...))
