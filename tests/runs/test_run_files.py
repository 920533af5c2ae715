"""Result files are atomic, a run folder says when it is unfinished, bad paths are refused
before any work, and a run never deletes files it did not write (issue 27, items 4 and 8)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
import solve_helpers  # noqa: F401  (registers the test utility in this process)
from solve_helpers import MIXED_2X2, ConstantBackend
from typer.testing import CliRunner

import gtsteer
from gtsteer.cli import app
from gtsteer.llm import LLM, CacheError
from gtsteer.runs import solve as solve_module
from gtsteer.runs.atomic import ResultWriteError, atomic_dir, write_text
from gtsteer.runs.output import IN_PROGRESS, RunDirError, prepare_run_dir, write_json

runner = CliRunner()


def lines_of(result) -> list[str]:
    return [line for line in result.output.splitlines() if line.strip()]


# ---- atomic writes --------------------------------------------------------------------------


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path,
                                                                   monkeypatch) -> None:
    target = tmp_path / "summary.json"
    write_json(target, {"run": 1})

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(ResultWriteError, match=f"cannot write {target}: No space left"):
        write_json(target, {"run": 2})
    assert json.loads(target.read_text()) == {"run": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_a_folder_written_atomically_is_whole_or_absent(tmp_path: Path) -> None:
    target = tmp_path / "model"
    target.mkdir()
    with pytest.raises(RuntimeError, match="save failed"), atomic_dir(target) as tmp:
        (tmp / "config.json").write_text("{}")
        raise RuntimeError("save failed half-way")
    assert [p.name for p in tmp_path.iterdir()] == ["model"] and not any(target.iterdir())
    with atomic_dir(target) as tmp:
        (tmp / "config.json").write_text("{}")
        (tmp / "model.safetensors").write_bytes(b"w")
    assert sorted(p.name for p in target.iterdir()) == ["config.json", "model.safetensors"]
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_write_text_gives_the_file_the_usual_permissions(tmp_path: Path) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    made = write_text(tmp_path / "made.txt", "x")
    assert made.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777


# ---- the run folder -------------------------------------------------------------------------


def test_a_finished_run_has_its_summary_and_no_in_progress_marker(tmp_path: Path) -> None:
    llm = LLM(backend=ConstantBackend())
    gtsteer.solve(MIXED_2X2, llm=llm, games=1, iterations=20, out=tmp_path, quiet=True)
    assert (tmp_path / "summary.json").exists() and not (tmp_path / IN_PROGRESS).exists()


def test_a_rerun_that_dies_leaves_no_old_summary_beside_its_new_files(tmp_path: Path,
                                                                     monkeypatch) -> None:
    """The review's probe 61: a killed rerun left the older run's summary.json next to new
    game files. Now the old summary goes when the rerun starts and IN_PROGRESS says why."""
    llm = LLM(backend=ConstantBackend())
    gtsteer.solve(MIXED_2X2, llm=llm, games=3, iterations=20, out=tmp_path, quiet=True)
    assert json.loads((tmp_path / "summary.json").read_text())["num_games"] == 3
    real = solve_module.make_game

    def breaks_at_instance_1(spec, instance, *args, **kwargs):
        if instance.index == 1:  # a storage failure stops the whole run, as a kill would
            raise CacheError("response cache /x/cache.db: database disk image is malformed")
        return real(spec, instance, *args, **kwargs)

    monkeypatch.setattr(solve_module, "make_game", breaks_at_instance_1)
    with pytest.raises(CacheError):
        gtsteer.solve(MIXED_2X2, llm=llm, games=3, seed=5, iterations=20, out=tmp_path, quiet=True)
    assert not (tmp_path / "summary.json").exists()
    assert "not a finished result" in (tmp_path / IN_PROGRESS).read_text()
    games = sorted(p.name for p in (tmp_path / "games").iterdir())
    assert games == ["0.json", "0.terminals.jsonl"]  # this run's only finished instance
    assert json.loads((tmp_path / "games" / "0.json").read_text())["index"] == 0


def test_a_run_never_deletes_files_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "games").mkdir()
    (tmp_path / "games" / "thesis.tex").write_text("precious")
    result = runner.invoke(app, ["solve", str(MIXED_2X2), "--llm", "fake", "-q", "-k", "5",
                                 "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "thesis.tex" in result.output and "did not write" in result.output
    assert (tmp_path / "games" / "thesis.tex").read_text() == "precious"
    assert not (tmp_path / "summary.json").exists()


def test_a_folder_gtsteer_made_is_emptied_by_the_next_run(tmp_path: Path) -> None:
    prepare_run_dir(tmp_path, ("games",), summary="summary.json")
    (tmp_path / "games" / "7.json").write_text("{}")
    (tmp_path / "games" / "extra.txt").write_text("x")
    prepare_run_dir(tmp_path, ("games",), summary="summary.json")
    assert list((tmp_path / "games").iterdir()) == []


def test_old_game_files_of_a_folder_gtsteer_did_not_make_are_still_replaced(tmp_path: Path) -> None:
    (tmp_path / "games").mkdir()
    (tmp_path / "games" / "3.json").write_text("{}")
    (tmp_path / "games" / "3.terminals.jsonl").write_text("")
    prepare_run_dir(tmp_path, ("games",))
    assert list((tmp_path / "games").iterdir()) == []
    # the folder was there before the run: it stays the user's, so their files stay safe
    (tmp_path / "games" / "notes.txt").write_text("mine")
    with pytest.raises(RunDirError, match="notes.txt"):
        prepare_run_dir(tmp_path, ("games",))
    assert (tmp_path / "games" / "notes.txt").read_text() == "mine"


# ---- bad paths: one line, exit 2, before any work -------------------------------------------


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "afile"
    path.write_text("not a folder")
    return path


@pytest.mark.parametrize("command", [
    ["solve", str(MIXED_2X2), "--llm", "fake", "-q"],
    ["psro", str(MIXED_2X2), "--llm", "fake", "-q"],
    ["imitate", str(MIXED_2X2), "--llm", "fake", "-q", "--embedder", "/nonexistent/model"],
    ["eval", "steering", str(MIXED_2X2), "--llm", "fake", "-q"],
])
def test_out_naming_a_file_is_refused_in_one_line(command: list[str], a_file: Path) -> None:
    result = runner.invoke(app, [*command, "--out", str(a_file)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert f"--out: {a_file} exists and is not a directory" in " ".join(result.output.split())
    assert a_file.read_text() == "not a folder"


def test_solve_dir_naming_a_file_is_refused_before_the_embedder_loads(a_file: Path,
                                                                      tmp_path: Path) -> None:
    # the embedder path does not exist: reaching it would be another error
    result = runner.invoke(app, ["imitate", str(MIXED_2X2), "--llm", "fake", "-q",
                                 "--embedder", "/nonexistent/model", "--solve-dir", str(a_file),
                                 "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert f"--solve-dir: {a_file} is a file" in " ".join(result.output.split())
    assert not (tmp_path / "o").exists()


def test_instances_naming_a_directory_is_refused(tmp_path: Path) -> None:
    result = runner.invoke(app, ["solve", str(MIXED_2X2), "--llm", "fake", "-q",
                                 "--instances", str(tmp_path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert f"--instances: {tmp_path} is a directory" in " ".join(result.output.split())
    assert not (tmp_path / "o").exists()


def test_malformed_instances_name_the_file_and_line_without_pydantic_noise(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"index": 0}\n{"index": ')
    result = runner.invoke(app, ["solve", str(MIXED_2X2), "--llm", "fake", "-q",
                                 "--instances", str(bad), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert f"{bad} line 1: not an instance" in text and "errors.pydantic.dev" not in text


def test_instances_out_naming_a_directory_is_refused_before_generating(tmp_path: Path) -> None:
    result = runner.invoke(app, ["instances", str(MIXED_2X2), "--llm", "fake", "--num", "1",
                                 "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert f"--out: {tmp_path} is a directory" in " ".join(result.output.split())


@pytest.mark.parametrize("seed", ["99999999999999999999999", str(2**31), str(-(2**31) - 1)])
def test_a_seed_beyond_32_bits_is_a_bad_argument(tmp_path: Path, seed: str) -> None:
    """OpenSpiel reads the seed into a C++ int: 2**31 failed every instance at build."""
    result = runner.invoke(app, ["solve", str(MIXED_2X2), "--llm", "fake", "-q",
                                 "--seed", seed, "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    shown = " ".join(result.output.replace("│", " ").split())
    assert "--seed" in shown and ("less than or equal to 2147483647" in shown
                                  or "greater than or equal to -2147483648" in shown)
    assert not (tmp_path / "summary.json").exists()


def test_the_largest_32_bit_seed_solves(tmp_path: Path) -> None:
    result = runner.invoke(app, ["solve", str(MIXED_2X2), "--llm", "fake", "-q",
                                 "--seed", str(2**31 - 1), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "summary.json").read_text())["num_solved"] == 1


def test_the_driver_refuses_a_seed_beyond_32_bits(tmp_path: Path) -> None:

    with pytest.raises(ValueError, match=r"seed: must be a 32-bit integer"):
        gtsteer.solve(MIXED_2X2, llm="fake", seed=2**31, out=tmp_path, quiet=True)


def test_psro_option_errors_name_the_flag_in_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["psro", str(MIXED_2X2), "--llm", "fake", "-q",
                                 "--candidates", "0", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert len(lines_of(result)) == 1, result.output
    assert "--candidates:" in result.output and "errors.pydantic.dev" not in result.output
    nan = runner.invoke(app, ["psro", str(MIXED_2X2), "--llm", "fake", "-q",
                              "--support-tolerance", "nan", "--out", str(tmp_path / "o")])
    assert nan.exit_code == 2 and "--support-tolerance: must be a number, got nan" in nan.output


def test_an_error_with_brackets_is_printed_literally(tmp_path: Path) -> None:
    odd = tmp_path / "[/bold]" / "cfg.yaml"
    result = runner.invoke(app, ["solve", str(odd), "--llm", "fake", "-q"])
    assert result.exit_code == 2, result.output
    assert "[/bold]" in result.output
