"""Steady-state speed of the pipeline on a 1920x1080 VIDEO, change gate on vs off (issue #4).

    python benchmarks/speed_video.py [FOLDER ...] [--warmup 10] [--max-frames N] [--json out.json] [--gate-on-only]
    python benchmarks/speed_video.py --render     # renders the default clips once (minutes)

The eval sets are unrelated snapshots, so they cannot show what a video's still frames
save; this runs whole clips in order. Both pipelines (``Pipeline(..., gate=True)`` and
``gate=False``, same calibration) get every frame in turn in the same process, so both
see the same machine load. One core: thread env vars and ``cv2.setNumThreads(1)`` are
set before numpy / OpenCV load. Decoding is not timed.

Per clip and mode: frames/s after warm-up (wall time and CPU time of ``process()``,
``time.thread_time``), mean / p50 / p95 ms, the share of frames that were still / pose
only / follow / full looks and the CPU ms of each kind, and the accuracy of what the
tracker reports against the clip's truth.json (the shared scorer, as
benchmarks/footage.py: visible-base recall, precision, sides, median / RMS error,
tokens). The load average is printed before and after: with other jobs on the machine
wall time also counts waiting for a CPU.

Default clips (those that exist): ~/.cache/tabletracker/bench-1080p (a 10 s Warcry game
rendered at 1920x1080, 15 fps: ``render_set(seed=11)``), ~/.cache/tabletracker/
bench-1080p-paced (the same kind of game with the players pausing ``--pause`` s between
activations, as at a real table: see ``render_paced``), sample_footage/epic-demo
(1920x1080, 8 fps, an Epic-scale game: a unit slides up to 1.4 in between frames) and
~/.cache/tabletracker/bench-1080p-epic30 and bench-1080p-30fps (the Epic game and the
unpaced Warcry game rendered at 30 fps, a webcam's rate, the one the 30 frames/s aim
is for: ``render_epic_set(fps=30)``, ``render_set(seed=11, fps=30)``).
"""

from __future__ import annotations

import os

import one_core  # noqa: F401  (first: one thread for BLAS and OpenCV, before they load)
import cv2  # noqa: E402

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.footage import (load_scorer, rms_by_side, side_contrast_line, state_prediction,  # noqa: E402
                                tokens_in_sight_found)
from tracker.pipeline import Pipeline  # noqa: E402
from tracker.sources import open_source  # noqa: E402

CACHE = Path.home() / ".cache" / "tabletracker"
CLIPS = [CACHE / "bench-1080p", CACHE / "bench-1080p-paced", REPO / "sample_footage" / "epic-demo",
         CACHE / "bench-1080p-epic30", CACHE / "bench-1080p-30fps"]
KINDS = ("still", "pose", "follow", "region", "full")


def render_paced(out: Path, seed: int = 13, seconds: float = 8.0, pause_s: float = 2.5, fps: float = 15.0,
                 width: int = 1920, height: int = 1080) -> Path:
    """A Warcry game planned as ``render_set`` plans it (same seed streams), then paced
    like a real game: ``pause_s`` of stillness is inserted in every idle gap between
    activations (moves and hands keep their own speed and order). Rendered with
    ``render_set(..., game=...)``; the truth follows the new timing."""
    from tracker.synthetic.game import plan_game, render_set

    rng = np.random.default_rng(seed)
    r_game = np.random.default_rng(rng.integers(0, 2**63, 5)[0])
    game = plan_game(r_game, seconds, 12, None, True)
    busy = sorted([(m.t0, m.t1) for f in game.fighters for m in f.moves] + [(h.t0, h.t3) for h in game.hands])
    merged: list[list[float]] = []
    for a, b in busy:
        if merged and a <= merged[-1][1] + 0.05:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    # One pause before the first activation, one in each idle gap between two.
    cuts = [0.5 * merged[0][0]] + [0.5 * (p[1] + q[0]) for p, q in zip(merged, merged[1:])]

    def shift(t: float) -> float:
        return pause_s * sum(c <= t for c in cuts)

    for f in game.fighters:
        for m in f.moves:
            s = shift(m.t0)
            m.t0, m.t1 = m.t0 + s, m.t1 + s
        if f.removed_at is not None:
            f.removed_at += shift(f.removed_at)
    for h in game.hands:  # targets are fixed points or a fighter's (re-timed) path
        s = shift(h.t0)
        h.t0, h.t1, h.t2, h.t3 = h.t0 + s, h.t1 + s, h.t2 + s, h.t3 + s
    total = seconds + pause_s * len(cuts)
    game.seconds = total
    return render_set(out, seed=seed, width=width, height=height, seconds=total, fps=fps, game=game, progress=True)


