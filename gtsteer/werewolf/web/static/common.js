// Shared helpers and the table renderer (live table and replay). Vanilla JS, no build step.
// All text goes through textContent: nothing a bot or player writes is ever parsed as HTML.
"use strict";

// ROLE_LOOK (each role's icon and colour) comes from /roles.js, the server's role table.
const PHASE_LABEL = { intro: "introductions", discussion: "discussion", vote: "vote",
  night: "night", summary: "dawn", over: "game over" };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k === "style") node.style.cssText = v;  // CSSOM: allowed by the page's CSP
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

async function api(path, options) {
  const opts = Object.assign({ headers: {} }, options || {});
  if (opts.body && typeof opts.body !== "string") {
    opts.body = JSON.stringify(opts.body);
    opts.headers["Content-Type"] = "application/json";
  }
  const r = await fetch(path, opts);
  let data = null;
  try { data = await r.json(); } catch (e) { data = null; }
  if (!r.ok) throw new Error((data && data.error) || `${r.status} ${r.statusText}`);
  return data;
}

function hue(name) {
  let h = 0;
  for (const ch of name) h = (h * 31 + ch.charCodeAt(0)) % 360;
  return h;
}

function avatar(name) {
  const initials = name === "Moderator" ? "☾" : name.slice(0, 2);
  return el("div", { class: "avatar", style: `background:hsl(${hue(name)},65%,68%)`, text: initials });
}

function roleIcon(role) {
  return (ROLE_LOOK[role] || {}).icon || "";
}

function roleTag(role) {
  const look = ROLE_LOOK[role] || {};
  return role ? el("span", { class: `role ${role}`, style: look.colour ? `color:${look.colour}` : null,
    text: `${roleIcon(role)} ${role}` }) : null;
}

function gameIdFromPath() {
  const m = location.pathname.match(/^\/games\/([A-Za-z0-9_-]+)/);
  return m ? m[1] : null;
}

class TableView {
  constructor(root, opts) {
    this.root = root;
    this.god = !!(opts && opts.god);
    this.players = new Map();
    this.me = null;
    this.game = null;
    this.turn = null;
    this.day = 1;
    this.phase = "intro";
    this.votes = {};
    this.feed = root.querySelector(".feed");
    this.playersBox = root.querySelector(".players");
    this.tallyBox = root.querySelector(".tally");
  }

  load(snap) {
    this.game = snap.game;
    this.me = snap.me;
    this.players = new Map(snap.players.map((p) => [p.name, Object.assign({}, p)]));
    this.day = snap.game.day;
    this.phase = snap.game.phase;
    this.votes = {};
    this.feed.replaceChildren();
    this.lastDivider = null;
    for (const e of snap.feed) this.apply(e, true);
    this.day = snap.game.day;
    this.phase = snap.game.phase;
    this.turn = snap.turn ? snap.turn.turn : null;
    this.turnSeq = (this.turnSeq || 0) + 1;
    this.render();
    this.scroll();
  }

  divider(text) {
    if (this.lastDivider === text) return;
    this.lastDivider = text;
    this.feed.append(el("div", { class: "divider", text }));
  }

  apply(e, quiet) {
    const f = this.feed;
    switch (e.type) {
      case "message": {
        if (e.author === "Moderator") {
          f.append(el("div", { class: "announce", text: e.text }));
          break;
        }
        if (e.phase === "intro") this.divider("Introductions");
        const mine = this.me && e.author === this.me.name;
        f.append(el("div", { class: `msg${mine ? " mine" : ""}${e.channel === "pack" ? " pack" : ""}` },
          avatar(e.author),
          el("div", { class: "bubble" }, el("div", { class: "who", text: e.author }),
            el("div", { class: "text", text: e.text }))));
        break;
      }
      case "vote": {
        if (!this.votes[e.day]) this.votes[e.day] = {};
        this.votes[e.day][e.target] = (this.votes[e.day][e.target] || 0) + 1;
        if (e.order === 1) this.divider(`Day ${e.day} vote`);
        const line = el("div", { class: "event vote" }, "🗳 ", el("b", { text: e.voter }),
          " votes for ", el("b", { text: e.target }));
        if (this.god && e.reason) line.append(el("span", { class: "muted", text: ` — ${e.reason}` }));
        f.append(line);
        break;
      }
      case "night_action":
        f.append(el("div", { class: "event night", text: `🌙 ${e.text}` }));
        if (this.god && e.reason) f.append(el("div", { class: "event muted small", text: `“${e.reason}”` }));
        break;
      case "notice":
        f.append(el("div", { class: "event night", text: `🌙 ${e.text}` }));
        break;
      case "notes":
        if (this.god) {
          const n = e.notes;
          f.append(el("details", { class: "event secret" }, el("summary", { text: `📝 ${e.bot}'s notes (day ${e.day})` }),
            el("div", { class: "small", text: `allies: ${n.allies} · suspects: ${n.suspects} · roles: ${n.role_knowledge} · threads: ${n.social_threads} · plans: ${n.plans}` })));
        }
        break;
      case "day_result": {
        const parts = Object.entries(e.tally).map(([k, v]) => `${k} ${v}`).join(", ");
        f.append(el("div", { class: "event", text: `Tally: ${parts}${e.tie ? " (tie)" : ""}` }));
        break;
      }
      case "death": {
        const p = this.players.get(e.name);
        if (p) Object.assign(p, { alive: false, role: e.role, died_day: e.day, cause: e.cause });
        break;
      }
      case "phase":
        this.day = e.day;
        this.phase = e.phase;
        if (e.phase === "night") this.divider(`Night ${e.day}`);
        else if (e.phase === "discussion") this.divider(`Day ${e.day}`);  // notes may come first
        break;
      case "over": {
        for (const [name, role] of Object.entries(e.roles)) {
          const p = this.players.get(name);
          if (p) p.role = role;
        }
        this.game.over = true;
        this.game.winner = e.winner;
        this.phase = "over";
        f.append(el("div", { class: "banner", text: `🏆 The ${e.winner} win — ${e.end_reason}` }));
        break;
      }
      case "turn":
        this.turn = e.turn;
        this.turnSeq = (this.turnSeq || 0) + 1;  // tells a new turn from the one answered
        this.day = e.day;
        this.phase = e.phase;
        this.game.paused = e.paused;
        this.game.halted = e.halted;
        this.thinking = e.thinking;
        break;
      default:
        break;
    }
    if (!quiet) {
      this.render();
      this.scroll();
    }
  }

