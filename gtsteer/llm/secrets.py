"""Credentials scrubbed from every text that leaves the LLM layer.

Providers, proxies and self-hosted servers echo request URLs, headers and sometimes the key in
their errors (and a misbehaving one in its answers); those texts reach stderr, result files
(`summary.json`, `games/*.json`), Werewolf's call log and the cache. Matching environment
variables by name is not enough (a key may sit in any variable `--api-key-env` names), so each
backend registers the key it actually sends, and every scrub removes the registered values
first, then whatever still looks like a credential.
"""

from __future__ import annotations

import os
import re
import threading

#: Keys shorter than this are not scrubbed as values (they would blank ordinary words); the
#: patterns below still catch them in an `Authorization` header or a `Bearer` token.
MIN_SECRET_LEN = 4
#: What OpenAI-compatible servers without auth are sent (`Endpoint.llm`): not a secret.
PLACEHOLDER_KEYS = frozenset({"no-key"})
MASK = "***"

_in_use: set[str] = set()
_lock = threading.Lock()

_HEADER = re.compile(
    r"(?i)\b(proxy-authorization|authorization|x-api-key|api-key)(['\"]?\s*[:=]\s*['\"]?)"
    r"(?:(bearer|basic|token)\s+)?[^\s'\",;&}\]]+"
)
# A token after the word Bearer outside a header ("... for Bearer <key>"); 8+ characters so
# that prose ("bearer tokens") stays as written.
_BEARER = re.compile(r"\b(Bearer|bearer|BEARER)\s+[A-Za-z0-9._~+/=-]{8,}")
_URL_CREDENTIALS = re.compile(r"(://)[^/@\s]+@")
_SECRET_PARAM = re.compile(r"(?i)\b((?:api[-_]?)?key|token|secret|password|sig)=[^&\s'\"]+")
_KEY_SHAPED = re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{8,}")
_SECRET_NAMES = ("_API_KEY", "_TOKEN", "_SECRET", "_KEY", "_PASSWORD", "_PASS")


def register_secret(value: str | None) -> None:
    """Scrub `value` (a key this process sends) from every later text."""
    if value and value not in PLACEHOLDER_KEYS and len(value) >= MIN_SECRET_LEN:
        with _lock:
            _in_use.add(value)


def _registered() -> list[str]:
    with _lock:  # longest first: a key that contains another is masked whole
        return sorted(_in_use, key=len, reverse=True)


def scrub_values(text: str) -> str:
    """`text` with every registered key masked, and nothing else changed (for model answers,
    whose other words are the model's own)."""
    for value in _registered():
        text = text.replace(value, MASK)
    return text


def scrub_secrets(text: str) -> str:
    """`text` without credentials: the keys in use, secret-named environment values, header
    values and bearer tokens, URL userinfo, secret query parameters, `sk-...`-shaped keys."""
    text = scrub_values(text)
    for name, value in os.environ.items():
        if len(value) >= 8 and name.upper().endswith(_SECRET_NAMES):
            text = text.replace(value, MASK)
    text = _HEADER.sub(
        lambda m: f"{m.group(1)}{m.group(2)}{m.group(3) + ' ' if m.group(3) else ''}{MASK}", text
    )
    text = _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", text)
    text = _URL_CREDENTIALS.sub(rf"\1{MASK}@", text)
    text = _SECRET_PARAM.sub(lambda m: f"{m.group(1)}={MASK}", text)
    return _KEY_SHAPED.sub(lambda m: f"{m.group(1)}-{MASK}", text)
