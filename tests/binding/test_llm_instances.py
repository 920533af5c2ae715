"""LLM-written instances: validated against the spec, retried, cached, deterministic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from binding_support import write_instances
from domain_support import CONFIGS, spec_of
from typer.testing import CliRunner

from gtsteer.binding import make_instance
from gtsteer.binding.domain_checks import DomainCheckError
from gtsteer.binding.llm_instances import (
    InstanceGenerationError,
    generate_llm_instances,
    instance_prompt,
    read_instances,
)
from gtsteer.cli import app
from gtsteer.llm import LLM, Backend, GenerationRequest, RawCompletion

DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
PREFS = ", ".join(f"{d}: {i + 2}" for i, d in enumerate(DAYS))
GOOD = {"names": ["Olga", "Pavel"],
        "player0_out_of_office": "Sunday", "player0_day_preferences": PREFS,
        "player1_out_of_office": "Monday, Tuesday", "player1_day_preferences": PREFS}
BAD_DAY = {**GOOD, "player0_out_of_office": "Caturday"}


class Answers(Backend):
    """Structured answers from a list, one per call (later calls repeat the last)."""

    kind = "answers"
    supports_grammar = True

    def __init__(self, answers: list[dict]):
        super().__init__("answers")
        self.answers, self.calls = answers, 0

    async def complete(self, request: GenerationRequest, json_schema: dict | None = None):
        answer = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        return RawCompletion(text=json.dumps(answer))


def llm_of(*answers: dict) -> tuple[LLM, Answers]:
    backend = Answers(list(answers))
    return LLM("answers", backend=backend, structured_attempts=1), backend


def test_valid_answer_becomes_an_instance() -> None:
    spec = spec_of("schedule_meeting_dow")
    llm, _ = llm_of(GOOD)
    [inst] = generate_llm_instances(spec, llm, 1, seed=5)
    assert inst.names == ["Olga", "Pavel"] and inst.scenario.startswith("Olga and Pavel")
    assert inst.private_info[1] == {"out_of_office": "Monday, Tuesday", "day_preferences": PREFS}


def test_same_model_and_seed_give_the_same_instances_from_the_cache() -> None:
    spec = spec_of("schedule_meeting_dow")
    llm, backend = llm_of(GOOD)
    first = generate_llm_instances(spec, llm, 2, seed=1)
    calls = backend.calls
    assert generate_llm_instances(spec, llm, 2, seed=1) == first and backend.calls == calls


def test_invalid_answer_is_asked_again_with_the_next_seed() -> None:
    spec = spec_of("schedule_meeting_dow")
    llm, backend = llm_of(BAD_DAY, GOOD)
    [inst] = generate_llm_instances(spec, llm, 1)
    assert backend.calls == 2 and inst.private_info[0]["out_of_office"] == "Sunday"


def test_never_valid_names_the_field() -> None:
    spec = spec_of("schedule_meeting_dow")
    llm, _ = llm_of(BAD_DAY)
    with pytest.raises(InstanceGenerationError, match=r"private_info\.0\.out_of_office"):
        generate_llm_instances(spec, llm, 1, attempts=2)
    llm, _ = llm_of({**GOOD, "names": ["Olga", "Olga"]})
    with pytest.raises(InstanceGenerationError, match="field `names`"):
        generate_llm_instances(spec, llm, 1, seed=9, attempts=1)  # another seed: not cached


def test_domain_checks_guard_other_domains() -> None:
    debate = spec_of("debate")
    llm, _ = llm_of({"names": ["A", "B"], "player0_topic": "Tea is better.",
                     "player0_stance": "for", "player1_topic": "Coffee is better.",
                     "player1_stance": "against"})
    with pytest.raises(InstanceGenerationError, match="same topic"):
        generate_llm_instances(debate, llm, 1, attempts=1)
    court = spec_of("interrogation")
    llm, _ = llm_of({"names": ["A", "B"], "player0_role": "interrogator",
                     "player1_role": "suspect", "player1_type": "Maybe"})
    with pytest.raises(InstanceGenerationError, match=r"private_info\.1\.type"):
        generate_llm_instances(court, llm, 1, attempts=1)


def test_prompt_shows_seeded_examples() -> None:
    spec = spec_of("debate")
    prompt = instance_prompt(spec, [make_instance(spec, 0)])
    assert make_instance(spec, 0).private_info[0]["topic"] in prompt
    assert '"player1_stance"' in prompt and prompt.endswith("New game:")


def test_jsonl_round_trip_and_cli(tmp_path: Path) -> None:
    spec = spec_of("schedule_meeting_dow")
    llm, _ = llm_of(GOOD)
    made = generate_llm_instances(spec, llm, 2)
    assert read_instances(write_instances(made, tmp_path / "i.jsonl")) == made
    result = CliRunner().invoke(app, ["instances", str(CONFIGS / "debate.yaml"), "--llm", "fake",
                                      "--num", "1"])
    assert result.exit_code == 2 and "InstanceGenerationError" in result.output  # fake: words


def test_solve_plays_the_instances_a_file_holds(tmp_path: Path) -> None:
    spec = spec_of("schedule_meeting_dow")
    made = generate_llm_instances(spec, llm_of(GOOD)[0], 2)
    path = write_instances(made, tmp_path / "i.jsonl")
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["solve", str(CONFIGS / "schedule_meeting_dow.yaml"),
                                      "--llm", "fake", "--instances", str(path), "--out",
                                      str(out), "-k", "5", "-q"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["num_games"] == 2 and summary["instances_file"] == str(path)
    played = json.loads((out / "games" / "1.json").read_text())["instance"]
    assert played["names"] == made[1].names and played["private_info"] == made[1].private_info


def test_an_instance_file_for_another_domain_is_refused_by_field(tmp_path: Path) -> None:
    debate = spec_of("debate")
    path = write_instances([make_instance(debate, 0)], tmp_path / "d.jsonl")
    refusal = r"private_info\.0`: \S*d\.jsonl line 1: "
    with pytest.raises(DomainCheckError, match=refusal) as refused:
        read_instances(path, spec_of("schedule_meeting_dow"))
    assert str(refused.value).count("field `") == 1
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ValueError, match="no instances"):
        read_instances(tmp_path / "empty.jsonl")
    result = CliRunner().invoke(app, ["solve", str(CONFIGS / "schedule_meeting_dow.yaml"),
                                      "--llm", "fake", "--instances", str(path), "-q"])
    assert result.exit_code == 2 and "private_info.0" in result.output
