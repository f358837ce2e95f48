// Shared by the pages: HTML escaping, and JSON API calls that carry the judge token.
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
};
