"""How far the overlay lags the camera: the live player's latency, frame by frame.

    python benchmarks/latency.py [--seconds 24] [--poll-hz 2.5] [--json out.json]
    python benchmarks/latency.py --url http://127.0.0.1:5000   # a server already running here
    python benchmarks/latency.py --source sample_footage/epic-demo --seconds 30   # the Epic sample

Starts the real server (``python -m webui.cli`` on a free 127.0.0.1 port, the bundled
footage played in real time, a throw-away SQLite file), waits until it shows fighters,
then reads /stream.mjpg as one viewer for ``--seconds`` (24 s: the whole sample clip once)
while polling /api/state at ``--poll-hz`` (2.5: every 400 ms, as the overlay page
does; each answer takes the server's interpreter for some milliseconds, so polling
at 20 Hz, as this benchmark once did, slowed the frames it measures: on the Epic sample
processing median 45 -> 75 ms). Every MJPEG part carries the times the live
player recorded in-process (``webui/live.py``, Unix seconds, same machine's clock):
``X-Frame-Entered`` (the frame shown entered the player), ``X-State-Entered`` (the frame
the overlay was computed on entered it), ``X-State-Started`` (the pipeline started on that
frame) and ``X-State-Ready`` (that state published).
Printed, median and p95 in ms:

* state ready: frame enters the player -> its state is published (waiting for the
  pipeline + processing; in-process);
* overlay on the stream: frame enters -> the first JPEG carrying the overlay computed on
  that frame is received by the viewer (the issue's figure: camera to overlay on screen,
  browser decode aside);
* pipeline processing: the pipeline started on the frame -> its state published (the
  pipeline's own time, which the machine's load inflates);
* overlay minus processing: the overlay on the stream with that frame's processing time
  taken out (the structural lag alone: waiting for the pipeline to be free, then for the
  stream to carry the state, annotate, encode, send);
* overlay after ready: state published -> first JPEG with it received;
* overlay age: at each JPEG received, how old the moment its overlay shows is (what a
  viewer sees at any time, frames the pipeline had no time for included);
* video: frame enters -> its own JPEG (picture with the newest overlay pasted) received;
* state API: frame enters -> the first /api/state answer with its frame_index (polling
  granularity included: up to 1/poll-hz);

and the share of source frames that got their own state (the others are dropped: the
overlay never queues).
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stream import get_json, read_part, served  # noqa: E402  (the sibling benchmark)


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


def read_stream(url: str, seconds: float) -> tuple[float, list[dict]]:
    """One viewer: (when it connected, the headers of every MJPEG part with the time its
    JPEG was received)."""
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=5.0)
    parts: list[dict] = []
    connected = time.time()
    try:
        conn.request("GET", f"{u.path}?{u.query}" if u.query else u.path)
        resp = conn.getresponse()
        if resp.status != 200:
            sys.exit(f"error: {url}: HTTP {resp.status}")
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            line = resp.fp.readline()
            if not line:
                sys.exit("error: the stream closed")
            if not line.startswith(b"--"):
                continue
            headers = read_part(resp.fp)
            got = time.time()
            if "x-frame-entered" not in headers:
                sys.exit("error: the stream parts carry no X-Frame-Entered header (an older server?)")
            parts.append({"received": got, "index": int(headers["x-frame-index"]),
                          "state_index": int(headers["x-state-frame-index"]),
                          "entered": float(headers["x-frame-entered"]),
                          "state_entered": float(headers["x-state-entered"]),
                          "state_ready": float(headers["x-state-ready"]),
                          "state_started": float(headers.get("x-state-started", "nan"))})
    finally:
        conn.close()
    return connected, parts


class StatePoller(threading.Thread):
    """GET /api/state at ``hz``: (time answered, frame_index) of each answer."""

    def __init__(self, base: str, hz: float):
        super().__init__(daemon=True)
        self.base, self.period = base, 1.0 / hz
        self.stop = threading.Event()
        self.seen: list[tuple[float, int]] = []

    def run(self) -> None:
        while not self.stop.is_set():
            t0 = time.monotonic()
            try:
                s = get_json(self.base + "/api/state")
                self.seen.append((time.time(), int(s["frame_index"])))
            except (OSError, ValueError, KeyError):
                pass
            self.stop.wait(max(0.0, self.period - (time.monotonic() - t0)))


def figures(connected: float, parts: list[dict], polled: list[tuple[float, int]]) -> dict:
    """The latencies in ms; frames that entered the player before the viewer connected
    are left out of the per-frame figures (they could not have reached it sooner)."""
    ms = 1000.0
    states: dict[float, dict] = {}  # per state (its frame's entry time): first part showing it
    for p in parts:
        if p["state_entered"] >= connected and p["state_entered"] not in states:
            states[p["state_entered"]] = p
    ready = [(p["state_ready"] - e) * ms for e, p in states.items()]
    overlay = [(p["received"] - e) * ms for e, p in states.items()]
    timed = [(e, p) for e, p in states.items() if p["state_started"] > 0]  # (NaN: an older server)
    processing = [(p["state_ready"] - p["state_started"]) * ms for e, p in timed]
    structural = [(p["received"] - e - (p["state_ready"] - p["state_started"])) * ms for e, p in timed]
    after_ready = [(p["received"] - p["state_ready"]) * ms for e, p in states.items()]
    age = [(p["received"] - p["state_entered"]) * ms for p in parts if p["state_entered"] > 0]
    video = [(p["received"] - p["entered"]) * ms for p in parts if p["entered"] >= connected]
    # the state API: frame indices repeat when the clip loops, so each index is matched to
    # the latest entry of that index streamed before the answer
    entered_by_index: dict[int, list[float]] = {}
    for p in parts:
        entered_by_index.setdefault(p["index"], []).append(p["entered"])
    api: dict[float, float] = {}
    for t, idx in polled:
        cands = [e for e in entered_by_index.get(idx, []) if e <= t]
        if cands:
            e = max(cands)
            api.setdefault(e, (t - e) * ms)
    frames = {p["entered"] for p in parts}
    return {"parts": len(parts), "source_frames": len(frames), "states": len(states),
            "state_ready_ms": ready, "overlay_on_stream_ms": overlay, "processing_ms": processing,
            "overlay_minus_processing_ms": structural, "overlay_after_ready_ms": after_ready,
            "overlay_age_ms": age,
            "video_ms": video, "state_api_ms": list(api.values()), "polls": len(polled)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=24.0, help="how long to watch (24 s: the sample clip once)")
    ap.add_argument("--poll-hz", type=float, default=2.5,
                    help="/api/state requests per second (2.5: as the overlay page polls)")
    ap.add_argument("--url", default=None, help="measure a server already running here (on this machine)")
    ap.add_argument("--source", default=None,
                    help="serve this instead of the Warcry sample (e.g. sample_footage/epic-demo)")
    ap.add_argument("--json", default=None, help="also write the figures here")
    args = ap.parse_args()
    if not 2 <= args.seconds <= 300 or not 0.5 <= args.poll_hz <= 50:
        sys.exit("error: --seconds 2-300 and --poll-hz 0.5-50")

    if args.url and urlsplit(args.url).hostname not in ("127.0.0.1", "localhost"):
        sys.exit("error: --url must be on this machine (the times compared come from its clock)")
    with served(args.url, args.source) as (base, state):
        poller = StatePoller(base, args.poll_hz)
        poller.start()
        connected, parts = read_stream(base + "/stream.mjpg", args.seconds)
        poller.stop.set()
        poller.join(5)
        f = figures(connected, parts, poller.seen)
        out = {"seconds": args.seconds, "poll_hz": args.poll_hz, "parts": f["parts"],
               "source_frames": f["source_frames"], "own_state_share": round(f["states"] / max(f["source_frames"], 1), 3)}
        print(f"{args.seconds:g} s, one viewer: {f['parts']} JPEGs of {f['source_frames']} source frames; "
              f"{f['states']} got their own state ({100 * out['own_state_share']:.0f} %, the rest dropped)")
        names = [("state_ready_ms", "state ready (in-process)"), ("overlay_on_stream_ms", "overlay on the stream"),
                 ("processing_ms", "pipeline processing"), ("overlay_minus_processing_ms", "overlay minus processing"),
                 ("overlay_after_ready_ms", "overlay after state ready"),
                 ("overlay_age_ms", "overlay age when shown"), ("video_ms", "video frame on the stream"),
                 ("state_api_ms", f"state API ({args.poll_hz:g} Hz polling)")]
        print(f"  {'frame enters the player ->':30s} {'median':>8s} {'p95':>8s} {'max':>8s}     n")
        for key, label in names:
            xs = f[key]
            if not xs:
                print(f"  {label:30s} no samples")
                continue
            out[key] = {"median": round(statistics.median(xs), 1), "p95": round(pct(xs, 95), 1),
                        "max": round(max(xs), 1), "n": len(xs)}
            o = out[key]
            print(f"  {label:30s} {o['median']:8.1f} {o['p95']:8.1f} {o['max']:8.1f} {o['n']:5d}   ms")
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
