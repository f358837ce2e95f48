// Fighter list: activation, half-activation, damage/Wounds and carried treasure per
// fighter, through /api/fighters/*. Polls the state every 2 s; every click is one POST.
(() => {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const C = window.tabletrackerCommon;  // common.js: the fighter-state helpers shared with the overlay
  const list = $("fighters"), msg = $("msg"), byInput = $("by"), tokenInput = $("judge-token");
  tokenInput.value = localStorage.getItem("tabletracker.token") || "";
  tokenInput.addEventListener("change", () => localStorage.setItem("tabletracker.token", tokenInput.value));
  byInput.value = localStorage.getItem("tabletracker.by") || "player";
  byInput.addEventListener("change", () => localStorage.setItem("tabletracker.by", byInput.value));
  let sideHex = {};
  let state = null;
  let busy = 0, gen = 0;  // gen: bumped by every change, so an older poll answer is dropped

  async function api(url, body) {
    const opts = { headers: {} };
    if (body !== undefined) {
      opts.method = "POST";
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(Object.assign({ by: byInput.value }, body));
      if (tokenInput.value) opts.headers["X-Judge-Token"] = tokenInput.value;
    }
    const r = await fetch(url, opts);
    let data = null;
    try { data = await r.json(); } catch (e) { data = { error: `HTTP ${r.status}` }; }
    if (r.status === 403) $("token-box").hidden = false;
    if (!r.ok) throw new Error(data && data.error ? data.error : `HTTP ${r.status}`);
    return data;
  }

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else if (k === "text") e.textContent = v; else e.setAttribute(k, v);
    }
    for (const k of kids) e.append(k);
    return e;
  }

  function card(f) {
    const li = el("li", { class: "fighter", "data-testid": "fighter-row", "data-fighter": f.id });
    const head = el("header", {},
      el("span", { class: "fid", text: f.id }),
      el("span", { class: "notes", "data-testid": "where" }),
      el("span", { class: "status", "data-testid": "status" }));
    const acts = el("div", { class: "row" },
      el("button", { type: "button", "data-action": "activate", text: "Activate" }),
      el("button", { type: "button", "data-action": "half-activate", text: "Half" }));
    const dmg = el("div", { class: "row" },
      el("button", { type: "button", "data-action": "undamage", "aria-label": "remove 1 damage", text: "−1" }),
      el("span", { class: "dmg", "data-testid": "damage" }),
      el("button", { type: "button", "data-action": "damage", "aria-label": "add 1 damage", text: "+1" }),
      el("label", { class: "notes" }, "W ", el("input", { type: "number", min: "1", max: "99", step: "1",
        "data-testid": "wounds", "aria-label": "Wounds" })),
      el("button", { type: "button", "data-action": "wounds", text: "set" }));
    const tre = el("div", { class: "row" },
      el("span", { class: "notes", "data-testid": "carrying" }),
      el("select", { "data-testid": "treasure", "aria-label": "treasure" }),
      el("button", { type: "button", "data-action": "carry", text: "carry" }),
      el("button", { type: "button", "data-action": "drop", text: "drop" }));
    li.append(head, acts, dmg, tre);
    li.addEventListener("click", (ev) => {
      const b = ev.target.closest("button[data-action]");
      if (b) act(f.id, b.dataset.action, li);
    });
    return li;
  }

  function update(li, f) {
    li.classList.toggle("removed", f.taken_down);
    const st = li.querySelector("[data-testid=status]");
    st.textContent = f.status; st.className = "status " + f.status;
    li.querySelector("[data-testid=where]").textContent =
      f.side === null ? "" : `side ${f.side}` + (f.on_table ? (f.occluded ? " · hidden" : "") : " · off table");
    if (sideHex[f.side]) li.style.borderLeftColor = sideHex[f.side];
    li.querySelector("[data-testid=damage]").textContent = C.damageText(f);
    const w = li.querySelector("[data-testid=wounds]");
    if (document.activeElement !== w && f.wounds !== null) w.value = f.wounds;
    li.querySelector("[data-testid=carrying]").textContent = f.carrying ? `carrying ${f.carrying}` : "no treasure";
    const sel = li.querySelector("[data-testid=treasure]");
    if (document.activeElement !== sel) {
      const want = (state.treasure || []).join(",");
      if (sel.dataset.opts !== want) {
        sel.replaceChildren(...(state.treasure || []).map((t) => el("option", { value: t, text: t })));
        sel.dataset.opts = want;
      }
    }
    const ok = C.fighterEnabled(f, state.treasure);
    for (const a of ["activate", "half-activate", "damage", "undamage", "carry", "drop"]) {
      li.querySelector(`[data-action=${a}]`).disabled = !ok[a];
    }
  }

  function render(s) {
    state = s;
    $("battle-round").textContent = s.battle_round;
    if (!s.fighters.length) {
      list.replaceChildren(el("li", { class: "notes", text: s.live ? "No fighters on the table yet." :
        "No live view yet: fighters appear when the camera sees them." }));
    } else {
      const have = new Map([...list.querySelectorAll("li[data-fighter]")].map((li) => [li.dataset.fighter, li]));
      if (list.querySelector("li:not([data-fighter])")) list.replaceChildren();
      for (const f of s.fighters) {
        let li = have.get(f.id);
        if (!li) { li = card(f); list.append(li); }
        update(li, f);
      }
    }
    $("reminders").textContent = s.still_ready.length ? `Still ready: ${s.still_ready.join(", ")}` : "";
    $("recent").replaceChildren(...s.recent.map((c) => el("li", {
      text: `${c.created_at.slice(11, 19)} ${c.who}: ` + c.events.map((e) => e.text).join("; ") })));
  }

  function showDrop(drop) {
    const box = $("drop");
    if (!drop) return;
    box.textContent = C.dropText(drop);
    box.hidden = false;
  }

  async function act(fid, action, li) {
    const [url, body] = C.fighterRequest(fid, action, {
      wounds: li.querySelector("[data-testid=wounds]").value, treasure: li.querySelector("[data-testid=treasure]").value });
    busy++; gen++;
    try {
      const r = await api(url, body);
      msg.classList.remove("err");
      msg.textContent = r.events.map((e) => e.text).join("; ");
      showDrop(r.drop);
      render(r.state);
    } catch (e) {
      msg.classList.add("err");
      msg.textContent = e.message;
    } finally { busy--; }
  }

  $("new-round").addEventListener("click", async () => {
    busy++; gen++;
    try {
      const r = await api("/api/fighters/new-round", {});
      msg.classList.remove("err");
      msg.textContent = (r.reminders.length ? "Not activated: " + r.reminders.join("; ") + ". " : "") +
        r.events.map((e) => e.text).join("; ");
      $("drop").hidden = true;
      render(r.state);
    } catch (e) { msg.classList.add("err"); msg.textContent = e.message; } finally { busy--; }
  });

  async function poll() {
    if (!busy) {
      const g = gen;
      try { const s = await api("/api/fighters/state"); if (g === gen && !busy) render(s); } catch (e) {
        msg.classList.add("err"); msg.textContent = e.message;
      }
    }
    setTimeout(poll, 2000);
  }

  api("/api/state").then((s) => {
    for (const sd of s.sides || []) sideHex[sd.index] = sd.hex;
    if (s.auth && s.auth.token_required) $("token-box").hidden = false;
  }).catch(() => {});
  window.tabletracker = { get state() { return state; } };
  poll();
})();
