// Replay a finished game step by step from the stored decisions (fetched once).
"use strict";

const gameId = gameIdFromPath();
const $ = (id) => document.getElementById(id);
const view = new TableView($("table"), { god: true });
let data = null;
let pos = 0;
let timer = null;

function show(k) {
  pos = Math.max(0, Math.min(k, data.steps.length));
  const start = Object.assign({}, data.game, { day: 1, phase: "intro", over: false, winner: null });
  view.load({ game: start, players: data.players, me: null, feed: [], turn: null });
  for (const s of data.steps.slice(0, pos)) {
    for (const e of s.events) view.apply(e, true);
    view.day = s.day;
    view.phase = s.phase;
  }
  view.render();
  view.scroll();
  $("scrub").value = pos;
  $("pos").textContent = `step ${pos} / ${data.steps.length}`;
}

function toggle() {
  if (timer) { clearInterval(timer); timer = null; $("play").textContent = "▶ Play"; return; }
  $("play").textContent = "⏸ Pause";
  timer = setInterval(() => {
    if (pos >= data.steps.length) { toggle(); return; }
    show(pos + 1);
  }, 700);
}

async function load() {
  data = await api(`/api/games/${gameId}/replay`);
  $("scene").textContent = data.game.scene;
  $("godlink").href = `/games/${gameId}/god`;
  $("scrub").max = data.steps.length;
  $("first").onclick = () => show(0);
  $("prev").onclick = () => show(pos - 1);
  $("next").onclick = () => show(pos + 1);
  $("last").onclick = () => show(data.steps.length);
  $("play").onclick = toggle;
  $("scrub").oninput = () => show(Number($("scrub").value));
  show(0);
}

load().catch((e) => { $("scene").replaceChildren(el("div", { class: "error-box", text: e.message })); });
