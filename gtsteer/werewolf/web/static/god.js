// God view: roles, playstyles, night actions, and for any decision the exact prompt and raw
// answer stored in SQLite. The server refuses it for a game with a human seat until it ends.
"use strict";

const gameId = gameIdFromPath();
const $ = (id) => document.getElementById(id);

function choiceOf(d) {
  if (d.target) return d.target;
  if (d.speakers && d.speakers.length) return `→ ${d.speakers.join(", ")}`;
  return "";
}

async function showCalls(row, d) {
  for (const r of document.querySelectorAll("#decisions tr.sel")) r.classList.remove("sel");
  row.classList.add("sel");
  const calls = await api(`/api/games/${gameId}/calls?step=${d.step}`);
  const box = $("detail");
  const head = el("h2", { text: `Step ${d.step}: ${d.kind}${d.actor ? ` by ${d.actor}` : ""}` });
  const meta = el("p", { class: "muted small", text: `${d.playstyle ? `playstyle ${d.playstyle} · ` : ""}${d.fallback ? "FALLBACK · " : ""}${d.folded ? `${d.folded} chat lines folded to fit the context · ` : ""}${calls.length} LLM call(s)` });
  const parts = calls.map((c) => el("div", {},
    el("div", { class: "small muted", text: `${c.purpose} · ${c.model} · seed ${c.seed} · ${c.cached ? "cache hit" : "new call"} · ${c.attempts} attempt(s) · ${c.prompt_tokens}+${c.completion_tokens} tokens${c.error ? ` · error: ${c.error}` : ""}` }),
    el("h3", { class: "small", text: "Prompt" }), el("pre", { class: "prompt", text: c.prompt }),
    el("h3", { class: "small", text: "Raw answer" }), el("pre", { class: "prompt answer", text: c.response }),
    (c.sent || []).slice(1).map((p, i) => [el("h3", { class: "small", text: `Retry ${i + 1} prompt` }),
      el("pre", { class: "prompt", text: p })])));
  box.replaceChildren(head, meta, ...(parts.length ? parts : [el("p", { class: "muted", text: "No model call (a human's move)." })]));
}

async function load() {
  const g = await api(`/api/games/${gameId}/god`);
  $("tablelink").href = `/games/${gameId}?view=god`;
  $("replaylink").href = `/games/${gameId}/replay`;
  $("replaylink").hidden = !g.game.over;
  $("phase").textContent = g.game.over ? `👁 God view · the ${g.game.winner} won` : `👁 God view · day ${g.game.day}, ${g.game.phase}`;
  $("roles").querySelector("tbody").replaceChildren(...g.players.map((p) => el("tr", {},
    el("td", {}, el("div", { class: "namecell" }, avatar(p.name), el("b", { text: p.name + (p.human ? " (human)" : "") }))),
    el("td", {}, roleTag(p.role)),
    el("td", { text: p.human ? "—" : p.playstyle }),
    el("td", { text: p.human ? "—" : p.model }),
    el("td", { text: p.alive ? "alive" : `died day ${p.died_day} (${p.cause})` }),
    el("td", { class: "small muted", text: p.story }))));
  $("decisions").querySelector("tbody").replaceChildren(...g.decisions.map((d) => {
    const row = el("tr", { "data-step": d.step },
      el("td", { text: d.step }), el("td", { text: d.kind }), el("td", { text: d.actor || "(router)" }),
      el("td", { text: d.playstyle || "" }), el("td", { text: choiceOf(d) + (d.fallback ? " ⚠" : "") }),
      el("td", { text: d.llm_calls }));
    row.addEventListener("click", () => showCalls(row, d));
    return row;
  }));
  const nights = g.feed.filter((e) => e.type === "night_action");
  $("nights").replaceChildren(...(nights.length ? nights.map((e) =>
    el("div", { class: "event night night-line" }, `🌙 ${e.text}`, e.reason ? el("span", { class: "muted", text: ` — “${e.reason}”` }) : null))
    : [el("span", { class: "muted", text: "No night yet." })]));
}

load().catch((e) => {
  $("detail").replaceChildren(el("div", { class: "error-box", text: e.message }));
});