def _accuracy(truth: dict, preds: list[dict], first: int = 2) -> dict:
    """The tracker's reported state against the truth (as benchmarks/footage.py scores it)."""
    sc = load_scorer()
    kept = [truth["frames"][p["frame"]] for p in preds]
    s = sc.score({"frames": kept[first:]}, {"frames": preds[first:]})
    errs = []
    for fr, p in zip(kept[first:], preds[first:]):
        vis = [f for f in fr["fighters"] if not f["occluded"]]
        errs += [d for *_, d in sc.match([(f["x"], f["y"]) for f in vis], [(q["x"], q["y"]) for q in p["fighters"]], 0.75)]
    return {**s, "median_in": float(np.median(errs)) if errs else float("nan"),
            "token_recall_visible": tokens_in_sight_found(kept[first:], preds[first:]),
            "rms_by_side": rms_by_side(kept[first:], preds[first:])}


def bench(folder: Path, warmup: int, max_frames: int | None, gate_off: bool = True) -> dict:
    t0 = time.perf_counter()
    base = Pipeline.from_footage(folder)
    setup_s = time.perf_counter() - t0
    pipes = {"gate on": Pipeline(base.config, base.setup, fps=base.fps, gate=True)}
    if gate_off:
        pipes["gate off"] = Pipeline(base.config, base.setup, fps=base.fps, gate=False)
    gate_ms: list[float] = []
    gate = pipes["gate on"].gate
    check = gate.check

    def timed_check(frame):
        c = time.thread_time()
        try:
            return check(frame)
        finally:
            gate_ms.append((time.thread_time() - c) * 1e3)

    gate.check = timed_check
    rec = {m: {"wall": [], "cpu": [], "kind": [], "preds": []} for m in pipes}
    truth = json.loads((folder / "truth.json").read_text())
    size = ""
    with open_source(folder) as src:
        for index, t, frame in src:
            if max_frames is not None and index >= max_frames:
                break
            size = f"{frame.shape[1]}x{frame.shape[0]}"
            for mode, pipe in pipes.items():
                w, c = time.perf_counter(), time.thread_time()
                r = pipe.process(frame, index, t)
                dw, dc = (time.perf_counter() - w) * 1e3, (time.thread_time() - c) * 1e3
                rr = rec[mode]
                rr["preds"].append(state_prediction(index, r.state))
                if index >= warmup:
                    rr["wall"].append(dw)
                    rr["cpu"].append(dc)
                    rr["kind"].append(pipe.look)
    out = {"folder": str(folder), "size": size, "fps_clip": base.fps, "frames": len(rec["gate on"]["preds"]),
           "warmup": warmup, "calibration_s": setup_s, "gate_check_cpu_ms": float(np.mean(gate_ms)), "modes": {}}
    for mode, rr in rec.items():
        wall, cpu, kinds = np.array(rr["wall"]), np.array(rr["cpu"]), rr["kind"]
        n = Counter(kinds)
        out["modes"][mode] = {
            "fps_wall": float(1e3 / wall.mean()), "fps_cpu": float(1e3 / cpu.mean()),
            "wall_ms": {"mean": float(wall.mean()), "p50": float(np.median(wall)), "p95": float(np.percentile(wall, 95))},
            "cpu_ms": {"mean": float(cpu.mean()), "p50": float(np.median(cpu)), "p95": float(np.percentile(cpu, 95))},
            "share": {k: n[k] / len(kinds) for k in KINDS if n[k]},
            "cpu_ms_by_kind": {k: float(np.mean([c for c, kk in zip(cpu, kinds) if kk == k])) for k in KINDS if n[k]},
            "accuracy": _accuracy(truth, rr["preds"]),
        }
    out["sides_line"] = {mode: side_contrast_line(base, m["accuracy"]["rms_by_side"]) for mode, m in out["modes"].items()}
    return out


