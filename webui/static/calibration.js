// Calibration page: health, markers, alerts; re-run the table calibration.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const tokenInput = $("judge-token");
  tokenInput.value = localStorage.getItem("tabletracker.token") || "";
  tokenInput.addEventListener("change", () => localStorage.setItem("tabletracker.token", tokenInput.value));
  const esc = window.tabletrackerCommon.esc;
  const px = (v) => (v === null || v === undefined) ? "–" : `${Number(v).toFixed(3)} px`;
  const api = (method, url, body) => window.tabletrackerCommon.api(method, url, body, tokenInput.value);
  let last = null;
  async function poll() {
    try {
      const c = await api("GET", "/api/calibration");
      last = c;
      const h = $("health");
      h.textContent = c.health;
      h.className = c.health === "ok" ? "" : "warn";
      $("calib-rms").textContent = px(c.setup.calibration_rms_px);
      $("pose-err").textContent = c.pose ? px(c.pose.reprojection_error_px) : "–";
      $("residual").textContent = px(c.residual_px);
      const b = c.markers.picture_blur_px;
      $("blur").textContent = b == null ? "–" : `${b.toFixed(2)} px (${c.markers.picture_blur_in.toFixed(3)} in)`;
      $("markers-used").textContent = c.pose ? `${c.pose.markers_used.join(", ")} / ${c.pose.markers_missing.join(", ") || "none"}` : "–";
      $("cam-pos").textContent = c.pose ? c.pose.camera_position_in.map((v) => v.toFixed(2)).join(", ") : "–";
      $("markers").innerHTML = c.markers.seen.map((m) => `<li data-testid="marker">marker ${m.id}: ${m.residual_px.toFixed(2)} px</li>`).join("") +
        c.markers.missing.map((i) => `<li class="err">marker ${i}: not seen</li>`).join("");
      $("alerts").innerHTML = c.alerts.map((a) => `<li class="err">${esc(a)}</li>`).join("") || "<li>None: calibration is healthy.</li>";
      $("events").innerHTML = c.events.map((e) => `<li>frame ${e.frame}: ${esc(e.health)}</li>`).join("");
      $("markers-img").src = `/calibration/markers.jpg?f=${c.frame_index}`;
      $("show-coverage").hidden = !c.coverage_url;
      if (!c.coverage_url) $("coverage-hint").textContent = "No calibration views (calib/) for this camera.";
    } catch (e) {
      $("alerts").innerHTML = `<li class="err">${esc(e.message)}</li>`;
    } finally {
      setTimeout(poll, 2000);
    }
  }
  $("recalibrate").addEventListener("click", async () => {
    const msg = $("recal-msg");
    msg.className = "msg";
    msg.textContent = "Calibrating…";
    try {
      const r = await api("POST", "/api/calibration/table", {});
      msg.textContent = `Table re-calibrated on frame ${r.frame_index}: reprojection error ${Number(r.reprojection_error_px).toFixed(3)} px` +
        (r.camera_moved_in !== null ? `, camera moved ${Number(r.camera_moved_in).toFixed(3)} in` : "") + ".";
    } catch (e) { msg.className = "msg err"; msg.textContent = e.message; }
  });
  $("show-coverage").addEventListener("click", () => {
    if (!last || !last.coverage_url) return;
    const img = $("coverage-img");
    img.src = last.coverage_url;
    img.hidden = false;
  });
  poll();
})();
