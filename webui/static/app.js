// Live overlay page: polls /api/state, ends battle rounds, judge measurements, layers,
// and each fighter's state (/api/fighters/*): click a base for its popover (activate,
// half-activate, damage, Wounds, treasure; keys a, h, +, -), drawn on the video.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  let last = null;          // last /api/state body
  let sides = {};           // index -> {colour, hex}
  let pick = [];            // judge selection: ids
  let measureLine = null;   // {from:[u,v], to:[u,v], label}
  let fstate = null;        // last /api/fighters/state body
  let fmap = {};            // id -> its fighter state
  let selected = null;      // the fighter whose state popover is open
  let fgen = 0, fbusy = 0;  // fgen: bumped by every change, so an older poll answer is dropped
  let marks = {};           // id -> status, as last drawn on the video
  let dropOffer = null;     // {fighter, treasure, pixels[[u,v]]}: legal drop points to mark
  const tokenInput = $("judge-token");
  tokenInput.value = localStorage.getItem("tabletracker.token") || "";
  tokenInput.addEventListener("change", () => localStorage.setItem("tabletracker.token", tokenInput.value));

  const esc = window.tabletrackerCommon.esc;
  function sideName(i) {
    if (i === null || i === undefined) return "no one";
    return sides[i] ? sides[i].colour : "side " + i;
  }
  function swatch(i) {
    const hex = (i !== null && i !== undefined && sides[i]) ? sides[i].hex : "#999";
    return `<span class="swatch" style="background:${esc(hex)}"></span>`;
  }
  const C = window.tabletrackerCommon;
  const api = (method, url, body) => C.api(method, url, body, tokenInput.value);

  // -- panel -------------------------------------------------------------------------
  function renderControl(control, projected) {
    const ids = Object.keys(control || {});
    const body = $("control").tBodies[0];
    const proj = projected || {};
    const ifNow = (id) => (id in proj) ? `<td class="proj" title="if the round ended now">${swatch(proj[id])}${esc(sideName(proj[id]))}</td>` : "<td></td>";
    if (!ids.length) {
      body.innerHTML = `<tr class="empty"><td colspan="3">No battle round ended yet</td></tr>` +
        Object.keys(proj).sort().map((id) => `<tr class="proj-row"><td>${esc(id)}</td><td>–</td>${ifNow(id)}</tr>`).join("");
      return;
    }
    body.innerHTML = ids.sort().map((id) =>
      `<tr class="control-row" data-testid="control-row" data-objective="${esc(id)}">` +
      `<td>${esc(id)}</td><td>${swatch(control[id])}${esc(sideName(control[id]))}</td>${ifNow(id)}</tr>`).join("");
  }
  function renderFighters(state) {
    const bySide = {};
    for (const f of state.fighters) (bySide[f.side] = bySide[f.side] || []).push(f);
    const idx = Object.keys(bySide).map(Number).sort((a, b) => a - b);
    $("fighters").innerHTML = idx.map((i) =>
      `<div class="side" data-side="${i}">${swatch(i)}<b>${esc(sideName(i))}</b> (${bySide[i].length})<ul>` +
      bySide[i].map((f) => {
        const fs = fstateOf(f.id);
        const st = fs ? fs.status : "";
        return `<li data-fighter="${esc(f.id)}" data-status="${esc(st)}" class="${f.occluded ? "occluded" : ""} ${st ? "st-" + st : ""}` +
          `${f.id === selected ? " sel" : ""}" title="x ${f.x.toFixed(2)} y ${f.y.toFixed(2)} z ${f.z.toFixed(2)}">` +
          `${esc(f.id)}${f.name ? " " + esc(f.name) : ""}${f.occluded ? " (hidden)" : ""}${f.carrying || (fs && fs.carrying) ? " ◆" : ""}` +
          ((f.rival_sides || []).length ? ` <span class="hint unsure" title="the camera saw too little of its rim to be sure of its side">side? or ${f.rival_sides.map((r) => esc(sideName(r))).join(" or ")}</span>` : "") +
          (fs ? ` <span class="hint">${STATUS_MARK[st] || ""}${fs.damage || fs.wounds ? " " + fs.damage + "/" + (fs.wounds ?? "?") : ""}</span>` : "") +
          `</li>`;
      }).join("") +
      `</ul></div>`).join("") || "<p class='hint'>No fighters seen.</p>";
    // taken down and gone from the table: still listed (a damage removed by mistake restores them)
    const seen = new Set(state.fighters.map((f) => f.id));
    const gone = fstate ? fstate.fighters.filter((f) => f.taken_down && !seen.has(f.id)) : [];
    $("fs-removed").innerHTML = gone.length ? "Taken down, off the table: " + gone.map((f) =>
      `<a href="#" data-fighter="${esc(f.id)}">${esc(f.id)}</a>`).join(", ") : "";
  }
  const STATUS_MARK = {"ready": "●", "half-activated": "◐", "activated": "✓", "removed": "✗"};
  for (const id of ["fighters", "fs-removed"]) {
    $(id).addEventListener("click", (ev) => {
      const el = ev.target.closest("[data-fighter]");
      if (!el) return;
      ev.preventDefault();
      select(el.dataset.fighter);
    });
  }
  function renderStatus(s) {
    const src = $("st-source");
    src.textContent = `${s.source.spec.split("/").filter(Boolean).pop() || s.source.spec}${s.source.live ? " (live)" : ""}`;
    src.title = s.source.spec;
    $("st-fps").textContent = `${s.fps.processing.toFixed(1)} / ${s.fps.source.toFixed(1)} (dropped ${s.fps.dropped})`;
    const cal = $("st-calib");
    cal.textContent = s.calibration_health;
    cal.className = s.calibration_health === "ok" ? "" : "warn";
    const hands = $("st-hands");
    hands.textContent = s.hands_over_table ? "over the table" : "clear";
    hands.className = s.hands_over_table ? "warn" : "";
    const pic = $("st-picture");
    const blur = s.picture && s.picture.blur_px;
    pic.textContent = blur == null ? "–" : (s.picture.soft ? `soft (σ ${blur.toFixed(2)} px): focus the camera` : "sharp");
    pic.title = blur == null ? "" : `edges blur over σ ${blur.toFixed(2)} px (${s.picture.blur_in.toFixed(3)} in on the table)`;
    pic.className = s.picture && s.picture.soft ? "warn" : "";
    // Objectives the set-up lists that the camera does not see: their control cannot be measured.
    const objs = $("st-objectives");
    const unseen = (s.state && s.state.unseen_objectives) || [];
    objs.textContent = unseen.length ? `not in sight: ${unseen.join(", ")} (look at the table)` : "all in sight";
    objs.className = unseen.length ? "warn" : "";
    $("st-error").textContent = s.source.error ? `⚠ ${s.source.error}` : "";
  }
  function renderRulings(list, target) {
    target.innerHTML = (list || []).map((r) => {
      const cls = r.verdict === "too close to call" ? "verdict-too" : "";
      const m = (r.measured !== null && r.measured !== undefined) ? ` — ${Number(r.measured).toFixed(2)}" vs ${r.threshold}" ±${Number(r.margin).toFixed(2)}` : "";
      return `<li class="${cls}" title="${esc(r.rule ? r.rule.quote : "")}">${esc(r.subject)}: ${esc(r.verdict)}${esc(m)}` +
        (r.outcome ? ` — ${esc(r.outcome)}` : "") + `</li>`;
    }).join("");
  }
  async function refreshLog() {
    try {
      const data = await api("GET", "/api/rulings?limit=20");
      $("log").innerHTML = data.rulings.map((r) =>
        `<li>Round ${r.battle_round}, frame ${r.frame_index}: ` +
        Object.keys(r.control).sort().map((k) => `${esc(k)} → ${esc(sideName(r.control[k]))}`).join(", ") +
        (r.snapshot_url ? ` <a href="${esc(r.snapshot_url)}" target="_blank">picture</a>` : "") + `</li>`).join("");
    } catch (e) { /* shown by the state poll */ }
  }
  // What happened on the table, newest first: the tracker's events (placed, moved with
  // its distance, removed, treasure picked up or dropped, tokens placed or removed).
  function renderTimeline(state) {
    const events = ((state && state.extra && state.extra.events) || []).slice(-12).reverse();
    const word = (e) => {
      const d = e.distance_in !== undefined ? ` ${Number(e.distance_in).toFixed(2)}"` : "";
      const tok = e.token ? ` ${e.token}` : "";
      const next = e.next_to ? ` (next to ${e.next_to})` : "";
      return `${e.subject} ${e.kind}${d}${tok}${next}`;
    };
    $("timeline").innerHTML = events.map((e) =>
      `<li><span class="hint">${Number(e.time_s).toFixed(1)} s</span> ${esc(word(e))}</li>`).join("");
  }

  let tick = 0;
  // sgen: bumped when a round is ended or a game begun, so a state asked for before that
  // (its control panel still the old round's) does not paint over the newer answer.
  let sgen = 0;
  async function poll() {
    if (tick++ % 2 === 0) refreshFighterStates();  // not awaited: in parallel with /api/state
    try {
      const g = sgen;
      const s = await api("GET", "/api/state");
      if (g !== sgen) return;  // (finally: the next poll)
      last = s;
      sides = {};
      for (const sd of s.sides) sides[sd.index] = sd;
      $("frame-index").textContent = s.frame_index;
      $("battle-round").textContent = s.battle_round;
      $("game-over").hidden = !s.game_over;
      $("end-round").disabled = s.game_over;
      $("token-box").hidden = !s.auth.token_required;
      $("report-link").href = `/games/${s.game_id}/report`;
      $("export-link").href = `/api/games/${s.game_id}/export.json`;
      renderControl(s.control, s.projected_control);
      renderRoster(s.roster);
      renderSideChoice(s.sides);
      renderFighters(s.state);
      renderTimeline(s.state);
      renderStatus(s);
      drawJudge();
      placePopover();
    } catch (e) {
      $("st-error").textContent = `⚠ ${e.message}`;
    } finally {
      setTimeout(poll, 400);
    }
  }

  $("end-round").addEventListener("click", async () => {
    const btn = $("end-round");
    const msg = $("end-round-msg");
    btn.disabled = true;
    msg.className = "msg";
    msg.textContent = "Measuring…";
    try {
      const body = last ? {battle_round: last.battle_round} : {};
      const r = await api("POST", "/api/round/end", body);
      sgen++;
      renderControl(r.control, last ? last.projected_control : null);
      renderRulings(r.rulings, $("round-rulings"));
      msg.textContent = `Round ${r.ended_round} ended` + (r.game_over ? " — game over." : `; now round ${r.battle_round}.`) +
        (r.warnings && r.warnings.length ? " ⚠ " + r.warnings.join("; ") : "");
      $("battle-round").textContent = r.battle_round;
      refreshLog();
      dropOffer = null; $("fs-drop").hidden = true;
      fgen++;
      refreshFighterStates(true);
    } catch (e) {
      msg.className = "msg err";
      msg.textContent = e.message;
    } finally {
      btn.disabled = false;
    }
  });

  $("new-game").addEventListener("click", async () => {
    if (!confirm("Start a new game? The rulings so far stay in the log.")) return;
    try { await api("POST", "/api/game/new", {}); sgen++; $("round-rulings").innerHTML = ""; refreshLog(); refreshCorrections(); }
    catch (e) { $("end-round-msg").textContent = e.message; }
  });

  // -- layers --------------------------------------------------------------------------
  function streamUrl() {
    const on = [...document.querySelectorAll("input.layer")].filter((c) => c.checked).map((c) => c.value);
    return "/stream.mjpg?layers=" + (on.length ? on.join(",") : "none");
  }
  for (const c of document.querySelectorAll("input.layer")) {
    c.addEventListener("change", () => { $("video").src = streamUrl(); });
  }
  $("layer-measure").addEventListener("change", drawJudge);
  $("layer-state").addEventListener("change", drawJudge);

  // -- judge: click a fighter, then a target ---------------------------------------------
  function hit(u, v) {
    if (!last) return null;
    let best = null, bestD = Infinity;
    for (const [id, p] of Object.entries(last.pixels.fighters)) {
      const d = Math.hypot(p[0] - u, p[1] - v);
      if (d <= p[2] + 6 && d < bestD) { best = id; bestD = d; }
    }
    for (const [id, p] of Object.entries(last.pixels.tokens)) {
      const d = Math.hypot(p[0] - u, p[1] - v);
      if (d <= 14 && d < bestD) { best = id; bestD = d; }
    }
    return best;
  }
  function pixelOf(id) {
    if (!last) return null;
    const f = last.pixels.fighters[id];
    if (f) return [f[0], f[1]];
    return last.pixels.tokens[id] || null;
  }
  $("video").addEventListener("click", async (ev) => {
    const img = ev.currentTarget;
    if (!last || !img.naturalWidth) return;
    const rect = img.getBoundingClientRect();
    const u = (ev.clientX - rect.left) * img.naturalWidth / rect.width;
    const v = (ev.clientY - rect.top) * img.naturalHeight / rect.height;
    if (armed) { await armedClick(u, v); return; }
    const id = hit(u, v);
    const out = $("measure");
    if (!id) { out.textContent = "Nothing there: click on a base or a token."; closePopover(); return; }
    if (id in last.pixels.fighters) select(id);
    pick = pick.length >= 2 ? [id] : pick.concat([id]);
    if (pick.length === 1) {
      out.textContent = `From ${id}: now click the target.`; measureLine = null; drawJudge();
      if (id.startsWith("f")) {  // a fighter: what a judge asks of it alone
        try {
          const r = await api("GET", `/api/fighter/${encodeURIComponent(id)}/rulings`);
          const line = (label, x) => x ? `<br>${label}: <b>${esc(x.verdict)}</b> — ${esc(x.outcome || "")}` +
            `<br><span class="hint">“${esc(x.rule.quote)}”</span>` : "";
          out.innerHTML = `From <b>${esc(id)}</b>: now click the target.` +
            (r.carrying ? `<br>carrying ${esc(r.carrying)}` : "") +
            line("pick up treasure", r.treasure) + line("falling test if targeted", r.falling);
        } catch (e) { /* the measurement still works without it */ }
      }
      return;
    }
    const thr = $("threshold").value;
    try {
      const m = await api("GET", `/api/measure?from=${encodeURIComponent(pick[0])}&to=${encodeURIComponent(pick[1])}` +
        (thr !== "" ? `&threshold=${encodeURIComponent(thr)}` : ""));
      out.innerHTML = `<b>${esc(m.from)} → ${esc(m.to)}</b>: ${m.distance_in.toFixed(2)}" ±${m.margin_in.toFixed(2)}"` +
        (m.verdict ? ` — within ${esc(m.threshold_in)}": <b>${esc(m.verdict)}</b>` : "") +
        `<br><span class="hint">${esc(m.method)}; horizontal ${m.horizontal_in.toFixed(2)}", vertical ${m.vertical_in.toFixed(2)}"` +
        (m.notes.length ? "; " + esc(m.notes.join("; ")) : "") + `</span>` +
        (m.cover ? `<br>cover for ${esc(m.to)}: <b>${esc(m.cover.verdict)}</b>` +
          (m.cover.outcome ? ` — ${esc(m.cover.outcome)}` : "") +
          `<br><span class="hint">“${esc(m.cover.rule.quote)}”</span>` : "");
      measureLine = {a: pick[0], b: pick[1], px: m.pixels, label: `${m.distance_in.toFixed(2)}"`,
                     obstacles: m.cover_pixels || []};
    } catch (e) { out.textContent = e.message; measureLine = null; }
    drawJudge();
  });
  function drawJudge() {
    const cv = $("judge-canvas"), img = $("video");
    if (!img.naturalWidth) return;
    if (cv.width !== img.naturalWidth) { cv.width = img.naturalWidth; cv.height = img.naturalHeight; }
    const ctx = cv.getContext("2d");
    ctx.clearRect(0, 0, cv.width, cv.height);
    drawStates(ctx);
    if (!$("layer-measure").checked) return;
    ctx.lineWidth = 3;
    ctx.strokeStyle = "#00ffff";
    for (const id of pick) {
      const p = pixelOf(id);
      if (p) { ctx.beginPath(); ctx.arc(p[0], p[1], 10, 0, 2 * Math.PI); ctx.stroke(); }
    }
    if (measureLine) {
      // the closest points as measured (while the fighters stay put), else the centres
      const a = measureLine.px ? measureLine.px[0] : pixelOf(measureLine.a);
      const b = measureLine.px ? measureLine.px[1] : pixelOf(measureLine.b);
      if (a && b) {
        ctx.beginPath(); ctx.moveTo(a[0], a[1]); ctx.lineTo(b[0], b[1]); ctx.stroke();
        ctx.font = "bold 18px system-ui"; ctx.fillStyle = "#00ffff";
        ctx.fillText(measureLine.label, (a[0] + b[0]) / 2 + 6, (a[1] + b[1]) / 2 - 6);
      }
      // the obstacle the cover line passes through
      ctx.strokeStyle = "#ff00ff";
      for (const o of measureLine.obstacles || []) {
        ctx.beginPath();
        o.outline.forEach((p, i) => (i ? ctx.lineTo(p[0], p[1]) : ctx.moveTo(p[0], p[1])));
        ctx.closePath(); ctx.stroke();
      }
    }
  }

  // -- fighter state: the selected fighter's popover, keys, marks on the video ----------
  function fstateOf(id) { return fmap[id] || null; }
  function say(text, err) {
    for (const id of ["fs-msg", "fstate-msg"]) {
      $(id).textContent = text;
      $(id).className = "msg" + (err ? " err" : "");
    }
  }
  async function refreshFighterStates(force) {
    if (fbusy && !force) return;
    const g = fgen;
    try {
      const s = await api("GET", "/api/fighters/state");
      if (g === fgen && !fbusy) setFighterStates(s);
    } catch (e) { $("st-error").textContent = `⚠ fighter states: ${e.message}`; }
  }
  function setFighterStates(s) {
    fstate = s;
    fmap = {};
    for (const f of s.fighters) fmap[f.id] = f;
    $("still-ready").textContent = s.still_ready.length ?
      `Still ready in battle round ${s.battle_round}: ${s.still_ready.join(", ")}` : "";
    if (last) renderFighters(last.state);
    updatePopover();
    drawJudge();
  }
  function select(id) {
    if (selected !== id) say("", false);
    selected = id;
    $("fs-pop").hidden = false;
    $("fs-pop").dataset.fighter = id;
    for (const li of document.querySelectorAll("#fighters li[data-fighter]")) li.classList.toggle("sel", li.dataset.fighter === id);
    updatePopover();
    placePopover(true);
    drawJudge();
    if (!fmap[id]) refreshFighterStates();
  }
  function closePopover() {
    selected = null;
    $("fs-pop").hidden = true;
    for (const li of document.querySelectorAll("#fighters li.sel")) li.classList.remove("sel");
    drawJudge();
  }
  function updatePopover() {
    if (!selected) return;
    const f = fmap[selected];
    $("fs-id").textContent = selected;
    const st = $("fs-status");
    st.textContent = f ? f.status : "…";
    st.className = "fs-badge " + (f ? f.status : "");
    $("fs-damage").textContent = f ? C.damageText(f) : "";
    $("fs-carrying").textContent = f && f.carrying ? `carrying ${f.carrying}` : "";
    const w = $("fs-wounds");
    if (f && document.activeElement !== w && w.dataset.fighter !== `${selected}:${f.wounds}`) {
      w.value = f.wounds ?? "";
      w.dataset.fighter = `${selected}:${f.wounds}`;
    }
    const sel = $("fs-treasure"), want = ((fstate && fstate.treasure) || []).join(",");
    if (document.activeElement !== sel && sel.dataset.opts !== want) {
      sel.innerHTML = ((fstate && fstate.treasure) || []).map((t) => `<option value="${esc(t)}">${esc(t)}</option>`).join("");
      sel.dataset.opts = want;
    }
    const ok = f ? C.fighterEnabled(f, fstate.treasure) : {};
    for (const b of document.querySelectorAll("#fs-pop button[data-fs]")) b.disabled = !ok[b.dataset.fs];
  }
  // beside the fighter's base on the video (inside the picture), or top-left when it is not seen
  let popAt = null;
  function placePopover(force) {
    const pop = $("fs-pop"), img = $("video");
    if (!selected || pop.hidden || !img.naturalWidth) return;
    const p = last && last.pixels.fighters[selected];
    const k = img.clientWidth / img.naturalWidth;
    const W = img.clientWidth, H = img.clientHeight, pw = pop.offsetWidth, ph = pop.offsetHeight;
    let x = 8, y = 8;
    if (p) {
      const r = p[2] * k + 10;
      x = p[0] * k + r;
      if (x + pw > W) x = p[0] * k - r - pw;
      y = p[1] * k - ph / 2;
    }
    x = Math.max(0, Math.min(W - pw, x));
    y = Math.max(0, Math.min(H - ph, y));
    if (!force && popAt && Math.hypot(popAt[0] - x, popAt[1] - y) < 12) return;  // no jitter
    popAt = [x, y];
    pop.style.left = `${x}px`;
    pop.style.top = `${y}px`;
  }
  async function act(action) {
    const fid = selected;
    if (!fid) return;
    const [url, body] = C.fighterRequest(fid, action, {wounds: $("fs-wounds").value, treasure: $("fs-treasure").value});
    body.by = $("fs-by").value;
    fbusy++; fgen++;
    try {
      const r = await api("POST", url, body);
      say(r.events.map((e) => e.text).join("; "), false);
      if (r.drop) {
        dropOffer = {fighter: r.drop.details.fighter, treasure: r.drop.details.treasure, pixels: r.drop_pixels || []};
        $("fs-drop").textContent = C.dropText(r.drop);
        $("fs-drop").hidden = false;
      }
      setFighterStates(r.state);
    } catch (e) {
      say(e.message, true);
    } finally { fbusy--; }
  }
  $("fs-pop").addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-fs]");
    if (b) act(b.dataset.fs);
  });
  $("fs-close").addEventListener("click", closePopover);
  $("fs-drop").addEventListener("click", () => { dropOffer = null; $("fs-drop").hidden = true; drawJudge(); });
  const byInput = $("fs-by");
  byInput.value = localStorage.getItem("tabletracker.by") || "player";  // shared with /fighters
  byInput.addEventListener("change", () => localStorage.setItem("tabletracker.by", byInput.value));
  const KEYS = {"a": "activate", "A": "activate", "h": "half-activate", "H": "half-activate",
                "+": "damage", "=": "damage", "-": "undamage", "_": "undamage", "−": "undamage"};
  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.repeat) return;
    const t = ev.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA" || t.isContentEditable)) return;
    if (ev.key === "Escape") {
      if (selected || pick.length) { pick = []; measureLine = null; closePopover(); }
      return;
    }
    if (!selected || !(ev.key in KEYS)) return;
    ev.preventDefault();
    act(KEYS[ev.key]);
  });

  // marks on the video: ready ● green, half-activated ◐ amber, activated ✓ dimmed,
  // damage / Wounds under the base, taken down crossed out; the legal drop points
  function drawStates(ctx) {
    marks = {};
    if (!$("layer-state").checked || !last || !fstate) return;
    const px = last.pixels.fighters;
    for (const f of fstate.fighters) {
      const p = px[f.id];
      if (!p) continue;
      const [u, v, r0] = p, r = Math.max(r0, 8);
      marks[f.id] = f.status;
      const dot = Math.max(6, r * 0.3), du = u + r * 0.72, dv = v - r * 0.72;
      ctx.save();
      ctx.lineWidth = 2;
      if (f.status === "removed") {
        ctx.fillStyle = "rgba(255,60,60,0.35)";
        ctx.beginPath(); ctx.arc(u, v, r, 0, 2 * Math.PI); ctx.fill();
        ctx.strokeStyle = "#ff3c3c"; ctx.lineWidth = 5;
        const d = r * 0.95;
        ctx.beginPath(); ctx.moveTo(u - d, v - d); ctx.lineTo(u + d, v + d);
        ctx.moveTo(u + d, v - d); ctx.lineTo(u - d, v + d); ctx.stroke();
      } else if (f.status === "activated") {
        ctx.fillStyle = "rgba(0,0,0,0.45)";
        ctx.beginPath(); ctx.arc(u, v, r, 0, 2 * Math.PI); ctx.fill();
        ctx.fillStyle = "#777"; ctx.strokeStyle = "#000";
        ctx.beginPath(); ctx.arc(du, dv, dot, 0, 2 * Math.PI); ctx.fill(); ctx.stroke();
        ctx.strokeStyle = "#fff";
        ctx.beginPath(); ctx.moveTo(du - dot * 0.5, dv); ctx.lineTo(du - dot * 0.1, dv + dot * 0.45);
        ctx.lineTo(du + dot * 0.55, dv - dot * 0.45); ctx.stroke();
      } else {
        const half = f.status === "half-activated";
        ctx.strokeStyle = "#000";
        ctx.fillStyle = half ? "#f9a825" : "#2ecc40";
        ctx.beginPath(); ctx.arc(du, dv, dot, 0, 2 * Math.PI);
        if (half) { ctx.fillStyle = "#222"; ctx.fill(); ctx.fillStyle = "#f9a825";
          ctx.beginPath(); ctx.arc(du, dv, dot, 0.5 * Math.PI, 1.5 * Math.PI); ctx.closePath(); }
        ctx.fill();
        ctx.beginPath(); ctx.arc(du, dv, dot, 0, 2 * Math.PI); ctx.stroke();
      }
      if (f.damage || f.wounds) {  // damage / Wounds, with a bar when Wounds are known
        const label = `${f.damage}/${f.wounds ?? "?"}`;
        ctx.font = "bold 14px system-ui";
        ctx.textAlign = "center";
        ctx.lineWidth = 3; ctx.strokeStyle = "#000"; ctx.fillStyle = f.taken_down ? "#ff6b6b" : "#fff";
        ctx.strokeText(label, u, v + r + 15); ctx.fillText(label, u, v + r + 15);
        if (f.wounds) {
          const w = 2 * r, x0 = u - r, y0 = v + r + 19;
          ctx.fillStyle = "#2ecc40"; ctx.fillRect(x0, y0, w, 4);
          ctx.fillStyle = "#ff3c3c"; ctx.fillRect(x0, y0, w * Math.min(1, f.damage / f.wounds), 4);
        }
      }
      if (f.id === selected) {
        ctx.setLineDash([6, 4]); ctx.lineWidth = 2; ctx.strokeStyle = "#f5c542";
        ctx.beginPath(); ctx.arc(u, v, r + 5, 0, 2 * Math.PI); ctx.stroke();
      }
      ctx.restore();
    }
    if (dropOffer) {  // where the dropped treasure may be placed
      ctx.save();
      ctx.fillStyle = "#f5c542";
      for (const [u, v] of dropOffer.pixels) { ctx.beginPath(); ctx.arc(u, v, 2, 0, 2 * Math.PI); ctx.fill(); }
      const p0 = dropOffer.pixels[0];
      if (p0) {
        ctx.font = "bold 13px system-ui"; ctx.lineWidth = 3; ctx.strokeStyle = "#000";
        const t = `drop ${dropOffer.treasure} here`;
        ctx.strokeText(t, p0[0] + 6, p0[1] - 6); ctx.fillText(t, p0[0] + 6, p0[1] - 6);
      }
      ctx.restore();
    }
  }

  // -- roster: import, then click a roster fighter and its base ------------------------
  let armed = null;         // {kind: "assign", name} | {kind: "move"|"remove"|"side", fighter?}
  function setArmed(a, text) {
    armed = a;
    for (const li of document.querySelectorAll("#roster li")) li.classList.toggle("armed", !!a && a.kind === "assign" && li.dataset.roster === a.name);
    for (const b of document.querySelectorAll("button.mode")) b.classList.toggle("armed", !!a && b.dataset.mode === a.kind);
    if (text !== undefined) $(a && a.kind === "assign" ? "roster-msg" : "fix-msg").textContent = text;
  }
  let rosterKey = "";
  function renderRoster(r) {
    if (!r) return;
    const key = JSON.stringify(r.fighters) + JSON.stringify(armed);
    if (key === rosterKey) return;
    rosterKey = key;
    $("roster").innerHTML = r.fighters.map((f) =>
      `<li data-testid="roster-fighter" data-roster="${esc(f.name)}" class="${armed && armed.kind === "assign" && armed.name === f.name ? "armed" : ""}" ` +
      `title="base ${esc(f.base_mm)} mm; runemarks: ${esc(f.runemarks.join(", ") || "none")}">` +
      `${swatch(f.side)}<b>${esc(f.name)}</b> <span class="hint">M${f.move ?? "–"} W${f.wounds ?? "–"}</span>` +
      `<span class="as">${f.assigned_to ? "→ " + esc(f.assigned_to) : "unassigned"}</span></li>`).join("") ||
      "<li class='hint'>No roster imported.</li>";
  }
  $("roster").addEventListener("click", (ev) => {
    const li = ev.target.closest("li[data-roster]");
    if (!li) return;
    if (armed && armed.kind === "assign" && armed.name === li.dataset.roster) { setArmed(null, ""); rosterKey = ""; return; }
    setArmed({kind: "assign", name: li.dataset.roster}, `Click ${li.dataset.roster}'s base on the video.`);
  });
  $("roster-import").addEventListener("click", async () => {
    const file = $("roster-file").files[0];
    const msg = $("roster-msg");
    msg.className = "msg";
    if (!file) { msg.textContent = "Choose a roster file (YAML or JSON) first."; return; }
    try {
      const r = await api("POST", "/api/roster", {text: await file.text()});
      msg.textContent = `Imported ${r.imported} fighters.` +
        (r.dropped_assignments.length ? ` Unassigned: ${r.dropped_assignments.join(", ")}.` : "");
      rosterKey = "";
      renderRoster(r);
    } catch (e) { msg.className = "msg err"; msg.textContent = e.message; }
  });

  // -- judge corrections: pick an action, click the base (and for a move, where it is) --
  let sidesKey = "";
  function renderSideChoice(list) {
    const key = JSON.stringify(list);
    if (key === sidesKey) return;
    sidesKey = key;
    $("fix-side-to").innerHTML = list.map((sd) => `<option value="${sd.index}">to ${esc(sd.colour)}</option>`).join("");
  }
  for (const b of document.querySelectorAll("button.mode")) {
    b.addEventListener("click", () => {
      if (armed && armed.kind === b.dataset.mode) { setArmed(null, ""); return; }
      setArmed({kind: b.dataset.mode}, b.dataset.mode === "move" ? "Click the misplaced base, then where it really is."
        : `Click the base to ${b.dataset.mode === "remove" ? "remove" : "give to the other side"}.`);
    });
  }
  async function armedClick(u, v) {
    const a = armed;
    if (a.kind === "move" && a.fighter) {
      await correct({fighter: a.fighter, action: "move", pixel: [Math.round(u * 10) / 10, Math.round(v * 10) / 10]});
      return;
    }
    const id = hit(u, v);
    const msgId = a.kind === "assign" ? "roster-msg" : "fix-msg";
    if (!id || !(id in last.pixels.fighters)) { $(msgId).textContent = "No base there: click on a fighter's base."; return; }
    if (a.kind === "assign") {
      const msg = $("roster-msg");
      try {
        const r = await api("POST", "/api/roster/assign", {fighter: id, roster: a.name});
        msg.className = "msg";
        msg.textContent = `${r.roster} is ${r.fighter}.` + (r.warnings.length ? " ⚠ " + r.warnings.join("; ") : "");
      } catch (e) { msg.className = "msg err"; msg.textContent = e.message; }
      setArmed(null);
      rosterKey = "";
      return;
    }
    if (a.kind === "move") { setArmed({kind: "move", fighter: id}, `Now click where ${id} really is.`); return; }
    if (a.kind === "remove") await correct({fighter: id, action: "remove"});
    else await correct({fighter: id, action: "side", side: Number($("fix-side-to").value)});
  }
  async function correct(body) {
    const msg = $("fix-msg");
    try {
      const c = await api("POST", "/api/corrections", body);
      msg.className = "msg";
      msg.textContent = `Correction ${c.id}: ${describe(c)}.`;
    } catch (e) { msg.className = "msg err"; msg.textContent = e.message; }
    setArmed(null);
    refreshCorrections();
  }
  function describe(c) {
    if (c.action === "move") return `${c.fighter} moved to (${Number(c.x).toFixed(1)}, ${Number(c.y).toFixed(1)})`;
    if (c.action === "side") return `${c.fighter} is ${sideName(c.side)}`;
    return `${c.fighter} removed`;
  }
  async function refreshCorrections() {
    try {
      const data = await api("GET", "/api/corrections");
      $("corrections").innerHTML = data.corrections.map((c) =>
        `<li data-testid="correction" data-id="${c.id}" class="${c.active ? "" : "undone"}" title="${esc(c.note || "")}">` +
        `${esc(c.created_at.slice(11, 19))} ${esc(c.by)}: ${esc(describe(c))}` +
        (c.active ? ` <button type="button" class="undo link" data-undo="${c.id}">undo</button>` : ` (undone by ${esc(c.undone_by)})`) +
        `</li>`).join("");
    } catch (e) { /* shown by the state poll */ }
  }
  $("corrections").addEventListener("click", async (ev) => {
    const b = ev.target.closest("button[data-undo]");
    if (!b) return;
    try { await api("POST", `/api/corrections/${b.dataset.undo}/undo`, {}); }
    catch (e) { $("fix-msg").textContent = e.message; }
    refreshCorrections();
  });

  // for debugging from the console (and the browser test): the last state the page drew,
  // the fighter states and the marks drawn for them on the video ({id: status})
  window.tabletracker = {get state() { return last; }, get fighters() { return fstate; }, get marks() { return marks; },
                         get selected() { return selected; }};

  poll();
  refreshLog();
  refreshCorrections();
})();
