"""A config's `models:` block names the model of each role of a run (writer, reader, proposer);
the command line wins over it, and the summaries say which model played which role (issue 25,
item 1). Two fake model strings per run tell the roles apart through the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gtsteer.binding.spec import ConfigError
from gtsteer.cli import app
from gtsteer.domains import load_spec
from gtsteer.llm import ModelConfigError
from gtsteer.runs.models import Endpoint, pick, pick_roles

ROOT = Path(__file__).resolve().parents[2]
FRUIT = ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml"
runner = CliRunner()


def config_with(tmp_path: Path, models: object, name: str = "roles.yaml") -> Path:
    data = yaml.safe_load(FRUIT.read_text())
    data["models"] = models
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize(("models", "problem"), [
    ({"judge": "fake"}, "field `models.judge`: unknown field"),
    ({"writer": {"model": ""}}, "field `models.writer.model`"),
    ({"writer": {"model": "openai/x", "api_key": "sk-secret"}},
     "a key never goes into a config"),
    ({"reader": {"model": "openai/x", "api_key_env": "sk-live-1234"}},
     "field `models.reader.api_key_env`: Value error, must name an environment variable"),
    ({"proposer": {"model": "fake", "api_base": "http://127.0.0.1:9/v1"}},
     "`fake` runs in-process"),
])
def test_a_bad_models_block_names_its_field(tmp_path: Path, models: object, problem: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_spec(config_with(tmp_path, models))
    assert problem in str(err.value)
    assert "sk-secret" not in str(err.value) and "sk-live-1234" not in str(err.value)


def test_steering_writer_and_reader_come_from_the_config(tmp_path: Path) -> None:
    config = config_with(tmp_path, {"writer": "fake:writer", "reader": {"model": "fake:reader"}})

    def steering(*flags: str) -> dict:
        out = tmp_path / f"run{len(list(tmp_path.glob('run*')))}"
        result = runner.invoke(app, ["eval", "steering", str(config), "--steering-samples", "2",
                                     "--out", str(out), *flags])
        assert result.exit_code == 0, result.output
        assert "models: writer fake:writer (config)" in result.output
        return json.loads((out / "steering.json").read_text())

    first = steering()
    assert (first["model"], first["classifier_model"]) == ("fake:writer", "fake:reader")
    assert first["roles"] == {
        "writer": {"model": "fake:writer", "api_base": None, "source": "config"},
        "reader": {"model": "fake:reader", "api_base": None, "source": "config"}}
    # The flag wins for the reader; the writer's messages are then all answered from the
    # cache entries `fake:writer` made, so every new call is a classification by the new reader.
    second = steering("--classifier-llm", "fake:other")
    assert second["roles"]["reader"] == {"model": "fake:other", "api_base": None,
                                         "source": "given"}
    assert [s["message"] for s in second["samples"]] == [s["message"] for s in first["samples"]]
    classify = second["llm_calls"]["new_calls"]
    assert 0 < classify < first["llm_calls"]["new_calls"]
    assert steering()["llm_calls"]["new_calls"] == 0  # the config's pair again: all cached


def test_psro_proposer_comes_from_the_config_and_the_flag_wins(tmp_path: Path) -> None:
    config = config_with(tmp_path, {"writer": "fake:writer", "proposer": "fake:proposer"})
    args = ["psro", str(config), "--iterations", "1", "--candidates", "2", "-q"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert (summary["model"], summary["proposer_model"]) == ("fake:writer", "fake:proposer")
    assert {r: v["source"] for r, v in summary["roles"].items()} == {"writer": "config",
                                                                   "proposer": "config"}
    result = runner.invoke(app, [*args, "--llm", "fake", "--out", str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["roles"] == {
        "writer": {"model": "fake", "api_base": None, "source": "given"},
        "proposer": {"model": "fake:proposer", "api_base": None, "source": "config"}}


def test_solve_without_a_models_block_records_the_default(tmp_path: Path) -> None:
    result = runner.invoke(app, ["solve", str(FRUIT), "--llm", "fake", "-q", "--iterations",
                                 "10", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["roles"] == {"writer": {"model": "fake", "api_base": None, "source": "given"}}
    spec = load_spec(FRUIT)
    assert pick(spec, "writer", None)[1].source == "default"
    assert pick(spec, "reader", None, default="fake:w")[1].model == "fake:w"


def test_a_served_role_gets_its_endpoint_the_flag_wins_and_no_secret_is_recorded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = config_with(tmp_path, {"writer": {
        "model": "openai/smollm2", "api_base": "http://127.0.0.1:9/v1?token=t",
        "api_key_env": "ROLE_KEY"}, "reader": "fake:reader"})
    spec = load_spec(config)
    monkeypatch.delenv("ROLE_KEY", raising=False)
    with pytest.raises(
        ModelConfigError, match="models.writer.api_key_env ROLE_KEY: that environment"
    ):
        pick(spec, "writer", None)
    monkeypatch.setenv("ROLE_KEY", "sk-role-secret")
    writer, others, roles = pick_roles(spec, None, None, reader=None)
    assert writer.backend.api_base == "http://127.0.0.1:9/v1?token=t"
    assert others["reader"].model == "fake:reader"
    assert roles["writer"].model_dump() == {"model": "openai/smollm2",
                                            "api_base": "http://127.0.0.1:9/v1",
                                            "source": "config"}
    assert "sk-role-secret" not in json.dumps({r: v.model_dump() for r, v in roles.items()})
    # URL credentials next to the key (sent as a header) can never work: refused, not retried.
    with pytest.raises(ModelConfigError, match=r"--api-base http://127\.0\.0\.1:9/v1: the URL"
                       r" holds credentials \(user:password@\)"):
        pick_roles(load_spec(config_with(tmp_path, {"writer": {
            "model": "openai/smollm2", "api_base": "http://me:pw@127.0.0.1:9/v1",
            "api_key_env": "ROLE_KEY"}}, name="creds.yaml")), None, None)
    # --api-base on the command line beats the config's, for the config's model too, and is
    # not refused as "no served model" although --llm was not given.
    writer, _, roles = pick_roles(spec, Endpoint("http://127.0.0.1:8/v1"), None)
    assert (writer.backend.api_base, roles["writer"].api_base) == ("http://127.0.0.1:8/v1",) * 2
    bare = load_spec(FRUIT)
    with pytest.raises(ModelConfigError, match="apply to served models"):
        pick_roles(bare, Endpoint("http://127.0.0.1:8/v1"), None)
