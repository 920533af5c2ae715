"""Per-role private information in YAML (issue 60 item 6): `private_info` keyed by the roles
of `players` gives each player its own notes, a fixed text or examples to draw from; a
YAML-only domain then solves, and each player's prompt holds its own notes and nobody else's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gtsteer.binding import ConfigError, make_instance
from gtsteer.binding.prompts import message_prompt
from gtsteer.cli import app
from gtsteer.domains import load_game, load_spec, spec_from_dict

runner = CliRunner()

#: A YAML-only domain as an author writes it outside the repository: the seller knows its
#: lowest price, the buyer its budget.
BIKES = {
    "name": "bike_haggle",
    "players": ["seller", "buyer"],
    "names": ["Ada", "Ben"],
    "actions": {"stance": ["firm", "soft", "any"]},
    "private_info": {
        "seller": {"lowest_price": "You will not sell below $300."},
        "buyer": {"budget": ["You can pay at most $250.", "You can pay at most $350."]},
    },
    "scenario": "{name0} sells a bike to {name1}.",
    "message_prompt": ("{scenario}\n{name}'s notes: {private_info}\n"
                       "{transcript}{instruction}{name}:"),
    "num_llm_seeds": 1,
    "num_max_replies": 1,
    "payoff": {"min": 0, "max": 10, "prompt": "{private_info_all}\n{transcript}"},
}
SELLER, BUYER = "$300", "You can pay at most $"


def write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "bike_haggle.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_each_role_gets_its_own_notes_in_its_own_prompt(tmp_path: Path) -> None:
    game = load_game(write(tmp_path, BIKES), llm="fake")
    spec, instance = game.spec, game.instance
    seller, buyer = instance.private_info
    assert seller == {"lowest_price": "You will not sell below $300."}
    assert list(buyer) == ["budget"] and buyer["budget"] in BIKES["private_info"]["buyer"]["budget"]
    prompts = [message_prompt(spec, instance, [], p, spec.any_instruction()) for p in (0, 1)]
    assert SELLER in prompts[0] and BUYER not in prompts[0]
    assert BUYER in prompts[1] and SELLER not in prompts[1]
    # the draw is the seeded generator's: another instance may draw the other budget
    drawn = {make_instance(spec, i).private_info[1]["budget"] for i in range(20)}
    assert drawn == set(BIKES["private_info"]["buyer"]["budget"])


def test_a_yaml_only_config_with_per_role_notes_solves(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, ["solve", str(write(tmp_path, BIKES)), "--llm", "fake",
                                 "--games", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["num_solved"] == 2 and summary["num_failed"] == 0, summary


def test_a_role_that_is_not_a_player_is_a_config_error_naming_the_field(tmp_path: Path) -> None:
    bad = {**BIKES, "private_info": {"seller": {"floor": "$300"}, "byer": {"budget": "$250"}}}
    with pytest.raises(ConfigError, match=r"field `private_info`.*`byer`.*seller.*buyer"):
        load_spec(write(tmp_path, bad))
    result = runner.invoke(app, ["check", str(tmp_path / "bike_haggle.yaml"), "--llm", "fake"])
    assert result.exit_code == 2 and "private_info" in result.output and "byer" in result.output


@pytest.mark.parametrize(("private_info", "named"), [
    ({"seller": {"floor": "$300"}, "stance": ["firm"]}, r"field `private_info`: .*not both"),
    ({"seller": {"floor": 300}}, r"field `private_info\.seller\.floor`"),
    ({"seller": {"floor": []}}, r"private_info.*without examples.*seller\.floor"),
])
def test_malformed_per_role_notes_name_the_field(private_info: dict, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        spec_from_dict({**BIKES, "private_info": private_info}, "bikes.yaml")


def test_a_domain_that_deals_private_info_refuses_per_role_notes() -> None:
    data = yaml.safe_load(Path("gtsteer/configs/schedule_meeting_dow.yaml").read_text())
    data["private_info"] = {"proposer": {"notes": "Prefer Monday."}}
    with pytest.raises(ConfigError, match="field `private_info`.*schedule_meeting.*generates"):
        spec_from_dict(data, "meeting.yaml")
