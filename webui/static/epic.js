// Epic-scale games on the overlay page: Army Morale per side with its history, the
// objective markers (who would control each if the Rally phase ended now), Rescue
// escorts, and ending the Rally phase with the dice the players rolled (blank: the tool
// rolls, seeded and logged). Only on an Epic game (the page's body says data-game="epic"):
// on a Warcry table /api/epic answers 409, which the browser would log on every load.
"use strict";
(() => {
  const C = window.tabletrackerCommon;
  const panel = document.querySelector("aside.panel");
  if (!panel || document.body.dataset.game !== "epic") return;
  const token = () => (document.getElementById("judge-token") || {value: ""}).value;
  let box = null, sides = {}, busy = false;

  function sideName(i) {
    if (i === null || i === undefined) return "no one";
    const s = sides[i];
    return s ? `<span class="side" style="color:${C.esc(s.hex)}">${C.esc(s.colour)}</span>` : `side ${i}`;
  }

  function build() {
    box = document.createElement("section");
    box.id = "epic-panel";
    box.dataset.testid = "epic-panel";
    box.innerHTML = `
      <h2>Epic: Army Morale</h2>
      <table id="epic-morale" data-testid="epic-morale"></table>
      <h3>Objectives <span class="hint">(15 cm rings; held = if the Rally phase ended now)</span></h3>
      <ul id="epic-markers" data-testid="epic-markers" class="rulings"></ul>
      <p id="epic-rescue" data-testid="epic-rescue"></p>
      <form id="epic-rally" onsubmit="return false">
        <div id="epic-dice" data-testid="epic-dice"></div>
        <button type="button" id="epic-end-rally" data-testid="epic-end-rally">End Rally phase</button>
      </form>
      <p id="epic-msg" class="msg" data-testid="epic-msg" role="status"></p>
      <h3>History</h3>
      <ol id="epic-history" data-testid="epic-history" class="log"></ol>`;
    panel.insertBefore(box, panel.firstChild);
    box.querySelector("#epic-end-rally").addEventListener("click", endRally);
  }

  function render(d) {
    if (!box) build();
    for (const s of d.sides || []) sides[s.index] = s;
    const led = d.ledger;
    box.querySelector("#epic-morale").innerHTML = "<tr><th>side</th><th>Army Morale</th></tr>" +
      Object.entries(led.morale).map(([k, v]) => `<tr><td>${sideName(Number(k))}</td><td data-testid="morale-${C.esc(k)}">${C.esc(v)}</td></tr>`).join("");
    const v = d.view;
    if (!v) return;
    const place = v.placement || {};
    box.querySelector("#epic-markers").innerHTML = v.markers.map((m) => {
      const held = m.controller === null || m.controller === undefined ? "not held" : `held by ${sideName(m.controller)}`;
      const ok = place[m.id] && place[m.id] !== "yes" ? ` <b class="warn">placement: ${C.esc(place[m.id])}</b>` : "";
      const bk = (led.bunkers || {})[m.id] || {damage: 0, destroyed: false};
      const bunker = m.type !== "bunker" ? "" : (bk.destroyed ? "destroyed" :
        `damage ${bk.damage} / 3 <button type="button" data-bunker="${C.esc(m.id)}" data-hits="1">+1 damage</button>` +
        ` <button type="button" data-bunker="${C.esc(m.id)}" data-critical="1">critical</button>`);
      return `<li data-marker="${C.esc(m.id)}">${C.esc(m.id)} <span class="hint">${C.esc(m.type)}, ${sideName(m.owner)}'s</span>: ` +
        (["take-and-hold", "cleanse", "capture"].includes(m.type) ? held : "") + bunker + ok + "</li>";
    }).join("");
    box.querySelectorAll("[data-bunker]").forEach((b) => b.addEventListener("click", () => damageBunker(b)));
    box.querySelector("#epic-rescue").innerHTML = (v.rescues || []).map((r) => r.escort
      ? `${C.esc(r.marker)} escorted by <b>${C.esc(r.escort)}</b> (${sideName(r.escort_side)})`
      : `${C.esc(r.marker)} on the ground at (${r.x_cm.toFixed(1)}, ${r.y_cm.toFixed(1)}) cm`).join("<br>");
    const dice = box.querySelector("#epic-dice");
    const want = v.markers.filter((m) => m.controller !== null && m.controller !== undefined && (m.type === "take-and-hold" || m.type === "capture"));
    const key = want.map((m) => m.id).join(",");
    if (dice.dataset.key !== key) {  // keep what the players typed while nothing changes
      dice.dataset.key = key;
      dice.innerHTML = want.map((m) => {
        const die = m.type === "capture" ? 6 : 3;
        const choice = m.type === "capture" ? `<select data-choice="${C.esc(m.id)}"><option>capture</option><option>destroy</option></select>` : "";
        return `<label>${C.esc(m.id)} D${die} <input type="number" min="1" max="${die}" data-die="${C.esc(m.id)}" placeholder="roll"></label> ${choice}`;
      }).join("<br>");
    }
    box.querySelector("#epic-history").innerHTML = (led.history || []).map((h) =>
      `<li>Round ${h.battle_round}: ` + (h.changes.length ? h.changes.map((c) =>
        `${sideName(c.side)} ${c.delta > 0 ? "+" : ""}${c.delta} (${C.esc(c.marker)}: ${C.esc(c.effect)}` +
        (c.die ? `, ${C.esc(c.die)} = ${c.roll} ${C.esc(c.source)}` : "") + ")").join("; ") : "no effect") + "</li>").join("");
  }

  // A Bunker objective hit (or critically damaged); destroyed, the tool rolls the D6 its
  // owner's opponent loses (the result is in the history with its seed).
  async function damageBunker(button) {
    const msg = box.querySelector("#epic-msg");
    const body = {marker: button.dataset.bunker};
    if (button.dataset.critical) body.critical = true; else body.hits = Number(button.dataset.hits);
    try {
      const r = await C.api("POST", "/api/epic/bunker", body, token());
      msg.textContent = `${r.ruling.subject}: ${r.ruling.outcome}`;
      await poll();
    } catch (e) {
      msg.textContent = e.message;
    }
  }

  async function endRally() {
    if (busy) return;
    busy = true;
    const msg = box.querySelector("#epic-msg");
    const dice = {}, choices = {};
    box.querySelectorAll("[data-die]").forEach((i) => { if (i.value !== "") dice[i.dataset.die] = Number(i.value); });
    box.querySelectorAll("[data-choice]").forEach((s) => { choices[s.dataset.choice] = s.value; });
    try {
      const r = await C.api("POST", "/api/epic/rally", {dice, capture_choices: choices}, token());
      const h = r.ledger.history[r.ledger.history.length - 1];
      msg.textContent = `Rally phase of round ${r.ended_round} ended: ` +
        Object.entries(r.ledger.morale).map(([k, v]) => `${sides[k] ? sides[k].colour : "side " + k} ${v}`).join(", ") + ` (${h.changes.length} changes)`;
      box.querySelector("#epic-dice").dataset.key = "";
      await poll();
    } catch (e) {
      msg.textContent = e.message;
    } finally {
      busy = false;
    }
  }

  async function poll() {
    let d;
    try { d = await C.api("GET", "/api/epic"); } catch (e) {
      if (/not an Epic-scale game/.test(e.message)) return false;  // a Warcry table: nothing to show
      return true;  // no frame yet: try again
    }
    render(d);
    return true;
  }

  (async function loop() {
    let again = true;
    try { again = await poll(); } finally { if (again) setTimeout(loop, 1000); }  // (a bad answer: still shown, polling goes on)
  })();
})();
