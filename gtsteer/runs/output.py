"""Run folders and result files: one place decides how a run writes JSON and PNG.

A run folder belongs to one run: `prepare_run_dir` empties what an earlier run left there
(e.g. `games/5.json` from a run with more games), so every file in it describes this run.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel

#: Default run folder under results/ per kind of run: the shapes README and docs/*.md name.
RUN_DIRS = {
    "solve": "{stem}-{model}-{seed}",
    "psro": "{stem}-psro-{model}-{seed}",
    "imitate": "imitate-{stem}-{model}-{seed}",
    "eval-steering": "eval-steering/{stem}-{model}-{seed}",
    "eval-reward": "eval-reward/{stem}-{model}-{seed}",
    "eval-verdict": "{stem}-verdict-{seed}",
}


def run_dir(kind: str, config: str | Path, model: str, seed: int) -> Path:
    """The default folder of a `kind` run of `config`, the model string made path-safe."""
    if kind not in RUN_DIRS:
        raise ValueError(f"kind: expected one of {', '.join(RUN_DIRS)}, got {kind!r}")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") or "model"
    return Path("results") / RUN_DIRS[kind].format(stem=Path(config).stem, model=safe, seed=seed)


def prepare_run_dir(out: str | Path, subdirs: tuple[str, ...] = ()) -> Path:
    """Create `out` (and `subdirs`), removing every subdir's earlier content first."""
    root = Path(out)
    if root.exists() and not root.is_dir():
        raise NotADirectoryError(f"--out: {root} exists and is not a directory")
    root.mkdir(parents=True, exist_ok=True)
    for name in subdirs:
        sub = root / name
        if sub.exists():
            shutil.rmtree(sub)
        sub.mkdir(parents=True)
    return root


def write_json(path: str | Path, data: BaseModel | Any) -> Path:
    """Write a pydantic model (or plain JSON data) with indent 2 and a final newline."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, BaseModel):
        text = data.model_dump_json(indent=2)
    else:
        text = json.dumps(data, indent=2, sort_keys=True)
    target.write_text(text + "\n", encoding="utf-8")
    return target


def save_png(fig: Any, path: str | Path, dpi: int = 120) -> Path:
    """Save a matplotlib figure as PNG and close it (figures are made with the Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return target
