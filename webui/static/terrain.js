// Calibration page: untagged terrain pieces (type "unknown") and a type selector for each.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const esc = window.tabletrackerCommon.esc;
  const api = (method, url, body) => window.tabletrackerCommon.api(method, url, body, $("judge-token").value);
  async function load() {
    const list = $("terrain");
    try {
      const t = await api("GET", "/api/terrain");
      if (!t.pieces.length) { list.innerHTML = "<li>None: every piece carries a tag.</li>"; return; }
      list.innerHTML = t.pieces.map((p) => `<li data-testid="terrain-piece" data-id="${esc(p.id)}">
        <b>${esc(p.id)}</b> ${p.typed ? esc(p.type) : "<span class=\"warn\">? unknown</span>"}, ${p.area_sq_in} sq in
        at (${p.centre_in.map((v) => v.toFixed(1)).join(", ")})
        <select aria-label="type of ${esc(p.id)}">${t.types.map((ty) =>
          `<option${ty === p.type ? " selected" : ""}>${esc(ty)}</option>`).join("")}</select>
        <input type="number" min="0" step="0.25" value="${p.height_in ?? 2}" aria-label="height of ${esc(p.id)} (in)"> in
        <button type="button">Set</button></li>`).join("");
      list.querySelectorAll("li[data-id]").forEach((li) => {
        li.querySelector("button").addEventListener("click", async () => {
          const msg = $("terrain-msg");
          msg.className = "msg";
          try {
            const r = await api("POST", `/api/terrain/${encodeURIComponent(li.dataset.id)}`,
              {type: li.querySelector("select").value, height_in: Number(li.querySelector("input").value)});
            msg.textContent = `${r.id} is now ${r.type}, ${r.height_in} in high.`;
            load();
          } catch (e) { msg.className = "msg err"; msg.textContent = e.message; }
        });
      });
    } catch (e) {
      list.innerHTML = `<li class="err">${esc(e.message)}</li>`;
    }
  }
  load();
})();
