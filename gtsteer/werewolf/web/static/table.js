// The live table: one snapshot, then server-sent events. The server filters what this viewer
// may see; this page only draws it and sends the human's moves.
"use strict";

const gameId = gameIdFromPath();
const params = new URLSearchParams(location.search);
const godMode = params.get("view") === "god";
const view = new TableView(document.getElementById("table"), { god: godMode });
let source = null;

function connect() {
  if (source) source.close();
  source = new EventSource(`/api/games/${gameId}/events${godMode ? "?view=god" : ""}`);
  source.onmessage = (msg) => {
    const e = JSON.parse(msg.data);
    if (e.type === "snapshot") {
      view.load(e);
      document.getElementById("scene").textContent = e.game.scene;
      setupChrome(e.game);
    } else if (e.type === "end") {
      source.close();
    } else {
      view.apply(e);
    }
    refreshSide();
  };
  source.onerror = () => {
    document.getElementById("status").textContent = "Connection lost, reconnecting…";
  };
}

function setupChrome(game) {
  const bots = !game.human_game;
  document.getElementById("controls").hidden = !(bots && !game.over && game.managed);
  const god = document.getElementById("godlink");
  god.hidden = !(bots || game.over) || godMode;
  god.href = `/games/${gameId}?view=god`;
  const rp = document.getElementById("replaylink");
  rp.hidden = !game.over;
  rp.href = `/games/${gameId}/replay`;
  const info = document.getElementById("viewinfo");
  info.replaceChildren();
  if (godMode) {
    info.append("👁 God view: every role, night action and note. ",
      el("a", { href: `/games/${gameId}/god`, text: "Prompts and raw answers →" }));
  } else if (view.me) {
    info.append(`You play ${view.me.name}. You see what your role may know, nothing more.`);
  } else {
    info.append("Spectator: you see the public table.");
  }
  if (!game.managed && !game.over) {
    info.append(el("div", {}, "This game was started outside the web app. ",
      el("button", { onclick: () => api(`/api/games/${gameId}/adopt`, { method: "POST", body: {} }).then(connect), text: "Run it here" })));
  }
}

function refreshSide() {
  const status = document.getElementById("status");
  status.textContent = view.statusText();
  status.classList.toggle("dots", !!(view.thinking && !view.game.over));
  const controls = document.getElementById("controls");
  if (!controls.hidden) {
    document.getElementById("pause").disabled = view.game.paused || view.game.over;
    document.getElementById("step").disabled = !view.game.paused || view.game.over;
    document.getElementById("resume").disabled = !view.game.paused && !view.game.halted;
  }
  renderRoleCard();
  renderAction();
}

function renderRoleCard() {
  const card = document.getElementById("rolecard");
  const kn = document.getElementById("knowledge");
  if (!view.me) { card.hidden = true; kn.hidden = true; return; }
  const me = view.me;
  card.hidden = false;
  card.replaceChildren(el("div", { class: "big", text: roleIcon(me.role) || "?" }),
    el("div", { class: "rname", text: me.role }), el("div", { class: "muted small", text: `You are ${me.name}` }));
  const items = [];
  if (me.pack && me.pack.length) items.push(el("li", {}, "Your pack: ", el("b", { text: me.pack.join(", ") })));
  for (const node of view.feed.querySelectorAll(".event.night")) items.push(el("li", { class: "small", text: node.textContent }));
  kn.hidden = items.length === 0;
  kn.replaceChildren(el("h2", { text: "What you know" }), el("ul", { class: "knowledge" }, items));
}

const VERB_LABEL = { abduct: "Abduct", kill: "Kill", protect: "Protect", investigate: "Investigate" };
let drafted = "";
let lastError = null;
function showError(e) {
  lastError = e.message;
  const box = document.querySelector("#action .error-box");
  if (box) { box.hidden = false; box.textContent = lastError; }
}
let answeredSeq = -1;
function renderAction() {
  const box = document.getElementById("action");
  const t = view.turn;
  if (!view.me || !t || !t.yours || view.game.over || view.turnSeq === answeredSeq) {
    box.hidden = true;
    box.classList.remove("yourturn");
    box.dataset.kind = "";
    box.dataset.key = "";
    return;
  }
  const key = String(view.turnSeq);
  if (box.dataset.key === key && !box.hidden) return;
  const seq = view.turnSeq;
  box.dataset.key = key;
  box.dataset.kind = t.kind;
  box.hidden = false;
  box.classList.add("yourturn");
  const err = el("div", { class: "error-box", hidden: true });
  const send = (body) => {
    answeredSeq = seq;  // this turn is answered; the next turn event may be ours again
    const keep = drafted;
    drafted = "";
    renderAction();
    return api(`/api/games/${gameId}/act`, { method: "POST", body }).catch((e) => {
      answeredSeq = -1; drafted = keep; box.dataset.key = ""; renderAction(); showError(e);
    });
  };
  if (t.kind === "speak" || t.kind === "pack_chat") {
    const pack = t.kind === "pack_chat";
    const area = el("textarea", { id: "say", maxlength: String(view.game.max_line_chars || 400), placeholder: pack ? "Whisper to your pack…" : "Say something to the village…" });
    area.value = drafted;
    area.addEventListener("input", () => { drafted = area.value; });
    area.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); sendBtn.click(); }
    });
    const sendBtn = el("button", { class: "primary", id: "send", text: pack ? "Whisper" : "Speak",
      onclick: () => send({ kind: t.kind, text: area.value }) });
    box.replaceChildren(el("h2", { text: pack ? "🐺 Pack chat — your turn" : view.phase === "intro" ? "Introduce yourself" : "Your turn to speak" }),
      area, el("div", { class: "buttons" }, sendBtn,
        el("button", { id: "pass", text: "Pass", onclick: () => send({ kind: t.kind, text: "" }) })), err);
    setTimeout(() => area.focus(), 0);
    return;
  }
  if (t.kind === "vote") {
    box.replaceChildren(el("h2", { text: "🗳 Vote to eliminate" }),
      el("div", { class: "targets" }, t.legal_targets.map((name) =>
        el("button", { class: "target", "data-target": name, text: name,
          onclick: () => send({ kind: "vote", target: name }) }))), err);
    return;
  }
  // Night: one group of names per available action (e.g. protect, or the one-time kill).
  const actions = Object.entries(t.actions && Object.keys(t.actions).length ? t.actions : { [t.verb]: t.legal_targets });
  box.replaceChildren(el("h2", { text: "🌙 Night: your move" }),
    ...actions.map(([verb, names]) => el("div", {},
      el("div", { class: "small muted", text: `${VERB_LABEL[verb] || verb}:` }),
      el("div", { class: "targets" }, names.map((name) =>
        el("button", { class: `target${verb === t.verb ? "" : " danger"}`, "data-target": name, "data-action": verb, text: name,
          onclick: () => send({ kind: "night", target: name, action: verb }) }))))), err);
}

for (const action of ["pause", "step", "resume"]) {
  document.getElementById(action).addEventListener("click", () =>
    api(`/api/games/${gameId}/control`, { method: "POST", body: { action } }).catch((e) => {
      document.getElementById("status").textContent = e.message;
    }));
}

connect();
