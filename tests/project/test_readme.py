"""README.md cannot rot: every code block in it runs here, or says what it needs.

- Shell blocks: each `gtsteer ...` line runs from an empty folder on the fake model (`--llm fake`
  added where the line names no model and the command takes one; `--games N` cut to 1). A line
  that cannot run here ends with a `# needs: ...` comment; its command and every flag it uses
  must still exist. `make` lines name real targets (the demo runs the README's demo line, CI
  runs `make test`); `pip` lines name real extras.
- YAML blocks: a block opening with `# NAME.yaml` is a whole config, written to that folder
  (the shell lines use it) and loaded; a fragment says what it needs and names real fields.
- Python blocks run as written, on the fake model only; a block after a
  `<!-- needs: ... -->` comment is compiled (tests/imitation/test_advisor.py runs the Advisor's).
- No dates, no timings and no measured results in the README: those live in the pages their
  commands write (docs/TABLE1.md, docs/BENCHMARKS.md).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml

from gtsteer.binding.spec import DomainSpec
from gtsteer.cli import app

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
TEXT = README.read_text(encoding="utf-8")

FENCE = re.compile(r"(?:^<!--\s*needs:(?P<needs>[^\n]*?)-->\n)?"
                   r"^```(?P<lang>\w*)\n(?P<body>.*?)^```", re.M | re.S)
NEEDS = re.compile(r"#\s*needs:\s*(.+)$")
MODEL_FLAGS = {"--llm", "-m", "--model"}


@dataclass(frozen=True)
class Block:
    lang: str
    body: str
    needs: str | None


@dataclass(frozen=True)
class Line:
    text: str
    needs: str | None

    def __str__(self) -> str:
        return self.text.split("  #", 1)[0].strip()


def blocks(lang: str) -> list[Block]:
    return [Block(m["lang"], m["body"], (m["needs"] or "").strip() or None)
            for m in FENCE.finditer(TEXT) if m["lang"] == lang]


def shell_lines() -> list[Line]:
    """Every command of the README's shell blocks, continuation lines joined, with the need
    its trailing `# needs:` comment names."""
    lines = []
    for block in blocks("bash"):
        joined = re.sub(r"\\\n\s*", "", block.body)
        for raw in joined.splitlines():
            text = raw.strip()
            if not text or text.startswith("#"):
                continue
            need = NEEDS.search(text)
            lines.append(Line(text, need.group(1).strip() if need else None))
    return lines


def gtsteer_lines(runnable: bool) -> list[Line]:
    return [line for line in shell_lines()
            if line.text.startswith("gtsteer") and (line.needs is None) == runnable]


def command_of(args: list[str]) -> tuple[Any, list[str]]:
    """The (click) command a `gtsteer` argument list reaches, and the words that named it;
    a group has `commands` (typer carries its own copy of click, so no isinstance)."""
    command: Any = typer.main.get_command(app)
    path: list[str] = []
    for word in args:
        sub = getattr(command, "commands", {}).get(word)
        if sub is None:
            break
        command, path = sub, [*path, word]
    return command, path


def options_of(command: Any) -> set[str]:
    return {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)
            if opt.startswith("-")} | {"--help"}


def fake_args(line: Line) -> list[str]:
    """The line's arguments as run here: on the fake model, one instance."""
    args = shlex.split(line.text, comments=True)[1:]
    command, _ = command_of(args)
    if "--llm" in options_of(command) and not MODEL_FLAGS & set(args):
        args += ["--llm", "fake"]
    return [("1" if i and args[i - 1] in {"--games", "-n"} else a) for i, a in enumerate(args)]


def config_files() -> dict[str, str]:
    """The whole configs the README writes out (`# NAME.yaml` as a YAML block's first line)."""
    named = {}
    for block in blocks("yaml"):
        first = block.body.splitlines()[0]
        if m := re.fullmatch(r"#\s*(\S+\.yaml)", first.strip()):
            named[m.group(1)] = block.body
    return named


def test_the_readme_has_runnable_blocks_of_every_kind() -> None:
    assert len(gtsteer_lines(runnable=True)) >= 5
    assert config_files(), "README: a whole domain config as a YAML block"
    assert [b for b in blocks("python") if b.needs is None]
    assert {m["lang"] for m in FENCE.finditer(TEXT)} == {"bash", "yaml", "python"}


