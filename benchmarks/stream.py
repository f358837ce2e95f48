"""MJPEG streaming under load: N concurrent viewers of /stream.mjpg (issue #6).

    python benchmarks/stream.py [--viewers 10] [--seconds 10] [--layers all] [--json out.json]
    python benchmarks/stream.py --url http://127.0.0.1:5000   # an already running server

Starts the real server (``python -m webui.cli`` on a free 127.0.0.1 port, bundled footage,
a throw-away SQLite file), waits until it shows fighters, then opens ``--viewers`` HTTP
connections to /stream.mjpg at once, each read by its own thread for ``--seconds``
(bounded: every read has a timeout, the threads are joined). Prints, per viewer, the
frames received per second (min / mean / max over viewers), the frames every viewer got
(distinct frame indices), bytes/s, and the server's own figures from /api/state sampled
during the run: processing frames/s, source frames/s, frames dropped. The load average
is printed before and after (the machine may be shared).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str, timeout: float = 5.0) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


def wait_ready(base: str, proc: subprocess.Popen | None, timeout: float = 120.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            sys.exit(f"error: the server exited with status {proc.returncode}")
        try:
            s = get_json(base + "/api/state")
            if s["state"]["fighters"]:
                return s
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.3)
    sys.exit(f"error: the server at {base} was not ready in {timeout:.0f} s")


class Viewer(threading.Thread):
    """Reads a multipart MJPEG stream for ``seconds``; counts parts, bytes, frame ids."""

    def __init__(self, url: str, seconds: float, start_at: float):
        super().__init__(daemon=True)
        self.url, self.seconds, self.start_at = url, seconds, start_at
        self.frames = 0
        self.bytes = 0
        self.indices: list[int] = []
        self.first_at: float | None = None
        self.elapsed = 0.0
        self.error: str | None = None

    def run(self) -> None:
        u = urlsplit(self.url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=5.0)
        try:
            while time.monotonic() < self.start_at:
                time.sleep(0.001)
            conn.request("GET", f"{u.path}?{u.query}" if u.query else u.path)
            resp = conn.getresponse()
            if resp.status != 200:
                self.error = f"HTTP {resp.status}"
                return
            t0 = time.monotonic()
            end = t0 + self.seconds
            while time.monotonic() < end:
                line = resp.fp.readline()
                if not line:
                    self.error = "stream closed"
                    break
                if not line.startswith(b"--"):
                    continue
                headers = read_part(resp.fp)
                self.bytes += int(headers.get("content-length", 0))
                self.frames += 1
                self.indices.append(int(headers.get("x-frame-index", -1)))
            self.elapsed = time.monotonic() - t0
        except (OSError, ValueError) as e:
            self.error = f"{e.__class__.__name__}: {e}"
        finally:
            conn.close()

    @property
    def fps(self) -> float:
        return self.frames / self.elapsed if self.elapsed > 0 else 0.0


def read_part(fp) -> dict[str, str]:
    """After an MJPEG boundary line: read one part's headers (lower-cased) and its body."""
    headers = {}
    while True:
        h = fp.readline().strip()
        if not h:
            break
        k, _, v = h.decode("latin-1").partition(":")
        headers[k.strip().lower()] = v.strip()
    fp.read(int(headers.get("content-length", 0)))
    return headers


def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