def show(r: dict) -> None:
    print(f"== {Path(r['folder']).name}  {r['size']} @ {r['fps_clip']:g} fps: {r['frames']} frames, "
          f"{r['warmup']} warm-up not timed; calibration {r['calibration_s']:.1f} s; "
          f"gate check {r['gate_check_cpu_ms']:.2f} ms CPU per frame")
    for mode, m in r["modes"].items():
        w, c, a = m["wall_ms"], m["cpu_ms"], m["accuracy"]
        print(f"  {mode:8s} CPU {m['fps_cpu']:6.1f} frames/s (mean {c['mean']:.1f}  p50 {c['p50']:.1f}  p95 {c['p95']:.1f} ms)"
              f"   wall {m['fps_wall']:6.1f} frames/s (mean {w['mean']:.1f}  p50 {w['p50']:.1f}  p95 {w['p95']:.1f} ms)")
        print("           frames: " + "  ".join(f"{k} {100 * v:.0f}% ({m['cpu_ms_by_kind'][k]:.1f} ms CPU)"
                                              for k, v in m["share"].items()))
        print(f"           accuracy: bases found (unoccluded) {a['recall_visible']:.4f}  precision {a['precision']:.4f}  "
              f"sides {a['team_accuracy']:.4f}  median {a['median_in']:.4f} in  RMS {a['rms_in']:.4f} in  "
              f"p95 {a['p95_in']:.4f} in  tokens in sight {a['token_recall_visible']} (all {a['token_recall']}) / {a['token_precision']}")
        print(f"           {r['sides_line'][mode]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="pipeline speed on a video, change gate on vs off (one core)")
    ap.add_argument("folders", nargs="*", type=Path, help="footage folders with truth.json (default: the clips above)")
    ap.add_argument("--warmup", type=int, default=10, help="first frames not timed (both modes)")
    ap.add_argument("--max-frames", type=int, default=None)
    ap.add_argument("--json", dest="json_out", type=Path, default=None)
    ap.add_argument("--render", action="store_true", help="render the missing default clips first (minutes)")
    ap.add_argument("--gate-on-only", action="store_true",
                    help="skip the gate-off pipeline (a third of the time: for A/B runs of two checkouts)")
    a = ap.parse_args(argv)
    if a.render:
        from tracker.synthetic import render_set

        if not (CLIPS[0] / "truth.json").exists():
            render_set(CLIPS[0], seed=11, width=1920, height=1080, seconds=10, fps=15, progress=True)
        if not (CLIPS[1] / "truth.json").exists():
            render_paced(CLIPS[1])
        if not (CLIPS[3] / "truth.json").exists():
            from tracker.synthetic.epic_game import render_epic_set

            render_epic_set(CLIPS[3], fps=30.0, progress=True)
        if not (CLIPS[4] / "truth.json").exists():
            render_set(CLIPS[4], seed=11, width=1920, height=1080, seconds=10, fps=30, progress=True)
    folders = a.folders or [c for c in CLIPS if (c / "truth.json").exists()]
    print(f"one core: cv2 threads {cv2.getNumThreads()}, OMP/OPENBLAS=1; {os.cpu_count()} CPUs on the machine")
    load0 = os.getloadavg()
    print("load average before: %.2f %.2f %.2f" % load0)
    results = []
    for folder in folders:
        r = bench(folder.resolve(), a.warmup, a.max_frames, gate_off=not a.gate_on_only)
        show(r)
        results.append(r)
    load1 = os.getloadavg()
    print("load average after:  %.2f %.2f %.2f  (above 1 per CPU: wall times are inflated; CPU times much less)" % load1)
    if a.json_out:
        a.json_out.write_text(json.dumps({"results": results, "load_before": load0, "load_after": load1}, indent=1))
        print(f"wrote {a.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
