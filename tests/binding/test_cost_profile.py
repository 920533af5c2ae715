"""The cost profile (`solve --profile`): each phase's calls and tokens add up to what the
expansion and the model's meter counted, cleaning's discarded text is measured, the fresh tree's
phases are apart, and a profile is refused on Ray."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from binding_support import FRUIT, fruit_spec, scripted_game
from typer.testing import CliRunner

from gtsteer.binding import cost_profile, expand_sync
from gtsteer.cli import app
from gtsteer.domains import load_game
from gtsteer.llm import run_sync
from gtsteer.llm.backends.fake import FakeBackend
from gtsteer.llm.backends.local import engine as local_engine
from gtsteer.llm.types import GenerationRequest, RawCompletion
from gtsteer.testing import ScriptedBackend


def test_phases_add_up_to_the_expansion_and_the_meter() -> None:
    game = load_game(FRUIT, llm="fake", instance=0)
    before = game.llm.usage
    with cost_profile.profiling() as profile:
        report = expand_sync(game, progress=False)
    used = game.llm.usage.minus(before)
    phases = profile.phases
    assert list(phases) == ["messages", "rewards"]  # fruit trading has no end check
    assert phases["messages"].requests == report.message_requests == 72
    assert phases["rewards"].requests == report.reward_requests == 64
    assert sum(p.new_calls for p in phases.values()) == report.new_calls == used.new_calls
    assert sum(p.prompt_tokens for p in phases.values()) == used.prompt_tokens > 0
    assert sum(p.completion_tokens for p in phases.values()) == used.completion_tokens > 0
    assert phases["messages"].messages == 72 and phases["rewards"].messages == 0
    assert sum(p.wall_s for p in phases.values()) <= profile.total_s + 0.01
    # a second expansion of the same tree is answered from memory: nothing more is counted
    with cost_profile.profiling() as again:
        expand_sync(game, progress=False)
    assert all(p.requests == 0 and p.messages == 0 for p in again.phases.values())


class RecordingBackend(ScriptedBackend):
    """Messages with a second paragraph, which cleaning drops; keeps what it wrote."""

    def __init__(self) -> None:
        super().__init__(text="Deal?\n\nAlice: (to herself) this is the aside cleaning drops.")
        self.written: list[str] = []

    async def complete(self, request: GenerationRequest,
                       json_schema: dict[str, Any] | None = None) -> RawCompletion:
        raw = await super().complete(request, json_schema)
        if json_schema is None:
            self.written.append(raw.text)
        return raw


def test_the_text_cleaning_discards_is_counted() -> None:
    backend = RecordingBackend()
    game = scripted_game(fruit_spec(), backend)
    with cost_profile.profiling() as profile:
        expand_sync(game, progress=False)
    messages = profile.phases["messages"]
    # replies to the same words are the same request: 72 messages, fewer new calls
    assert 0 < messages.messages == len(backend.written) == messages.new_calls < 72
    assert set(game.messages.values()) == {"Deal?"}
    assert messages.generated_chars == sum(len(t) for t in backend.written)
    assert messages.kept_chars == len("Deal?") * messages.messages
    share = 1 - 5 / len(backend.written[0])  # every message keeps "Deal?" of about 70 chars
    assert messages.discarded_share is not None and abs(messages.discarded_share - share) < 0.02
    assert messages.discarded_tokens == round(messages.completion_tokens * messages.discarded_share)


def test_no_profile_records_nothing_and_run_sync_carries_the_profile_into_its_thread() -> None:
    game = load_game(FRUIT, llm="fake", instance=2)
    with cost_profile.phase("messages", game.llm):  # outside profiling(): a no-op
        cost_profile.record_message("x", "", cut=False)
        expand_sync(game, progress=False)

    threads: list[str] = []

    async def inside_a_loop() -> Any:
        # a sync expansion called from a running loop: run_sync runs it in a worker thread
        def expansion() -> Any:
            threads.append(threading.current_thread().name)
            return expand_sync(load_game(FRUIT, llm="fake", instance=3), progress=False)
        return expansion()

    with cost_profile.profiling() as profile:
        report = run_sync(inside_a_loop())
    assert profile.phases["messages"].requests == report.message_requests == 72
    assert profile.phases["rewards"].requests == report.reward_requests == 64


def test_solve_profile_writes_the_fresh_tree_apart(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(app, [
        "solve", "gtsteer/configs/schedule_meeting_dow.yaml", "--llm", "fake", "--heldout",
        "--heldout-readers", "", "--profile", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "cost by phase" in result.output
    profile = json.loads((out / "profile.json").read_text())
    phases = profile["phases"]
    assert {"messages", "CFR", "fresh: messages"} <= set(phases)
    record = json.loads((out / "games" / "0.json").read_text())
    assert phases["messages"]["requests"] == record["expansion"]["message_requests"]
    fresh_calls = sum(p["new_calls"] for name, p in phases.items() if name.startswith("fresh: "))
    assert fresh_calls == record["heldout"]["new_calls"] > 0
    assert phases["CFR"]["requests"] == 0 and phases["CFR"]["wall_s"] >= 0
    # the profile leaves the records as they were: no phase lands in games/<i>.json
    assert "phases" not in record["expansion"]
    # the fake model counts no novel tokens: unknown, not 0
    assert phases["messages"]["tokens_novel"] is None


@pytest.mark.parametrize("profile", [True, False])
def test_local_models_count_tokens_during_a_profiled_run_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, profile: bool,
) -> None:
    """What the local engines' switch reads at each model call of a `solve` run, and after."""
    seen: list[bool] = []
    complete = FakeBackend.complete

    async def recording(self: FakeBackend, *args: Any, **kwargs: Any) -> RawCompletion:
        seen.append(local_engine._counting)
        return await complete(self, *args, **kwargs)

    monkeypatch.setattr(FakeBackend, "complete", recording)
    result = CliRunner().invoke(app, [
        "solve", "gtsteer/configs/schedule_meeting_dow.yaml", "--llm", "fake", "--quiet",
        "--out", str(tmp_path / "run"), *(["--profile"] if profile else [])])
    assert result.exit_code == 0, result.output
    assert len(seen) > 10 and set(seen) == {profile}
    assert local_engine._counting is False


def test_profile_is_refused_on_ray(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [
        "solve", "gtsteer/configs/schedule_meeting_dow.yaml", "--llm", "fake", "--profile",
        "--ray", "local", "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert "--profile" in result.output and "without --ray" in result.output
