"""LLM backends and the one registry of model strings.

A model string names its backend by its prefix (`local`, `local:<name or .gguf path>`, `fake`,
`fake:<name>`), as `module:Class` (a user's `Backend` subclass, imported then, also in every
Ray worker), or is a litellm id (`openai/gpt-4o-mini`, `ollama_chat/llama3.1`, ...). `kind_of`
reads it; `in_process` and `make_backend` ask nothing else."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gtsteer.llm.backends.base import Backend
from gtsteer.llm.backends.fake import FakeBackend
from gtsteer.llm.errors import ModelConfigError
from gtsteer.llm.references import ReferenceProblem, is_reference, kind_of_value, resolve


@dataclass(frozen=True)
class BackendKind:
    """A family of model strings and the `Backend` class that serves them."""

    #: `module:Class`, imported when a model of this kind is first built.
    backend: str
    #: Served over HTTP: built with the endpoint (`--api-base`, the key, the timeout), which
    #: any other kind refuses. The others run in this process (or are a user's own business).
    served: bool = False
    #: Built with `threads` (an in-process model's CPU threads, e.g. a Ray worker's CPUs).
    threaded: bool = False
    #: How `gtsteer llm info` spells its model strings.
    shown: tuple[str, ...] = ()


#: Model strings by prefix: `NAME` or `NAME:...`.
PREFIXES: dict[str, BackendKind] = {
    "local": BackendKind("gtsteer.llm.backends.local:LocalBackend", threaded=True,
                         shown=("local", "local:/path/model.gguf")),
    "fake": BackendKind("gtsteer.llm.backends.fake:FakeBackend", shown=("fake",)),
}
#: Every other string that is no `module:Class` reference.
LITELLM = BackendKind("gtsteer.llm.backends.litellm_backend:LiteLLMBackend", served=True,
                      shown=("<provider>/<model> via litellm",))
BACKEND_KINDS = (*(s for k in PREFIXES.values() for s in k.shown), "module:Class (your Backend)",
                 *LITELLM.shown)


def kind_of(model: str) -> BackendKind:
    """The kind of backend `model` names."""
    if (prefix := model.partition(":")[0]) in PREFIXES:
        return PREFIXES[prefix]
    return BackendKind(model) if is_reference(model) else LITELLM


def in_process(model: str) -> bool:
    """False for a litellm id, the only kind that takes an endpoint (--api-base, a key);
    True for `local`, `fake` and a user's `module:Class`, which are given their string only."""
    return not kind_of(model.strip()).served


def builds(model: str, backend: Backend) -> bool:
    """Whether `make_backend(model)` builds a backend of `backend`'s own class (a Ray worker
    then builds its own from the string; any other object travels as it is)."""
    cls = type(backend)
    return kind_of(model).backend == f"{cls.__module__}:{cls.__qualname__}"


def make_backend(
    model: str,
    api_base: str | None = None,
    timeout_s: float = 120.0,
    api_key: str | None = None,
    threads: int | None = None,
) -> Backend:
    """Choose a backend from a model string (see DESIGN.md, "The LLM layer"); `threads` sets
    an in-process model's threads (default: `local_threads()`), e.g. a Ray worker's CPUs."""
    model = (model or "").strip()
    if not model:
        raise ModelConfigError(
            "Empty model string. Use `local`, `fake`, or e.g. `openai/gpt-4o-mini`."
        )
    kind = kind_of(model)
    if (api_base or api_key) and not kind.served:
        raise ModelConfigError(
            f"--api-base/--api-key-env apply to served models (litellm ids such as "
            f"openai/NAME or hosted_vllm/NAME), not to {model!r}, which runs in-process."
        )
    cls = _backend_class(model, kind)
    options: dict[str, Any] = (
        {"api_base": api_base, "timeout_s": timeout_s, "api_key": api_key} if kind.served
        else {"threads": threads} if kind.threaded else {})
    if kind.backend != model:  # a class of gtsteer's, whose errors say what to do
        return cls(model, **options)
    try:  # a user's class: its failure is one line naming the model
        return cls(model)
    except Exception as exc:  # noqa: BLE001 - the user's own error, named in one line
        raise ModelConfigError(f"model {model!r}: building it failed:"
                               f" {type(exc).__name__}: {exc}") from None


def _backend_class(model: str, kind: BackendKind) -> type[Backend]:
    try:
        cls = resolve(kind.backend, "backend")
    except ReferenceProblem as exc:
        raise ModelConfigError(f"model {model!r}: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        shown = "a class" if isinstance(cls, type) else kind_of_value(cls)
        raise ModelConfigError(f"model {model!r}: {kind.backend.partition(':')[2]!r} is {shown},"
                               " not a gtsteer Backend class (a subclass of gtsteer.llm.Backend)")
    return cls


__all__ = ["BACKEND_KINDS", "Backend", "BackendKind", "FakeBackend", "builds", "in_process",
           "kind_of", "make_backend"]