@contextlib.contextmanager
def served(url: str | None, source: str | None = None):
    """``(base URL, first /api/state)`` of the server to measure: the one at ``url``, or
    the bundled sample (or ``source``, as ``serve --source`` takes it) served by a fresh
    ``webui.cli`` on a free port, stopped after."""
    proc = None
    tmp = tempfile.TemporaryDirectory()
    if url:
        base = url.rstrip("/")
    else:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.pop("TABLETRACKER_TOKEN", None)
        log = open(Path(tmp.name) / "server.log", "wb")
        cmd = [sys.executable, "-m", "webui.cli", "--db", str(Path(tmp.name) / "bench.sqlite"), "--port", str(port)]
        proc = subprocess.Popen(cmd + (["--source", str(source)] if source else []), cwd=ROOT, env=env, stdout=log,
                                stderr=subprocess.STDOUT)
    try:
        print(f"load average before: {loadavg()}  (cpus: {os.cpu_count()})")
        state = wait_ready(base, proc)
        print(f"server {base}: stream {state['stream']['width']}x{state['stream']['height']}, "
              f"source {state['fps']['source']:.1f} frames/s")
        time.sleep(2.0)  # let the processing rate settle
        yield base, state
        print(f"load average after: {loadavg()}")
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        tmp.cleanup()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--viewers", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--layers", default="all", help="layers query ('all' = the page's default, or e.g. 'bases,rings')")
    ap.add_argument("--url", default=None, help="benchmark a server already running here instead of starting one")
    ap.add_argument("--json", default=None, help="also write the figures here")
    args = ap.parse_args()
    if not 1 <= args.viewers <= 100 or not 1 <= args.seconds <= 120:
        sys.exit("error: --viewers 1-100 and --seconds 1-120")

    with served(args.url) as (base, state):
        idle0 = get_json(base + "/api/state")["fps"]
        t_idle = time.monotonic()
        time.sleep(5.0)  # processing with no viewer, for comparison
        idle1 = get_json(base + "/api/state")["fps"]
        idle_fps = (idle1["processed"] - idle0["processed"]) / (time.monotonic() - t_idle)
        q = "" if args.layers == "all" else f"?layers={args.layers}"
        start_at = time.monotonic() + 0.5
        viewers = [Viewer(f"{base}/stream.mjpg{q}", args.seconds, start_at) for _ in range(args.viewers)]
        before = get_json(base + "/api/state")["fps"]
        for v in viewers:
            v.start()
        samples = []
        while any(v.is_alive() for v in viewers) and time.monotonic() < start_at + args.seconds + 15:
            time.sleep(1.0)
            try:
                samples.append(get_json(base + "/api/state")["fps"])
            except (OSError, ValueError):
                pass
        for v in viewers:
            v.join(10)
        after = samples[-1] if samples else before
        fps = [v.fps for v in viewers]
        processing = [s["processing"] for s in samples if s["processing"] > 0]
        processed = after["processed"] - before["processed"]
        run_s = max(time.monotonic() - start_at, 1e-6)
        dropped = after["dropped"] - before["dropped"]
        out = {
            "viewers": args.viewers, "seconds": args.seconds, "layers": args.layers,
            "viewer_fps_min": round(min(fps), 2), "viewer_fps_mean": round(statistics.mean(fps), 2),
            "viewer_fps_max": round(max(fps), 2),
            "viewer_kbytes_per_s_mean": round(statistics.mean(v.bytes / max(v.elapsed, 1e-6) for v in viewers) / 1024, 1),
            "distinct_frames_mean": round(statistics.mean(len(set(v.indices)) for v in viewers), 1),
            "server_processing_fps_mean": round(statistics.mean(processing), 2) if processing else 0.0,
            "server_processing_fps_run": round(processed / run_s, 2),
            "server_processing_fps_no_viewers": round(idle_fps, 2),
            "server_source_fps": after["source"],
            "server_processed": processed, "server_dropped": dropped,
            "errors": [v.error for v in viewers if v.error],
        }
        print(f"{args.viewers} viewers x {args.seconds:g} s, layers={args.layers}")
        print(f"  frames/s per viewer: min {out['viewer_fps_min']:.2f}  mean {out['viewer_fps_mean']:.2f}  "
              f"max {out['viewer_fps_max']:.2f}   ({out['viewer_kbytes_per_s_mean']:.0f} KiB/s each)")
        print(f"  server: processing {out['server_processing_fps_run']:.2f} frames/s of the source's "
              f"{out['server_source_fps']:.1f} during the run ({processed} processed, {dropped} dropped); "
              f"{out['server_processing_fps_no_viewers']:.2f} frames/s with no viewer just before")
        if out["errors"]:
            print(f"  viewer errors: {out['errors']}")
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
