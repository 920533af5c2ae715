"""The documentation: the generated API reference builds (`make docs`), and every relative
link in README.md and docs/ points at a file that exists."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import gtsteer

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "gtsteer"


def test_reference_has_a_page_for_every_module(tmp_path: Path) -> None:
    """pdoc alone follows `__all__` and would drop gtsteer.llm.client and the other submodules
    that packages do not list; scripts/build_reference.py names them all."""
    out = tmp_path / "reference"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_reference.py"), str(out)],
        check=False, capture_output=True, text=True, cwd=ROOT, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    on_disk = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for p in PACKAGE.rglob("*.py")
        if p.name != "__main__.py"
    }
    pages = {
        ".".join(p.relative_to(out).with_suffix("").parts)
        for p in out.rglob("*.html")
        if p.name != "index.html"
    }
    assert on_disk - pages == set()
    assert (out / "index.html").is_file()
    cfr = (out / "gtsteer" / "solvers" / "cfr.html").read_text()
    assert "solve_cfr" in cfr
    spec = (out / "gtsteer" / "binding" / "spec.html").read_text()
    assert "DomainSpec" in spec
    # every class and function the package root exports is documented there with its
    # docstring, the lazily imported `Advisor` too (pdoc reads the module's namespace)
    root = (out / "gtsteer.html").read_text()
    sections = dict(re.findall(r'<section id="(\w+)">(.*?)</section>', root, re.DOTALL))
    exported = [n for n in gtsteer.__all__ if callable(getattr(gtsteer, n))]
    assert [n for n in exported if 'class="docstring"' not in sections.get(n, "")] == []


LINK = re.compile(r"\]\(([^)\s]+)\)")


def _doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_relative_links_in_the_docs_resolve() -> None:
    broken = []
    for doc in _doc_files():
        if "reference" in doc.relative_to(ROOT).parts:
            continue
        for target in LINK.findall(doc.read_text()):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a URL or an anchor on the same page
            path = target.split("#", 1)[0]
            if path and not (doc.parent / path).exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
    assert broken == []


# A folder of one machine (a home, a checkout's parent) in a doc or a command a reader copies.
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|root|home|Users)/[\w.-]+")


def test_no_machine_paths_in_docs_data_or_code() -> None:
    rooms = [ROOT / "README.md", ROOT / "Makefile", *(ROOT / d for d in
             ("docs", "gtsteer", "configs", "scripts"))]
    files = [p for room in rooms for p in ([room] if room.is_file() else sorted(room.rglob("*")))
             if p.is_file() and p.suffix in {"", ".md", ".py", ".json", ".yaml", ".toml"}
             and "reference" not in p.relative_to(ROOT).parts]
    found = [f"{p.relative_to(ROOT)}: {m}" for p in files
             for m in MACHINE_PATH.findall(p.read_text(encoding="utf-8", errors="replace"))]
    assert found == []


def test_ci_builds_the_api_reference_after_the_tests() -> None:
    """`make docs` runs in CI (.ci/run), after `make test`, through the script tested above."""
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    assert "make test" in ci and "make docs" in ci
    assert ci.index("make docs") > ci.index("make test")
    recipe = re.search(r"^docs:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.M)
    assert recipe is not None and "scripts/build_reference.py" in recipe.group(1)
