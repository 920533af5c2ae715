"""The optional parts of gtsteer and the one check that says which to install.

`pip install gtsteer` is the core: solve, psro, export and eval against served and API models
(`--llm openai/...`) or the offline `fake`. What compiles or weighs gigabytes is an extra
(pyproject.toml): `local` (llama.cpp and the embedded models), `imitate` (torch and
sentence-transformers), `web` (the Werewolf server), `ray`, `gambit`. Every import of them is
lazy, and the first one a command needs goes through `require`, so a missing extra stops the
command with one line naming it (the CLI prints it and exits 2).
"""

from __future__ import annotations

import importlib.util

from gtsteer.llm.errors import MissingExtraError

#: The modules each extra brings, as imported.
EXTRAS: dict[str, tuple[str, ...]] = {
    "local": ("llama_cpp",),
    "imitate": ("torch", "sentence_transformers", "safetensors"),
    "web": ("fastapi", "uvicorn"),
    "ray": ("ray",),
    "gambit": ("pygambit",),
}


def installed(module: str) -> bool:
    """Whether `module` can be imported (found, not imported)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(module: str, extra: str, what: str, alternative: str = "") -> None:
    """Refuse `what` (e.g. "Training a distilled policy") unless `module` of `extra` can be
    imported, with `MissingExtraError` naming the extra; `alternative` ends its message.
    Only looks (imports nothing): the caller imports the module when it needs it."""
    if not installed(module):
        raise MissingExtraError(extra, what, alternative)
