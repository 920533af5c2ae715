"""Build a JSON value that satisfies a (pydantic-generated) JSON schema, from a seeded RNG.

Used by the fake backend so every structured request is answerable offline. Hand-written
because no small library generates schema instances deterministically from a seed.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

WORDS = [
    "apple", "banana", "kiwi", "blueberry", "trade", "offer", "deal", "fair", "maybe", "agree",
    "think", "friend", "plan", "tomorrow", "morning", "evening", "quick", "careful", "honest",
    "clever", "idea", "share", "value", "happy", "sure", "perhaps", "listen",
]


def seeded_rng(*parts: Any) -> random.Random:
    """A random stream that is a pure function of `parts` (JSON-serialisable), in any process."""
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def fill(schema: dict[str, Any], rng: random.Random, root: dict[str, Any] | None = None) -> Any:
    root = root or schema
    if "$ref" in schema:
        name = schema["$ref"].split("/")[-1]
        return fill(root.get("$defs", {})[name], rng, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return fill(rng.choice(options), rng, root)
    if "allOf" in schema:
        return fill(schema["allOf"][0], rng, root)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: fill(sub, rng, root) for name, sub in props.items()}
    if kind == "array":
        lo = schema.get("minItems", 1)
        hi = max(lo, min(schema.get("maxItems", lo + 2), lo + 2))
        return [fill(schema.get("items", {}), rng, root) for _ in range(rng.randint(lo, hi))]
    if kind == "string":
        lo = schema.get("minLength", 1)
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
        while len(text) < lo:
            text += " " + rng.choice(WORDS)
        if "maxLength" in schema:
            text = text[: schema["maxLength"]]
        return text
    if kind == "integer":
        lo = int(schema["minimum"]) if "minimum" in schema else (
            int(schema["exclusiveMinimum"]) + 1 if "exclusiveMinimum" in schema else 0
        )
        hi = int(schema["maximum"]) if "maximum" in schema else (
            int(schema["exclusiveMaximum"]) - 1 if "exclusiveMaximum" in schema else lo + 10
        )
        return rng.randint(lo, max(lo, hi))
    if kind == "number":
        lo = float(schema.get("minimum", 0.0))
        hi = float(schema.get("maximum", lo + 10.0))
        return round(rng.uniform(lo, hi), 3)
    if kind == "boolean":
        return rng.random() < 0.5
    return None
