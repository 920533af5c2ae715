"""The example configs ship inside the package: named as well as given by path, listed by
`gtsteer configs`, copied out by `gtsteer configs copy`; the labelled data commands read ships
beside them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gtsteer.binding.shipped import CONFIG_DIR, DATA_DIR, resolve_config, shipped_configs
from gtsteer.cli import app, common
from gtsteer.domains import load_spec
from gtsteer.runs.eval_judge import DEFAULT_LABELLED
from lab.studies.werewolf_styles import DEFAULT_LABELLED as STYLE_LABELLED

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_the_configs_are_inside_the_package_and_are_package_data() -> None:
    assert CONFIG_DIR == ROOT / "gtsteer" / "configs"
    assert "schedule_meeting_dow" in shipped_configs() and len(shipped_configs()) >= 9
    assert not (ROOT / "configs").exists()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"gtsteer" = ["configs/*.yaml", "data/*.yaml"]' in pyproject


def test_the_labelled_data_commands_read_ships_in_the_package() -> None:
    assert DEFAULT_LABELLED == DATA_DIR / "judge_labelled.yaml" and DEFAULT_LABELLED.is_file()
    assert STYLE_LABELLED == DATA_DIR / "werewolf_style_labelled.yaml"
    assert STYLE_LABELLED.is_file()


def test_a_config_is_named_from_any_folder(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_spec("schedule_meeting_dow").name == "schedule_meeting_dow"
    assert load_spec("debate.yaml").name == "debate"
    out = runner.invoke(app, ["solve", "trade_fruit_tone", "--llm", "fake", "--games", "1",
                              "--iterations", "10", "--quiet", "--out", "run"])
    assert out.exit_code == 0, out.output
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["metrics"] is not None


def test_a_file_of_that_name_here_wins_over_the_shipped_config(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "debate").write_text("not: a config\n")
    assert resolve_config("debate") == Path("debate")
    assert resolve_config("sub/debate") == Path("sub/debate")  # a path, never a name


def test_an_unknown_name_lists_the_shipped_ones(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = runner.invoke(app, ["solve", "no_such_domain", "--llm", "fake"])
    assert out.exit_code == 2
    assert "no_such_domain: no such config file, nor a shipped config" in out.output
    assert "schedule_meeting_dow" in out.output


@pytest.mark.parametrize("width", [60, 200])
def test_configs_lists_every_shipped_config_with_its_domain(
        width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # One line a config whatever the terminal's width (the console is made at import, so a
    # narrow one wrapped descriptions onto lines of their own before).
    monkeypatch.setattr(common.console, "_width", width)
    out = runner.invoke(app, ["configs"])
    assert out.exit_code == 0, out.output
    assert len(out.output.splitlines()) == len(shipped_configs()) + 1
    rows = {line.split()[0]: line.split()[1] for line in out.output.splitlines()[1:] if line}
    assert rows["schedule_meeting_dow"] == "schedule_meeting" and set(rows) == set(
        shipped_configs())


def test_configs_copy_writes_the_file_out_and_never_overwrites_unasked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = runner.invoke(app, ["configs", "copy", "debate"])
    assert out.exit_code == 0, out.output
    assert (tmp_path / "debate.yaml").read_bytes() == (CONFIG_DIR / "debate.yaml").read_bytes()
    again = runner.invoke(app, ["configs", "copy", "debate"])
    assert again.exit_code == 2 and "pass --force" in again.output
    (tmp_path / "mine").mkdir()
    into = runner.invoke(app, ["configs", "copy", "schedule_meeting_dow", "mine"])
    assert into.exit_code == 0 and (tmp_path / "mine" / "schedule_meeting_dow.yaml").is_file()
    unknown = runner.invoke(app, ["configs", "copy", "nope"])
    assert unknown.exit_code == 2 and "no shipped config" in unknown.output
