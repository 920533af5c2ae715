"""Build the API reference (HTML) from gtsteer's docstrings with pdoc: `make docs`.

    python scripts/build_reference.py [OUT_DIR]     # default docs/reference/ (not committed)

pdoc alone walks only the submodules a package lists in `__all__`, and `gtsteer.llm`,
`gtsteer.solvers` and the other rooms list their public names there, not their modules; so
this script names every module itself (all of them, `__main__` aside: importing it runs the
CLI). Docstrings are read as Markdown, the way they are written (`code` in backticks).
"""

from __future__ import annotations

import pkgutil
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "docs" / "reference"


def gtsteer_modules() -> list[str]:
    """Every module of the gtsteer package, by dotted name, in import-path order."""
    import gtsteer

    names = ["gtsteer"]
    for info in pkgutil.walk_packages(gtsteer.__path__, "gtsteer."):
        if info.name.rpartition(".")[2] != "__main__":
            names.append(info.name)
    return names


def build(out_dir: Path) -> list[str]:
    """Write the reference into `out_dir` (index.html plus one page per module); return the
    modules documented."""
    import pdoc
    import pdoc.render

    modules = gtsteer_modules()
    import gtsteer

    for name in gtsteer.__all__:  # the root's lazy names, resolved into its namespace for pdoc
        getattr(gtsteer, name)
    pdoc.render.configure(docformat="markdown")
    with warnings.catch_warnings():
        # pdoc also reaches the modules a package lists in `__all__`; naming them again is meant.
        warnings.filterwarnings("ignore", message="The module specification .* adds a module")
        pdoc.pdoc(*modules, output_directory=out_dir)
    return modules


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        print("usage: build_reference.py [OUT_DIR]", file=sys.stderr)
        return 2
    out = Path(argv[0]) if argv else DEFAULT_OUT
    modules = build(out)
    print(f"{len(modules)} modules -> {out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
