"""Run folders hold only this run's files; JSON and PNG are written one way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from solve_helpers import MIXED_2X2, ConstantBackend

import gtsteer
from gtsteer.llm import LLM
from gtsteer.runs.output import RunDirError, prepare_run_dir, run_dir, save_png, write_json


def test_rerun_with_fewer_games_leaves_no_stale_game_file(tmp_path: Path) -> None:
    llm = LLM(backend=ConstantBackend())
    gtsteer.solve(MIXED_2X2, llm=llm, games=3, iterations=50, out=tmp_path, quiet=True)
    assert sorted(p.name for p in (tmp_path / "games").glob("*.json")) == [
        "0.json", "1.json", "2.json"]
    gtsteer.solve(MIXED_2X2, llm=llm, games=1, iterations=50, out=tmp_path, quiet=True)
    assert sorted(p.name for p in (tmp_path / "games").iterdir()) == ["0.json", "0.terminals.jsonl"]
    assert json.loads((tmp_path / "summary.json").read_text())["num_games"] == 1


def test_prepare_run_dir_keeps_unrelated_files_and_rejects_a_file(tmp_path: Path) -> None:
    (tmp_path / "games").mkdir()
    (tmp_path / "games" / "9.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("mine")
    prepare_run_dir(tmp_path, subdirs=("games",))
    assert list((tmp_path / "games").iterdir()) == []
    assert (tmp_path / "notes.txt").read_text() == "mine"
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(RunDirError, match="file exists and is not a directory"):
        prepare_run_dir(blocker)


def test_write_json_and_save_png(tmp_path: Path) -> None:
    path = write_json(tmp_path / "a" / "b.json", {"z": 1, "a": [1.5]})
    assert path.read_text() == '{\n  "a": [\n    1.5\n  ],\n  "z": 1\n}\n'
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    png = save_png(fig, tmp_path / "plot.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(("kind", "path"), [
    ("solve", "results/fruit-openai_gpt-4o-mini-3"),
    ("psro", "results/fruit-psro-openai_gpt-4o-mini-3"),
    ("imitate", "results/imitate-fruit-openai_gpt-4o-mini-3"),
    ("eval-steering", "results/eval-steering/fruit-openai_gpt-4o-mini-3"),
    ("eval-reward", "results/eval-reward/fruit-openai_gpt-4o-mini-3"),
    ("eval-verdict", "results/fruit-verdict-3"),
])
def test_run_dir_gives_the_documented_default_folders(kind: str, path: str) -> None:
    assert run_dir(kind, "gtsteer/configs/fruit.yaml", "openai/gpt-4o-mini", 3) == Path(path)


def test_run_dir_rejects_an_unknown_kind() -> None:
    with pytest.raises(ValueError, match="kind: .*'sovle'"):
        run_dir("sovle", "gtsteer/configs/fruit.yaml", "local", 0)


@pytest.mark.parametrize("owned", [True, False])
def test_a_symlinked_subfolder_is_refused_and_its_target_kept(tmp_path: Path,
                                                              owned: bool) -> None:
    """Review reliability-0832c41 L10: emptying `games/` followed a link and deleted the
    target's files (in a shared /tmp, or a user's other disk)."""
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "data.csv").write_text("a,b\n")
    (precious / "7.json").write_text("{}")
    out = tmp_path / "out"
    out.mkdir()
    (out / "games").symlink_to(precious, target_is_directory=True)
    if owned:
        (out / ".gtsteer-run.json").write_text(json.dumps({"made": ["games"]}))
    with pytest.raises(RunDirError, match=r"games is a symbolic link .*never follows"):
        prepare_run_dir(out, subdirs=("games",), summary="summary.json")
    assert sorted(p.name for p in precious.iterdir()) == ["7.json", "data.csv"]
    assert (out / "games").is_symlink() and not (out / "summary.json").exists()


def test_export_into_a_folder_with_a_symlinked_games_is_one_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from gtsteer.cli import app

    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "data.csv").write_text("a,b\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "games").symlink_to(precious)
    (out / ".gtsteer-run.json").write_text(json.dumps({"made": ["games"]}))
    config = "schedule_meeting_dow"  # a shipped config, by name
    result = CliRunner().invoke(app, ["export", config, "--llm", "fake", "-q",
                                      "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "is a symbolic link" in result.output
    assert [p.name for p in precious.iterdir()] == ["data.csv"]
