"""Pages: the live overlay, the MJPEG stream with the overlay drawn server-side (a part
for every new source frame and for every newly processed state, each the newest frame
with the newest state's overlay, so a frame may come twice, the second time with a newer
overlay; ``X-Frame-Index`` is the frame shown, ``X-State-Frame-Index`` the frame the
overlay was computed on; ``X-Frame-Entered``, ``X-State-Entered`` when those frames entered
the live player, ``X-State-Started`` when the pipeline started on the state's frame and
``X-State-Ready`` when that state was published, Unix seconds: ``benchmarks/latency.py``), a single
JPEG of the table, and a game's printable report. The calibration page: webui.calib."""

from __future__ import annotations

import socket
import time

from flask import Blueprint, Response, current_app, render_template, request, stream_with_context

from tracker.annotate import DEFAULT_LAYERS, LAYERS

from . import get_player
from .api import export_data, the_latest, the_player
from .errors import ApiError

bp = Blueprint("pages", __name__)

BOUNDARY = "frame"


def parse_layers(arg: str | None) -> frozenset[str]:
    """``?layers=bases,rings`` → that set; absent → every layer; ``none`` → none."""
    if arg is None:
        return DEFAULT_LAYERS
    arg = arg.strip()
    if arg in ("", "none"):
        return frozenset()
    got = frozenset(p.strip() for p in arg.split(",") if p.strip())
    bad = got - DEFAULT_LAYERS
    if bad:
        raise ApiError(400, f"unknown layer(s) {', '.join(sorted(bad))}; use any of {', '.join(LAYERS)} or 'none'")
    return got


@bp.get("/")
def index():
    # The page's scripts ask the Epic API only on an Epic game (on Warcry it is a 409,
    # logged in the browser's console on every load).
    player = get_player(current_app)
    game = "epic" if player is not None and getattr(player.pipeline, "epic", None) is not None else "warcry"
    return render_template("index.html", layers=LAYERS, game=game)


@bp.get("/favicon.ico")
def favicon():
    """No icon (the pages say so with ``rel=icon href=data:,``); a browser asking anyway
    (a JSON page, the stream) gets 204, not a 404 in its console."""
    return Response(status=204, headers={"Cache-Control": "public, max-age=86400"})


@bp.get("/stream.mjpg")
def stream():
    layers = parse_layers(request.args.get("layers"))
    player = the_player()
    max_frames = request.args.get("frames")
    limit = None
    if max_frames is not None:
        if not max_frames.isdecimal() or int(max_frames) < 1:
            raise ApiError(400, "'frames' must be a positive whole number (frames to send before closing)")
        limit = int(max_frames)

    def gen():
        # Every source frame, at the source's rate, with the overlay of the newest
        # processed state (processing may be slower than the camera), and every new state
        # at once on the newest frame (not on the next one to come). Always the newest
        # pair: a slow viewer skips what it had no time for. One JPEG per frame, state and
        # layer set, shared by every viewer.
        shown, sent = None, 0
        sock = request.environ.get("werkzeug.socket")  # (the development server's; else None)
        player.stream_opened(layers)
        try:
            yield from parts(shown, sent, sock)
        finally:
            player.stream_closed(layers)

    def parts(shown, sent, sock):
        while limit is None or sent < limit:
            got = player.wait_view(shown, timeout=2.0)
            if got is None:
                if not player.running:
                    return
                continue
            video, latest = got
            shown = (video.seq, latest.seq)
            jpg = player.video_jpeg(video, latest, layers)
            if sent == 0 and sock is not None:
                # A send buffer of about two parts: a viewer slower than the stream makes
                # the next write wait (and then get the newest pair) instead of parts
                # piling up, seconds old, in the kernel's buffer.
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, max(64 * 1024, 2 * len(jpg)))
                except OSError:
                    pass
            yield (f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {len(jpg)}\r\n"
                   f"X-Frame-Index: {video.index}\r\nX-State-Frame-Index: {latest.result.index}\r\n"
                   f"X-Frame-Entered: {video.entered_at:.6f}\r\nX-State-Entered: {latest.entered_at:.6f}\r\n"
                   f"X-State-Started: {latest.started_at:.6f}\r\nX-State-Ready: {latest.ready_at:.6f}\r\n\r\n").encode() \
                + jpg + b"\r\n"
            sent += 1

    return Response(stream_with_context(gen()), mimetype=f"multipart/x-mixed-replace; boundary={BOUNDARY}",
                    headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


@bp.get("/snapshot.jpg")
def snapshot():
    layers = parse_layers(request.args.get("layers"))
    player = the_player()
    latest = the_latest(player)
    return Response(player.jpeg(latest, layers), mimetype="image/jpeg",
                    headers={"Cache-Control": "no-store", "X-Frame-Index": str(latest.result.index)})


@bp.get("/games/<int:game_id>/report")
def report(game_id: int):
    data = export_data(game_id, external=False)
    player = get_player(current_app)
    sides = {s.index: s.colour for s in player.pipeline.config.sides} if player else {}
    return render_template("report.html", data=data, sides=sides, generated=time.strftime("%Y-%m-%d %H:%M"))
