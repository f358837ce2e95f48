"""The calibration page: how well the camera is calibrated to the table, right now.

========================================  ================================================
GET  /calibration                         the page
GET  /api/calibration                     health, setup{calibration_rms_px, pose_error_px,
                                          warnings[], untagged_terrain[ids]}, pose{reprojection_error_px,
                                          markers_used, markers_missing, camera_position_in},
                                          markers{expected[], seen[{id, residual_px,
                                          corners_px}], missing[]}, residual_px (RMS of the
                                          seen table markers against the pose in use),
                                          alerts[], events[{frame, health}], frame_index,
                                          sheets{...urls}, coverage_url
POST /api/calibration/table  {}           re-estimate the table pose from the current frame
                                          (estimate_table_pose): 200 {reprojection_error_px,
                                          markers_used, markers_missing, previous_error_px,
                                          camera_moved_in}; 422 when too few markers show
GET  /api/terrain, POST /api/terrain/<id>  untagged terrain and typing it (webui/terrain_api.py;
                                          the page lists the pieces with a type selector)
GET  /calibration/markers.jpg             the current frame with the table markers found
                                          (green) and where the pose expects them (red)
GET  /calibration/coverage.png            where the calibration views' board corners fell
                                          (computed once, from calib/; 404 without it)
GET  /calibration/table-markers.png?dpi=  the four table markers, true size at that DPI
GET  /calibration/charuco.png?dpi=        the ChArUco calibration board, true size
GET  /calibration/sheets?dpi=             both, as a printable page (print at 100 %)
========================================  ================================================

The PNG sheets carry their DPI in the file (pHYs chunk, and the file name): printed at
100 % scale, a 2.0 in marker measures 2.0 in.
"""

from __future__ import annotations

import struct
import threading
import zlib
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from flask import Blueprint, Response, current_app, jsonify, render_template, request, url_for

from tracker.calibrate import picture_blur, picture_warnings
from tracker.inputs import quote

from . import get_player
from .api import json_body, jsonable, only_fields, the_latest, the_player
from .errors import ApiError

bp = Blueprint("calib", __name__)

DEFAULT_DPI = 300
LETTER_IN = (8.5, 11.0)
_coverage_lock = threading.Lock()
COVERAGE_KEY = "tabletracker.coverage"


# -- the sheets ------------------------------------------------------------------------
def png_with_dpi(img: np.ndarray, dpi: int, comment: str = "") -> bytes:
    """PNG bytes with the resolution written in (pHYs, pixels per metre) and a comment."""
    ok, buf = cv2.imencode(".png", img, [cv2.IMWRITE_PNG_COMPRESSION, 6])
    if not ok:
        raise ApiError(500, "could not encode the PNG")
    data = buf.tobytes()

    def chunk(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload) & 0xFFFFFFFF)

    ppm = round(dpi / 0.0254)
    extra = chunk(b"pHYs", struct.pack(">IIB", ppm, ppm, 1))
    if comment:
        extra += chunk(b"tEXt", b"Comment\x00" + comment.encode("latin-1", "replace"))
    return data[:33] + extra + data[33:]  # after the signature (8) and IHDR (25)


def dpi_arg(*lengths_in: float) -> int:
    raw = request.args.get("dpi", str(DEFAULT_DPI)).strip()
    if not raw.isdecimal() or not 72 <= int(raw) <= 1200:
        raise ApiError(400, f"'dpi' must be a whole number 72-1200 (e.g. 300), not {quote(raw)}")
    dpi = int(raw)
    for length in lengths_in:
        if abs(length * dpi - round(length * dpi)) > 1e-6:
            raise ApiError(400, f"at {dpi} dpi a {length:g} in square is not a whole number of pixels; "
                                f"use a dpi such as 300 or 600")
    return dpi


def _text(img: np.ndarray, text: str, org: tuple[int, int], dpi: int, size: float = 0.12) -> None:
    scale = size * dpi / 30.0
    cv2.putText(img, text, org, cv2.FONT_HERSHEY_SIMPLEX, scale, (0, 0, 0), max(1, round(dpi / 150)), cv2.LINE_AA)


