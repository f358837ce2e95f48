// Shared by the pages: HTML escaping, JSON API calls that carry the judge token, and the
// fighter-state changes (/api/fighters/<id>/...) the overlay and the /fighters list both make.
"use strict";
window.tabletrackerCommon = {
  esc(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
  },
  // GET, or a JSON POST with the judge token; a 4xx/5xx throws its {"error": ...} message.
  async api(method, url, body, token) {
    const opts = {method, headers: {}};
    if (method !== "GET") {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body || {});
      if (token) opts.headers["X-Judge-Token"] = token;
    }
    const r = await fetch(url, opts);
    let data = null;
    try { data = await r.json(); } catch (e) { data = {error: `HTTP ${r.status}`}; }
    if (!r.ok) throw new Error(data && data.error ? data.error : `HTTP ${r.status}`);
    return data;
  },

  // -- fighter state (activation, damage, Wounds, treasure) ---------------------------
  // [url, body] of one change to fighter ``fid``: activate, half-activate, damage,
  // undamage (1 each), wounds (opts.wounds), carry (opts.treasure), drop.
  fighterRequest(fid, action, opts) {
    const o = opts || {};
    let path = action, body = {};
    if (action === "damage" || action === "undamage") body = {n: 1};
    else if (action === "wounds") body = {wounds: Number(o.wounds)};
    else if (action === "carry") body = {treasure: o.treasure};
    else if (action === "drop") { path = "carry"; body = {treasure: null}; }
    else if (action !== "activate" && action !== "half-activate") throw new Error(`unknown fighter action '${action}'`);
    return [`/api/fighters/${encodeURIComponent(fid)}/${path}`, body];
  },
  // Which changes make sense for fighter ``f`` (as /api/fighters/state gives it) now;
  // the server still refuses the others with a one-line message.
  fighterEnabled(f, treasure) {
    return {
      "activate": !f.taken_down && f.activation !== "activated",
      "half-activate": !f.taken_down && f.activation === "ready",
      "damage": !f.taken_down,
      "undamage": f.damage > 0,
      "wounds": true,
      "carry": !f.taken_down && !f.carrying && !!(treasure || []).length,
      "drop": !!f.carrying,
    };
  },
  damageText(f) { return `${f.damage} / ${f.wounds === null ? "?" : f.wounds} dmg`; },
  // The drop offer of a fighter taken down with treasure, in one line.
  dropText(drop) {
    const pts = (drop.details.points || []).slice(0, 4).map((p) => `(${p[0].toFixed(1)}, ${p[1].toFixed(1)})`);
    return `${drop.subject}: ${drop.outcome}` + (pts.length ? ` — e.g. ${pts.join(", ")} in` : "");
  },
};