def test_every_shell_line_is_a_command_this_test_knows() -> None:
    known = ("gtsteer", "make ", "pip install ", "export ")
    assert [str(line) for line in shell_lines() if not line.text.startswith(known)] == []


@pytest.mark.parametrize("line", gtsteer_lines(runnable=True), ids=str)
def test_a_readme_command_runs_on_the_fake_model(line: Line, tmp_path: Path) -> None:
    for name, body in config_files().items():
        (tmp_path / name).write_text(body, encoding="utf-8")
    env = {**os.environ, "GTSTEER_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1",
           "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-m", "gtsteer", *fake_args(line)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{line}\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}"


@pytest.mark.parametrize("line", gtsteer_lines(runnable=False), ids=str)
def test_a_line_that_needs_more_names_a_real_command_and_real_flags(line: Line) -> None:
    args = shlex.split(line.text, comments=True)[1:]
    command, path = command_of(args)
    assert path and not hasattr(command, "commands"), f"{line}: no such command"
    flags = {a.split("=", 1)[0] for a in args if a.startswith("-")}
    assert flags - options_of(command) == set(), f"{line}: unknown flags"
    config = args[len(path)]  # the configs these lines solve: shipped names
    assert (ROOT / "gtsteer" / "configs" / f"{config}.yaml").is_file(), config


def test_the_fake_run_adds_the_model_and_cuts_the_sizes() -> None:
    assert fake_args(Line("gtsteer solve x.yaml --games 10 --heldout", None)) == [
        "solve", "x.yaml", "--games", "1", "--heldout", "--llm", "fake"]
    assert fake_args(Line("gtsteer configs copy a b.yaml  # one", None)) == [
        "configs", "copy", "a", "b.yaml"]
    assert fake_args(Line("gtsteer solve x --llm openai/m", None))[-1] == "openai/m"


def test_the_configs_the_readme_writes_load(tmp_path: Path) -> None:
    from gtsteer.domains import load_spec

    for name, body in config_files().items():
        (tmp_path / name).write_text(body, encoding="utf-8")
        assert load_spec(tmp_path / name).name == yaml.safe_load(body)["name"]
        assert len(body.splitlines()) <= 30, f"{name}: the README's domain stays short"


def test_a_yaml_fragment_says_what_it_needs_and_names_real_fields() -> None:
    named = set(config_files().values())
    fragments = [b for b in blocks("yaml") if b.body not in named]
    assert fragments, "README: the `domain: module:ATTR` fragment"
    for block in fragments:
        assert NEEDS.search(block.body), block.body
        assert set(yaml.safe_load(block.body)) <= set(DomainSpec.model_fields), block.body


def test_the_python_blocks_run_on_the_fake_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GTSTEER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    for block in blocks("python"):
        code = compile(block.body, "README.md", "exec")
        if block.needs is not None:
            continue
        models = re.findall(r"""(?:llm=|LLM\()["']([^"']+)["']""", block.body)
        assert models and set(models) == {"fake"}, block.body
        exec(code, {})  # noqa: S102 - the documented example


def test_make_demo_and_make_test_do_what_the_readme_says() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^demo:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert recipe is not None and re.search(r"^test:", makefile, re.M)
    make_lines = {line.text.split("#")[0].strip() for line in shell_lines()
                  if line.text.startswith("make ")}
    assert make_lines == {"make demo", "make test"}
    demo = next(str(line) for line in shell_lines() if "what `make demo` runs" in line.text)
    demo_args = shlex.split(demo, comments=True)
    config = demo_args[2]
    assert "gtsteer solve" in recipe.group(1) and f"configs/{config}.yaml" in recipe.group(1)
    assert "--games 1" in recipe.group(1) and demo_args[3:] == ["--games", "1"]
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.startswith("#")]
    assert "make test" in ci


def test_the_extras_the_readme_installs_exist() -> None:
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"])
    installed = {m for line in shell_lines() if line.text.startswith("pip install ")
                 for m in re.findall(r"\.\[(\w+)\]", line.text)}
    assert {"local", "imitate", "web", "all"} <= installed <= extras
    install = TEXT[TEXT.index("## Install"):TEXT.index("## Your model")]
    assert {"ray", "gambit"} <= set(re.findall(r"\w+", install)) and {"ray", "gambit"} <= extras


