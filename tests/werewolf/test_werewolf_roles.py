"""The role table (`werewolf.roles.ROLES`) is the one source the rules, the engine, the prompts
and the web app read: a variant table changes all of them, with no second list to edit."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from werewolf_helpers import play_night, table

from gtsteer.werewolf.context import investigations
from gtsteer.werewolf.engine import begin_night, legal_targets, pending_for
from gtsteer.werewolf.prompts import night_command, system_prompt
from gtsteer.werewolf.roles import ROLES, night_roles, optional_roles
from gtsteer.werewolf.rules import Role, assign_roles, rules_text
from gtsteer.werewolf.state import GameConfig, NightDeath
from gtsteer.werewolf.web.manager import SET_BY_LOBBY


def test_every_role_has_one_entry_and_every_night_verb_one_owner():
    assert set(ROLES) == set(Role)
    assert all(spec.role is role for role, spec in ROLES.items())
    verbs = [s.night.verb for s in night_roles() if s.night]
    assert sorted(verbs) == ["abduct", "investigate", "kill", "protect"]
    assert [s.seats for s in ROLES.values()].count("rest") == 1
    for s in ROLES.values():  # whoever can kill names the cause its deaths are stored with
        if s.one_time_kill or (s.night and s.night.verb == "kill"):
            assert s.kill_cause
    for s in optional_roles():  # an optional role is switched by a setup field of its name
        assert s.name in GameConfig.model_fields and s.name in SET_BY_LOBBY


def test_a_full_table_deals_every_role_and_the_night_asks_every_verb_in_order():
    dealt = assign_roles(8, 2, [Role.MANIAC], seed=3)
    assert set(dealt) == set(ROLES) and dealt.count(Role.WEREWOLF) == 2
    night = begin_night(table("WWDTMVV"))
    assert [q for q in night.queue if not q.startswith("pack_chat:")] == [
        s.night.verb for s in night_roles() if s.night]
    # the pack chats right before the pack's own slot
    assert night.queue.index("kill") == max(i for i, q in enumerate(night.queue)
                                            if q.startswith("pack_chat:")) + 1


def test_unknown_night_verbs_and_causes_are_refused_by_the_table():
    with pytest.raises(ValueError, match="unknown cause of death 'plague'"):
        NightDeath(name="Ann", role=Role.VILLAGER, cause="plague")
    assert {NightDeath(name="Ann", role=Role.VILLAGER, cause=s.kill_cause).cause
            for s in ROLES.values() if s.kill_cause} == {"werewolves", "doctor", "detective"}


def test_a_changed_entry_reaches_rules_prompts_and_engine(monkeypatch):
    """The maniac made a one-time killer that reads good, with new texts: every reader
    follows the table."""
    maniac = ROLES[Role.MANIAC]
    assert maniac.night is not None
    variant = dataclasses.replace(
        maniac, goal="You are the trickster.", reads_evil=False, one_time_kill=True,
        kill_cause="werewolves",
        night=dataclasses.replace(maniac.night, word="spirit away", rules={
            "reference": "the trickster spirits one player away", "simple": "x"}))
    monkeypatch.setitem(ROLES, Role.MANIAC, variant)
    assert "Night, in order: the trickster spirits one player away. The werewolves" in \
        rules_text("reference")
    prompt = system_prompt("Eve", "", Role.MANIAC, [], "", "reference")
    assert "You are Eve (maniac). You are the trickster. Once per game you may kill" in prompt
    state = begin_night(table("WWDTMVV"))  # Eve is the maniac
    want = pending_for(state, "Eve", "night")
    assert set(want.actions) == {"abduct", "kill"}  # the one-time kill now comes with it
    assert "spirit away or kill" in night_command("Eve", 1, want.actions, ["x"])
    after, _ = play_night(state, {"abduct": "Gus", "kill": "Fay", "protect": "Cat",
                                  "investigate": "Eve"})
    assert [a.result for a in after.night_actions if a.verb == "investigate"] == ["good"]
    assert investigations(after, "Dan", 2) == \
        "Your investigations: evil (werewolf): none; good: Eve."


def test_a_role_left_out_of_the_table_leaves_rules_deal_and_night(monkeypatch):
    monkeypatch.delitem(ROLES, Role.MANIAC)
    assert "maniac abducts" not in rules_text("reference")
    assert "villagers, doctor, detective) and the werewolves" in rules_text("simple")
    # its setup switch goes with it (here: given, as a stored config would)
    config = GameConfig(n_players=8, maniac=True)
    assert config.optional_roles() == [] and Role.MANIAC not in assign_roles(8, 2, [], 0)
    night = begin_night(table("WWDTVVVV"))
    assert "abduct" not in night.queue


def test_legal_targets_follow_the_night_spec(monkeypatch):
    state = begin_night(table("WWDTMVV"))  # Cat is the doctor
    assert "Cat" in legal_targets(state, "Cat", "night", "protect")  # self allowed
    doctor = ROLES[Role.DOCTOR]
    assert doctor.night is not None
    monkeypatch.setitem(ROLES, Role.DOCTOR, dataclasses.replace(
        doctor, night=dataclasses.replace(doctor.night, self_target=False)))
    assert "Cat" not in legal_targets(state, "Cat", "night", "protect")


def test_the_web_pages_take_icons_and_colours_from_the_table(tmp_path):
    from werewolf_web_helpers import LiveServer

    from gtsteer.werewolf.web import app

    with LiveServer(tmp_path / "web.sqlite") as srv, srv.client() as c:
        r = c.get("/roles.js")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/javascript")
    look = json.loads(r.text.removeprefix("const ROLE_LOOK = ").rstrip().removesuffix(";"))
    assert look == {s.name: {"icon": s.icon, "colour": s.colour} for s in ROLES.values()}
    web = Path(app.__file__).parent
    for page in (web / "templates").glob("*.html"):  # loaded before the scripts that use it
        assert '<script src="/roles.js"></script>\n<script src="/static/common.js">' in \
            page.read_text(), page.name
    for static in (web / "static").glob("*.*s"):  # no second list of roles in JS or CSS
        text = static.read_text()
        assert not [s.name for s in ROLES.values() if s.name in ("doctor", "detective", "maniac")
                    and s.name in text], static.name