def _scale_bar(img: np.ndarray, x: int, y: int, dpi: int) -> None:
    """A 1-inch bar with ticks: measure it to check the print scale."""
    t = max(2, dpi // 100)
    cv2.rectangle(img, (x, y), (x + dpi - 1, y + t), (0, 0, 0), -1)
    for k in (0, dpi - 1):
        cv2.rectangle(img, (x + k - t // 2, y - 3 * t), (x + k + t // 2, y + 4 * t), (0, 0, 0), -1)
    _text(img, "1 in", (x + dpi + 4 * t, y + 3 * t), dpi, 0.09)


def table_marker_sheet(table, dpi: int) -> np.ndarray:
    """The table's markers (ids, size, dictionary from the game config), 2 x 2 on a
    US-letter page, each in a white quiet zone with its id and where it goes."""
    from calibration.markers import get_dictionary

    W, H = round(LETTER_IN[0] * dpi), round(LETTER_IN[1] * dpi)
    page = np.full((H, W), 255, np.uint8)
    dictionary = get_dictionary(table.dictionary)
    cell_w, cell_h = W // 2, (H - dpi) // 2
    for k, m in enumerate(table.markers[:4]):
        side = round(m.size_in * dpi)
        img = cv2.aruco.generateImageMarker(dictionary, int(m.id), side, borderBits=1)
        cx, cy = (k % 2) * cell_w + cell_w // 2, dpi // 2 + (k // 2) * cell_h + cell_h // 2
        x0, y0 = cx - side // 2, cy - side // 2
        page[y0:y0 + side, x0:x0 + side] = img
        _text(page, f"id {m.id}  {m.size_in:g} in  {table.dictionary}", (x0, y0 + side + dpi // 4), dpi, 0.1)
        _text(page, f"centre at ({m.centre_in[0]:g}, {m.centre_in[1]:g}) in", (x0, y0 + side + dpi // 2), dpi, 0.08)
    _text(page, f"Table markers - print at 100% ({dpi} dpi); each black square measures exactly "
                f"{table.markers[0].size_in:g} in", (dpi // 3, dpi // 3), dpi, 0.085)
    _scale_bar(page, dpi // 3, H - dpi // 2, dpi)
    return page


def charuco_sheet(cb, dpi: int) -> np.ndarray:
    """The ChArUco calibration board of the game config, true size, landscape letter."""
    from calibration.boards import board_from_config

    board = board_from_config(cb)
    sq = round(cb.square_in * dpi)
    bw, bh = cb.squares[0] * sq, cb.squares[1] * sq
    W, H = round(LETTER_IN[1] * dpi), round(LETTER_IN[0] * dpi)
    if bw > W or bh > H - dpi // 2:
        W, H = max(W, bw + dpi), max(H, bh + dpi)
    page = np.full((H, W), 255, np.uint8)
    img = board.board.generateImage((bw, bh), marginSize=0, borderBits=1)
    x0, y0 = (W - bw) // 2, (H - bh) // 2 + dpi // 8
    page[y0:y0 + bh, x0:x0 + bw] = img
    _text(page, f"ChArUco {cb.squares[0]}x{cb.squares[1]} squares of {cb.square_in:g} in, markers {cb.marker_in:g} in, "
                f"{cb.dictionary} - print at 100% ({dpi} dpi), glue flat", (dpi // 4, dpi // 3), dpi, 0.08)
    _scale_bar(page, dpi // 4, H - dpi // 4, dpi)
    return page


def the_config():
    player = get_player(current_app)
    if player is not None:
        return player.pipeline.config
    from tracker.config import GameConfig

    return GameConfig.load(current_app.config["FOOTAGE"])


def sheet_png(image, dpi: int, comment: str, filename: str) -> Response:
    """A printable sheet as PNG, its DPI in the file (pHYs), a comment and the name."""
    return Response(png_with_dpi(image, dpi, f"tabletracker {comment}, {dpi} dpi"), mimetype="image/png",
                    headers={"Content-Disposition": f'inline; filename="{filename}-{dpi}dpi.png"',
                             "X-DPI": str(dpi), "Cache-Control": "public, max-age=3600"})


@bp.get("/calibration/table-markers.png")
def table_markers_png():
    table = the_config().table
    dpi = dpi_arg(*(m.size_in for m in table.markers))
    return sheet_png(table_marker_sheet(table, dpi), dpi,
                     f"table markers {[m.id for m in table.markers]} {table.dictionary}, {table.markers[0].size_in:g} in",
                     "table-markers")


@bp.get("/calibration/charuco.png")
def charuco_png():
    cb = the_config().calibration_board
    dpi = dpi_arg(cb.square_in)
    size = f"{cb.squares[0]}x{cb.squares[1]}"
    return sheet_png(charuco_sheet(cb, dpi), dpi,
                     f"ChArUco {size} {cb.square_in:g} in / {cb.marker_in:g} in {cb.dictionary}", f"charuco-{size}")


@bp.get("/calibration/sheets")
def sheets():
    cfg = the_config()
    dpi = dpi_arg(cfg.calibration_board.square_in, *(m.size_in for m in cfg.table.markers))
    return render_template("sheets.html", dpi=dpi, table=cfg.table, board=cfg.calibration_board,
                           markers_w_in=LETTER_IN[0], markers_h_in=LETTER_IN[1])


# -- health ------------------------------------------------------------------------------
def marker_report(player, latest) -> dict[str, Any]:
    """Table markers found in the frame of ``latest`` and how far each is from where the
    pose in use puts it (cached per frame)."""
    got = latest.cache.get("calib-markers")
    if got is not None:
        return got
    from calibration.markers import detect_markers
    from calibration.table import table_object_points

    pipe = player.pipeline
    table = pipe.config.table
    ids = [m.id for m in table.markers]
    det = detect_markers(latest.result.frame, table.dictionary, refine=True, ids_wanted=ids)
    found = det.as_dict()
    cam = pipe.camera
    expected_uv = np.asarray(cam.project(table_object_points(table, ids).reshape(-1, 3)), float).reshape(len(ids), 4, 2)
    seen, res_all = [], []
    for k, i in enumerate(ids):
        if i not in found:
            continue
        c = np.asarray(found[i], float).reshape(4, 2)
        r = np.sqrt(((c - expected_uv[k]) ** 2).sum(1))
        res_all.extend(r.tolist())
        seen.append({"id": i, "residual_px": round(float(np.sqrt((r ** 2).mean())), 3),
                     "corners_px": (c * latest.scale).round(1).tolist()})
    # How soft this frame is, read off the same markers' printed edges: a camera's
    # autofocus can wander during a game, after set-up found the picture sharp.
    blur = picture_blur(pipe.config, latest.result.frame, det)
    got = {"expected": [{"id": m.id, "centre_in": list(m.centre_in), "size_in": m.size_in,
                         "corners_px": (expected_uv[k] * latest.scale).round(1).tolist()}
                        for k, m in enumerate(table.markers)],
           "seen": seen, "missing": [i for i in ids if i not in found],
           "residual_px": round(float(np.sqrt(np.mean(np.square(res_all)))), 3) if res_all else None,
           "picture_blur_px": None if blur is None else round(blur[1], 3),
           "picture_blur_in": None if blur is None else round(blur[0], 4)}
    latest.cache["calib-markers"] = got
    return got


def pose_json(pose) -> dict[str, Any] | None:
    if pose is None:
        return None
    return jsonable({"reprojection_error_px": pose.reprojection_error_px, "markers_used": list(pose.markers_used),
                     "markers_missing": list(pose.markers_missing),
                     "camera_position_in": [round(float(v), 3) for v in pose.camera_position],
                     "rejected": list(pose.info.get("rejected", [])) if pose.info else []})


def health_events(pipe, limit: int = 20) -> list[dict[str, Any]]:
    """Changes of calibration health (bumps, hidden markers), newest last."""
    tracker = pipe.pose_tracker
    if tracker is None:
        return []
    out: list[dict[str, Any]] = []
    prev = None
    for frame, health in list(tracker.history[-5000:]):
        kind = health.split(" at ")[0]
        if kind != prev:
            out.append({"frame": int(frame), "health": health})
            prev = kind
    return out[-limit:]


@bp.get("/calibration")
def page():
    return render_template("calibration.html")


@bp.get("/api/calibration")
def calibration_state():
    player = the_player()
    latest = the_latest(player)
    pipe = player.pipeline
    setup = pipe.setup
    markers = marker_report(player, latest)
    events = health_events(pipe)
    alerts = []
    if pipe.health != "ok":
        alerts.append(f"calibration health is '{pipe.health}'")
    for e in events:
        if e["health"].startswith("re-posed"):
            alerts.append(f"camera bumped: {e['health']} (the tracker re-posed it from the table markers)")
        elif e["health"] == "lost":
            alerts.append(f"calibration lost at frame {e['frame']}: re-run table calibration")
    if markers["missing"]:
        alerts.append(f"table marker(s) {', '.join(map(str, markers['missing']))} not seen in this frame")
    if markers["residual_px"] is not None and markers["residual_px"] > 2.0:
        alerts.append(f"the table markers are {markers['residual_px']:.1f} px from where the calibration expects them: "
                      f"if the camera moved, re-run table calibration")
    alerts.extend(setup.warnings)
    if markers["picture_blur_px"] is not None and not any(w.startswith("the picture is soft") for w in setup.warnings):
        alerts.extend(picture_warnings((markers["picture_blur_in"], markers["picture_blur_px"]),
                                       lead="the picture has gone soft since set-up"))
    return jsonify(jsonable({
        "frame_index": latest.result.index,
        "health": pipe.health,
        "setup": {"calibration_rms_px": setup.calibration_rms_px, "pose_error_px": setup.pose_error_px,
                  "warnings": list(setup.warnings),
                  "picture_blur_in": getattr(setup, "blur_in", None),
                  "untagged_terrain": [p.id for p in getattr(setup, "untagged", ())]},
        "pose": pose_json(getattr(pipe.camera, "pose", None)),
        "markers": markers,
        "residual_px": markers["residual_px"],
        "alerts": alerts,
        "events": events,
        "full_frame_searches": getattr(pipe.pose_tracker, "full_frame_searches", None),
        "stream": {"width": int(latest.small.shape[1]), "height": int(latest.small.shape[0])},
        "sheets": {"table_markers": url_for("calib.table_markers_png", dpi=DEFAULT_DPI),
                   "charuco": url_for("calib.charuco_png", dpi=DEFAULT_DPI),
                   "printable": url_for("calib.sheets", dpi=DEFAULT_DPI)},
        "coverage_url": url_for("calib.coverage") if calib_views(current_app.config["FOOTAGE"]) else None,
    }))


@bp.post("/api/calibration/table")
def recalibrate_table():
    """Re-estimate the table pose from the current frame and use it from the next frame on."""
    only_fields(json_body(), (), "send {}")
    player = the_player()
    latest = the_latest(player)
    frame = latest.result.frame

    def repose(pipe):
        from calibration.camera import CameraModel
        from calibration.table import estimate_table_pose

        from tracker.errors import CalibrationError

        intr = getattr(pipe.camera, "intrinsics", None)
        old = getattr(pipe.camera, "pose", None)
        try:
            pose = estimate_table_pose(frame, intr, pipe.config.table, terrain=pipe.config.terrain_library or None)
        except CalibrationError as e:
            raise ApiError(422, str(e)) from None
        cam = CameraModel(intr, pose)
        pipe.set_camera(cam)
        if pipe.pose_tracker is not None:
            pipe.pose_tracker.pose = pose
        player.annotator.camera = cam
        pipe.health = "ok"
        return old, pose

    try:
        old, pose = player.call_in_pipeline(repose, timeout=20.0)
    except TimeoutError as e:
        raise ApiError(503, str(e)) from None
    moved = None
    if old is not None:
        moved = round(float(np.linalg.norm(pose.camera_position - old.camera_position)), 4)
    body = pose_json(pose) | {"frame_index": latest.result.index, "camera_moved_in": moved,
                              "previous_error_px": None if old is None else round(float(old.reprojection_error_px), 4)}
    return jsonify(body)


@bp.get("/calibration/markers.jpg")
def markers_jpg():
    player = the_player()
    latest = the_latest(player)
    rep = marker_report(player, latest)
    img = latest.small.copy()
    for e in rep["expected"]:
        q = np.asarray(e["corners_px"], float)
        if np.all(np.isfinite(q)):
            cv2.polylines(img, [q.round().astype(np.int32)], True, (0, 0, 255), 2, cv2.LINE_AA)
    for s in rep["seen"]:
        q = np.asarray(s["corners_px"], float).round().astype(np.int32)
        cv2.polylines(img, [q], True, (0, 220, 0), 2, cv2.LINE_AA)
        cv2.putText(img, f"{s['id']}: {s['residual_px']:.2f}px", (int(q[:, 0].min()), int(q[:, 1].min()) - 6),
                    cv2.FONT_HERSHEY_SIMPLEX, 0.6, (0, 220, 0), 2, cv2.LINE_AA)
    ok, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 85])
    return Response(buf.tobytes(), mimetype="image/jpeg", headers={"Cache-Control": "no-store"})


def calib_views(footage: str) -> list[Path]:
    calib = Path(footage) / "calib"
    if not calib.is_dir():
        return []
    return sorted(p for p in calib.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png"))


@bp.get("/calibration/coverage.png")
def coverage():
    """Where the board corners of the calibration views fell (the first request runs the
    camera calibration on calib/, a few seconds; then it is kept)."""
    got = current_app.extensions.get(COVERAGE_KEY)
    if got is None:
        views = calib_views(current_app.config["FOOTAGE"])
        if not views:
            raise ApiError(404, "no calibration views (calib/) in the footage folder: no coverage picture")
        with _coverage_lock:
            got = current_app.extensions.get(COVERAGE_KEY)
            if got is None:
                from calibration.boards import board_from_config
                from calibration.intrinsics import calibrate_camera

                res = calibrate_camera(views, board_from_config(the_config().calibration_board), progress=False)
                ok, buf = cv2.imencode(".png", res.coverage)
                got = current_app.extensions[COVERAGE_KEY] = (buf.tobytes(), float(res.coverage_fraction))
    png, fraction = got
    return Response(png, mimetype="image/png", headers={"X-Coverage-Fraction": f"{fraction:.3f}",
                                                        "Cache-Control": "public, max-age=3600"})
