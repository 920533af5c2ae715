"""Screenshots of the werewolf web app (lobby, a human's table, god view, replay) into docs/.

    python -m lab web-screenshots [--out docs] [--chromium /usr/bin/chromium]

Runs the server on a temporary database with the fake model, plays a bot-only game to the end
and seats a scripted human in a second game, then drives the system Chromium with Playwright.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from gtsteer.werewolf.rules import Role
from lab.bench import benchdoc
from lab.bench.servers import ThreadedServer

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab web-screenshots"

SIZE: Any = {"width": 1440, "height": 900}  # playwright's ViewportSize


def wait(predicate, timeout: float = 120.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError("timed out")


def human_game(c: httpx.Client, srv: ThreadedServer) -> tuple[str, str, str]:
    """A 7-player game whose human seat is a werewolf, played until a turn on day 2 or later.

    Returns (game id, seat token, the kind of turn it stopped at)."""
    for seed in range(200):
        r = c.post("/api/games", json={"players": 7, "seed": seed, "human": "Robin",
                                       "max_messages_per_day": 6, "step_delay_s": 0})
        r.raise_for_status()
        gid, token = r.json()["id"], r.json()["token"]
        if srv.manager.live(gid).state.player("Robin").role is not Role.WEREWOLF:
            continue
        kind = play_until_day_two(c, gid, token)
        if kind:
            return gid, token, kind
    raise RuntimeError("no seed kept the human alive until day 2")


LINES = ["Evening, all. I run the stables and I saw lantern light near the mill.",
         "Bram was very quick to point fingers. Why the hurry, Bram?",
         "Let's be careful: a rushed vote only helps the wolves.",
         "I'd rather hear from the quiet ones before we vote."]


def play_until_day_two(c: httpx.Client, gid: str, token: str) -> str | None:
    headers = {"X-Seat-Token": token}
    lines = iter(LINES)
    while True:
        snap = c.get(f"/api/games/{gid}/state", headers=headers).json()
        turn = snap["turn"]["turn"]
        if snap["game"]["over"] or not snap["me"]["alive"]:
            return None
        if not (turn and turn["yours"]):
            time.sleep(0.02)
            continue
        if snap["game"]["day"] >= 2 and turn["kind"] in ("speak", "vote"):
            return turn["kind"]
        if turn["kind"] in ("speak", "pack_chat"):
            text = ("The quiet one goes tonight; nobody will miss the clues."
                    if turn["kind"] == "pack_chat" else next(lines, ""))
            body = {"kind": turn["kind"], "text": text}
        else:
            body = {"kind": turn["kind"], "target": turn["legal_targets"][0]}
        c.post(f"/api/games/{gid}/act", headers=headers, json=body).raise_for_status()


def main(argv: list[str] | None = None) -> None:
    ap = benchdoc.parser(COMMAND, __doc__.split("\n")[0])
    ap.add_argument("--out", default="docs")
    ap.add_argument("--chromium", default=os.environ.get("GTSTEER_CHROMIUM")
                    or shutil.which("chromium") or "/usr/bin/chromium")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["GTSTEER_CACHE_DIR"] = tmp
        with ThreadedServer(Path(tmp) / "web.sqlite", ["fake"]) as srv, \
                httpx.Client(base_url=srv.url, timeout=60) as c:
            bots = c.post("/api/games", json={"players": 8, "seed": 11, "step_delay_s": 0,
                                              "max_messages_per_day": 5}).json()["id"]
            wait(lambda: srv.manager.live(bots).state.over)
            gid, token, kind = human_game(c, srv)
            c.post("/api/games", json={"players": 9, "seed": 5, "step_delay_s": 1.5})
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=args.chromium,
                                            args=["--no-sandbox"])
                page = browser.new_page(viewport=SIZE, device_scale_factor=1)
                page.goto(srv.url + "/")
                page.wait_for_selector("#games tbody tr")
                page.fill("#human", "Robin")
                page.fill("#theme", "smugglers in a lighthouse")
                page.screenshot(path=str(out / "web_lobby.png"))

                seat = browser.new_context(viewport=SIZE)  # the seat cookie, as after joining
                seat.add_cookies([{"name": f"ww_seat_{gid}", "value": token, "url": srv.url}])
                table = seat.new_page()
                table.goto(f"{srv.url}/games/{gid}")
                if kind == "speak":
                    table.wait_for_selector("#action:not([hidden]) textarea")
                    table.fill("#say", "Clara, you voted with Bram twice. Explain that.")
                else:
                    table.wait_for_selector("#action:not([hidden]) button.target")
                table.screenshot(path=str(out / "web_table.png"))

                page.goto(f"{srv.url}/games/{bots}/god")
                page.wait_for_selector("#decisions tbody tr")
                page.locator("#decisions tbody tr", has_text="vote").first.click()
                page.wait_for_selector("pre.prompt")
                page.evaluate("window.scrollTo(0, 0)")
                page.screenshot(path=str(out / "web_god.png"))

                page.goto(f"{srv.url}/games/{bots}/replay")
                page.wait_for_selector("#pos")
                for _ in range(60):
                    page.click("#next")
                page.screenshot(path=str(out / "web_replay.png"))
                browser.close()
    for name in ("web_lobby", "web_table", "web_god", "web_replay"):
        print(out / f"{name}.png")


if __name__ == "__main__":
    main()