  scroll() {
    this.feed.scrollTop = this.feed.scrollHeight;
    requestAnimationFrame(() => { this.feed.scrollTop = this.feed.scrollHeight; });  // after layout
  }

  render() {
    document.body.classList.toggle("night", this.phase === "night");
    document.body.classList.toggle("day", this.phase !== "night");
    const badge = document.querySelector(".phase-badge");
    if (badge) {
      const night = this.phase === "night";
      badge.replaceChildren(el("span", { class: "icon", text: this.phase === "over" ? "🏁" : night ? "🌙" : "☀️" }),
        this.phase === "over" ? "Game over" : `${night ? "Night" : "Day"} ${this.day} · ${PHASE_LABEL[this.phase] || this.phase}`);
    }
    this.renderPlayers();
    this.renderTally();
  }

  renderPlayers() {
    if (!this.playersBox) return;
    const speaking = this.turn && this.turn.actor;
    const tally = this.votes[this.day] || {};
    const rows = [];
    for (const p of this.players.values()) {
      const meta = p.alive ? (p.human ? "human" : "bot") : `💀 day ${p.died_day} · ${p.cause === "vote" ? "voted out" : "killed at night"}`;
      const row = el("div", { class: `player${p.alive ? "" : " dead"}${p.me ? " me" : ""}${speaking === p.name ? " speaking" : ""}`, "data-name": p.name },
        avatar(p.name),
        el("div", {}, el("div", {}, el("span", { class: "pname", text: p.name + (p.me ? " (you)" : "") }), roleTag(p.role)),
          el("div", { class: "meta", text: this.god && p.playstyle ? `${meta} · ${p.playstyle} · ${p.model}` : meta })),
        this.phase === "vote" && tally[p.name] ? el("span", { class: "votes", text: tally[p.name] }) : null);
      rows.push(row);
    }
    this.playersBox.replaceChildren(...rows);
  }

  renderTally() {
    if (!this.tallyBox) return;
    const tally = this.votes[this.day] || {};
    const entries = Object.entries(tally).sort((a, b) => b[1] - a[1]);
    const max = Math.max(1, ...entries.map((x) => x[1]));
    this.tallyBox.replaceChildren(...(entries.length ? entries.map(([name, n]) =>
      el("div", { class: "line" }, el("span", { text: name }),
        el("div", { class: "bar", style: `width:${(100 * n) / max}%` }), el("b", { text: n })))
      : [el("div", { class: "muted small", text: "No votes yet today." })]));
  }

  statusText() {
    const t = this.turn;
    if (!this.game) return "";
    if (this.game.over) return `The ${this.game.winner} won.`;
    if (this.game.halted) return `Stopped: ${this.game.halted}`;
    if (this.game.paused) return "Paused.";
    if (!t) return "";
    if (t.yours) return t.turn && t.turns_total ? `Your turn! (turn ${t.turn} of ${t.turns_total})` : "Your turn!";
    if (t.kind === "night") return "The village sleeps… someone stirs in the dark";
    if (t.kind === "route") return "The moderator picks who speaks next";
    if (t.kind === "summary") return `${t.actor} writes private notes`;
    if (t.kind === "pack_chat") return `${t.actor} whispers to the pack`;
    const what = { speak: "is speaking", vote: "is voting" }[t.kind] || `chooses (${t.verb || t.kind})`;
    const count = t.turn && t.turns_total ? ` (turn ${t.turn} of ${t.turns_total})` : "";
    return (t.human ? `Waiting for ${t.actor}` : `${t.actor} ${what}`) + count;
  }
}
