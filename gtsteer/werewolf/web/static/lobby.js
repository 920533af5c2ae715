// The lobby: create a game, list the stored ones (refreshed on demand, not polled in a loop).
"use strict";

let config = null;
const $ = (id) => document.getElementById(id);

function wolfOptions() {
  const n = Number($("players").value);
  $("players-out").textContent = n;
  const keep = $("wolves").value;
  const opts = [el("option", { value: "", text: "auto" })];
  for (let k = 1; 2 * k < n; k++) opts.push(el("option", { value: String(k), text: String(k) }));
  $("wolves").replaceChildren(...opts);
  if ([...$("wolves").options].some((o) => o.value === keep)) $("wolves").value = keep;
  const box = $("models");
  const rows = [];
  for (let i = 0; i < n; i++) {
    const prev = box.querySelector(`[data-seat="${i}"]`);
    const sel = el("select", { "data-seat": String(i), "aria-label": `model for seat ${i + 1}` },
      el("option", { value: "", text: `seat ${i + 1}: same` }), config.models.map((m) => el("option", { value: m, text: `seat ${i + 1}: ${m}` })));
    if (prev) sel.value = prev.value;
    rows.push(sel);
  }
  box.replaceChildren(...rows);
}

async function loadConfig() {
  config = await api("/api/config");
  $("players").min = config.min_players;  // the rules' bounds (rules.py), written once
  $("players").max = config.max_players;
  $("model").replaceChildren(...config.models.map((m) => el("option", { value: m, text: m })));
  $("model").value = config.default_model;
  $("rulestext").textContent = config.rules_text;
  if (config.scaled_discussion) {  // the engine scales the talk with the living players
    $("turns").value = "";
    $("turns").placeholder = "auto";
  }
  const rules = Object.entries(config.rules).map(([key, r]) =>
    el("div", {}, el("label", { for: `rule-${key}`, text: `Rule: ${key}${r.help ? ` — ${r.help}` : ""}` }),
      el("select", { id: `rule-${key}`, "data-rule": key }, r.choices.map((c) => el("option", { value: c, text: c })))));
  $("rules").replaceChildren(...rules);
  for (const [key, r] of Object.entries(config.rules)) $(`rule-${key}`).value = r.default;
  wolfOptions();
}

function statusOf(g) {
  if (g.over) return el("span", { class: "pill", text: "finished" });
  if (!g.managed) return el("span", { class: "pill", text: "stored" });
  if (g.paused) return el("span", { class: "pill", text: "paused" });
  return el("span", { class: "pill running", text: g.human ? `running · ${g.human} seated` : "running" });
}

async function loadGames() {
  const games = await api("/api/games");
  $("empty").hidden = games.length > 0;
  $("games").querySelector("tbody").replaceChildren(...games.map((g) => el("tr", { "data-game": g.id },
    el("td", {}, el("a", { href: `/games/${g.id}`, text: g.id }), el("div", { class: "muted small", text: g.models.join(", ") })),
    el("td", { text: `${g.players}${g.human ? " (1 human)" : ""}` }),
    el("td", {}, statusOf(g)),
    el("td", {}, g.winner ? el("span", { class: `pill ${g.winner}`, text: g.winner }) : "—"),
    el("td", { text: g.day }),
    el("td", { text: g.llm_calls === null ? "—" : g.llm_calls }),
    el("td", { text: g.cost_usd === null ? "—" : `$${g.cost_usd.toFixed(4)}` }),
    el("td", {}, el("a", { href: `/games/${g.id}`, text: "table" }),
      (!g.human || g.over) ? [" · ", el("a", { href: `/games/${g.id}/god`, text: "god" })] : null,
      g.over ? [" · ", el("a", { href: `/games/${g.id}/replay`, text: "replay" })] : null))));
}

$("players").addEventListener("input", wolfOptions);
$("create").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("error").hidden = true;
  $("start").disabled = true;
  const n = Number($("players").value);
  const turns = $("turns").value ? Number($("turns").value) : (config.scaled_discussion ? null : 8);
  const body = { players: n, model: $("model").value, max_messages_per_day: turns,
    step_delay_s: Number($("pace").value || 0) };
  if ($("wolves").value) body.wolves = Number($("wolves").value);
  if ($("theme").value.trim()) body.theme = $("theme").value.trim();
  if ($("human").value.trim()) body.human = $("human").value.trim();
  if ($("maxdays").value) body.max_days = Number($("maxdays").value);
  if ($("seed").value) body.seed = Number($("seed").value);
  const seats = [...$("models").querySelectorAll("select")].map((s) => s.value || body.model);
  if (seats.some((m) => m !== body.model)) body.models = seats;
  const rules = {};
  for (const s of document.querySelectorAll("[data-rule]")) rules[s.dataset.rule] = s.value;
  if (Object.keys(rules).length) body.rules = rules;
  try {
    const made = await api("/api/games", { method: "POST", body });
    location.href = made.url;
  } catch (e) {
    $("error").textContent = e.message;
    $("error").hidden = false;
  } finally {
    $("start").disabled = false;
  }
});
window.addEventListener("focus", loadGames);

loadConfig().then(loadGames).catch((e) => { $("error").textContent = e.message; $("error").hidden = false; });
