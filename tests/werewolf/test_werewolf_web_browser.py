"""End to end in a real headless browser: a scripted human plays a 5-player fake-model game
through the page (creates it in the lobby, types chat lines, votes and clicks night targets)
and the test checks what the page shows against the stored game.

Needs Debian's `chromium` and the `playwright` package (pointed at the system browser, no
browser download). Without them the test is skipped with a message, unless
GTSTEER_REQUIRE_BROWSER=1 (set by .ci/run) turns that into a failure.
"""

from __future__ import annotations

import os
import shutil
import time

import pytest
from werewolf_web_helpers import LiveServer

from gtsteer.werewolf.store import GameStore

HOW = ("install a browser with `sudo apt-get install -y chromium` (Debian/Ubuntu) and "
       "`pip install playwright` (no `playwright install` needed), or point GTSTEER_CHROMIUM at "
       "a Chromium binary")


def chromium_path() -> str:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _missing("the playwright package is not installed")
    path = (os.environ.get("GTSTEER_CHROMIUM") or shutil.which("chromium")
            or shutil.which("chromium-browser"))
    if not path:
        _missing("no Chromium binary found")
    return path  # type: ignore[return-value]


def _missing(why: str) -> None:
    if os.environ.get("GTSTEER_REQUIRE_BROWSER") == "1":
        pytest.fail(f"browser test required (GTSTEER_REQUIRE_BROWSER=1) but {why}; {HOW}")
    pytest.skip(f"browser test skipped: {why}; to run it, {HOW}")


@pytest.fixture(scope="module")
def browser():
    path = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
        yield b
        b.close()


def visible_roles(page) -> dict[str, tuple[str | None, bool]]:
    """name -> (role badge text or None, alive) as the players column shows them."""
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('.player')]
        .map(p => [p.dataset.name, [p.querySelector('.role')?.textContent.trim().split(' ')
        .pop() ?? null, !p.classList.contains('dead')]]))""")


def play_through_the_page(page, url: str, seed: int) -> dict:
    """Create a game in the lobby with a human seat and play it to the end; returns a log."""
    page.goto(url + "/")
    page.wait_for_selector("#model option", state="attached")
    page.fill("#players", "5")
    page.fill("#turns", "3")
    page.fill("#pace", "0")
    page.fill("#seed", str(seed))
    page.fill("#human", "Robin")
    page.click("#start")
    page.wait_for_url("**/games/*")
    page.wait_for_selector(".rolecard .rname")
    role = page.inner_text(".rolecard .rname").strip().lower()
    log: dict = {"id": page.url.rsplit("/", 1)[1], "role": role, "said": [], "votes": [],
                 "night": [], "hidden_roles_seen": []}
    deadline = time.time() + 180
    while time.time() < deadline:
        if page.locator(".banner").count():
            break
        shown = visible_roles(page)
        if page.locator(".banner").count():
            break  # the game ended while we looked: every role is public now
        for name, (badge, alive) in shown.items():
            hidden = alive and name != "Robin" and not (role == "werewolf" and badge == "werewolf")
            if badge and hidden:
                log["hidden_roles_seen"].append((name, badge))
        box = page.locator("#action:not([hidden])")
        if not box.count():
            page.wait_for_timeout(30)
            continue
        kind = box.get_attribute("data-kind")
        key = box.get_attribute("data-key")
        if kind in ("speak", "pack_chat"):
            line = f"Robin line {len(log['said']) + 1}: watch the quiet ones"
            page.fill("#say", line)
            if len(log["said"]) % 2:
                page.press("#say", "Enter")
            else:
                page.click("#send")
            log["said"].append(line)
        else:
            buttons = page.locator("#action button.target")
            names = buttons.all_inner_texts()
            assert "Robin" not in names or kind == "night"
            pick = names[-1]
            buttons.nth(len(names) - 1).click()
            log["votes" if kind == "vote" else "night"].append(pick)
        page.wait_for_function("k => document.getElementById('action').hidden || "
                               "document.getElementById('action').dataset.key !== k",
                               arg=key)
    else:
        raise AssertionError("the game did not end through the page in time")
    log["banner"] = page.inner_text(".banner")
    log["roles_at_end"] = visible_roles(page)
    log["mine"] = page.locator(".msg.mine .text").all_inner_texts()
    log["vote_lines"] = page.locator(".event.vote").all_inner_texts()
    log["night_lines"] = page.locator(".event.night").all_inner_texts()
    return log


def test_a_human_plays_a_whole_game_in_the_browser(browser, tmp_path):
    db = tmp_path / "web.sqlite"
    with LiveServer(db) as srv:
        page = browser.new_page(viewport={"width": 1300, "height": 850})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        played = []
        for seed in range(12):  # until Robin has voted and picked a night target
            log = play_through_the_page(page, srv.url, seed)
            played.append(log)
            if log["votes"] and log["night"]:
                break
        assert log["votes"] and log["night"], [(g["role"], g["votes"], g["night"])
                                               for g in played]
        final = GameStore(db).load(log["id"])
        assert final.over
        # The page: the winner, every role revealed at the end, nothing hidden during play.
        assert f"The {final.winner} win" in log["banner"]
        assert {n: r for n, (r, _) in log["roles_at_end"].items()} == {
            p.name: p.role.value for p in final.players}
        assert [g["hidden_roles_seen"] for g in played] == [[] for _ in played]
        assert log["role"] == final.player("Robin").role.value
        # What Robin typed, voted and chose at night is on the page and in the database.
        assert log["said"] and log["mine"] == log["said"]
        assert [m.text for m in final.messages if m.author == "Robin"] == log["said"]
        assert [v.target for v in final.votes if v.voter == "Robin"] == log["votes"]
        robin_votes = [t.split(" votes for ")[1] for t in log["vote_lines"]
                       if " Robin votes for " in f" {t.lstrip('🗳 ')}"]
        assert robin_votes == log["votes"]
        mine_at_night = [a for a in final.night_actions if a.actor == "Robin" and not a.blocked]
        assert [a.target for a in mine_at_night] == log["night"]
        for a in mine_at_night:
            assert any(a.target in line for line in log["night_lines"]), (a, log["night_lines"])
        assert errors == []


def test_run_it_here_adopts_a_cli_game_from_the_page(browser, tmp_path):
    """The page's own adopt request passes the server's same-origin check (issue 27, item 2)."""
    from gtsteer.werewolf.runner import create_game
    from gtsteer.werewolf.state import GameConfig

    db = tmp_path / "web.sqlite"
    create_game(GameStore(db), GameConfig(n_players=5, max_messages_per_day=2, max_days=1), seed=7,
                game_id="cli1")
    with LiveServer(db) as srv:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(srv.url + "/games/cli1")
        page.click("text=Run it here")
        page.wait_for_selector(".banner", timeout=120_000)
        assert GameStore(db).load("cli1").over and srv.manager.live("cli1").managed
        assert errors == []