MONTHS = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?"
DATE = re.compile(rf"\b\d{{1,2}} {MONTHS}|\b{MONTHS} \d{{1,2}}\b|\b20\d\d-\d\d-\d\d\b"
                  r"|\b(?:19|20)\d\d\b")
TIMING = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?\s?(?:ms|s|sec|seconds?|min|minutes?|h|hours?)\b"
                    r"|\b(?:seconds|minutes|hours)\b", re.I)
# A measured result in prose: a signed number, a percentage, an interval of numbers.
RESULT = re.compile(r"(?<![\w-])[+-]\d+(?:\.\d+)?|\d+(?:\.\d+)?\s?%|\[[+-]?\d+(?:\.\d+)?, ")


def prose() -> str:
    return FENCE.sub("", TEXT)


def test_the_readme_has_no_dates_timings_or_results() -> None:
    assert DATE.findall(TEXT) == []
    assert TIMING.findall(TEXT) == []
    assert RESULT.findall(prose()) == []
    # What the issue found there (issue 59): one VM's demo timings, one instance's narrative.
    for quoted in ("126 s", "191 s", "311 s", "in-sample +5.00", "Iris", "Frank"):
        assert quoted not in TEXT


@pytest.mark.parametrize("text", [
    "measured 3 Dec 2026", "on Dec 2", "2026-12-03", "in 2025", "took 126 s",
    "about 10 minutes", "1.5h", "a few seconds"])
def test_the_date_and_timing_checks_see_them(text: str) -> None:
    assert DATE.search(text) or TIMING.search(text)


@pytest.mark.parametrize("text", ["gain +2.75 over any", "48% of messages", "[+0.81, +2.05]"])
def test_the_result_check_sees_them(text: str) -> None:
    assert RESULT.search(text)


@pytest.mark.parametrize("text", ["Python 3.11", "arXiv 2402.01704", "--games 10",
                                  "http://127.0.0.1:8000/v1", "from -10 to 10", "2 seeds"])
def test_the_checks_leave_versions_flags_and_urls_alone(text: str) -> None:
    assert not DATE.search(text) and not TIMING.search(text)


TABLE1 = ROOT / "docs" / "TABLE1.md"
#: A row of one of docs/TABLE1.md's declared primary-contrast tables: its domain, and the first
#: signed interval on the line (policy − greedy; the S cell's `[2, 1, 1]` is unsigned).
PRIMARY_ROW = re.compile(r"^\| `(?P<domain>[\w-]+)` \|.*?"
                         r"\[(?P<low>[+-][\d.]+), (?P<high>[+-][\d.]+)\]")


def primary_contrasts() -> list[tuple[str, float, float, bool]]:
    """(domain, low, high, partial) of every declared primary contrast docs/TABLE1.md prints."""
    page = TABLE1.read_text(encoding="utf-8")
    rows = []
    for section in re.split(r"^### ", page, flags=re.M)[1:]:
        if section.startswith("Primary contrast"):
            for line in section.splitlines():
                if (found := PRIMARY_ROW.match(line)):
                    rows.append((found["domain"], float(found["low"]), float(found["high"]),
                                 "finished |" in line))
    return rows


def test_the_readme_sentence_on_results_agrees_with_table1() -> None:
    # The README states the primary contrasts in words, not numbers (no results in the README):
    # this keeps the words true to docs/TABLE1.md when a row is measured again.
    rows = primary_contrasts()
    assert {d for d, *_ in rows} >= {"trade_fruit_offer", "schedule_meeting_dow",
                                     "schedule_meeting_opposed"}
    assert not [d for d, *_, partial in rows if partial], "a partial row is no result yet"
    sentence = " ".join(prose().split("In one sentence:")[1].split("\n\n")[0].split())
    found = {"below 0" if high < 0 else "above 0" if low > 0 else "holds 0"
             for _, low, high, _ in rows}
    assert {w for w in ("holds 0", "below 0", "above 0") if w in sentence} == found
