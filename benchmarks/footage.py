"""The whole pipeline on a footage clip, as the live page runs it, against the clip's truth.

Prints frames/s (wall and CPU, one thread, after warm-up) and what the tracker reports
(its world state, not raw detections): share of unoccluded bases found, precision, side
accuracy, median and RMS position error, token recall; scored with the shared scorer.

    python benchmarks/footage.py [FOLDER] [--max-frames N] [--full-every K] [--threads N] [--live]

--live runs it as the live page does (frames in real time, full looks in the worker
process, frames that come while the pipeline is busy dropped) and scores every frame on
the state on screen when it came: the overlay's accuracy, its lag included.

FOLDER defaults to the bundled sample (sample_footage/warcry-demo).
"""

from __future__ import annotations

import os
import sys

# Threads are fixed before numpy and OpenCV load: one core by default, --threads N for more.
_THREADS = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 1
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, str(_THREADS))

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import cv2  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SCORER = ROOT.parent / "shared" / "eval" / "score.py"


def load_scorer():
    spec = importlib.util.spec_from_file_location("shared_eval_score", SCORER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tokens_in_sight_found(truth_frames: list[dict], preds: list[dict], gate: float = 0.75) -> float | None:
    """The share of tokens in sight that the tracker reports, as recall_visible is for
    fighters. The shared scorer's token recall counts every token; our renderer's truth
    marks a token under a player's hand occluded (as it does fighters), and the tracker
    rightly reports such a token held at its place, occluded, not seen."""
    sc = load_scorer()
    n = found = 0
    for fr, p in zip(truth_frames, preds):
        tt = fr["tokens"]
        pairs = sc.match([(t["x"], t["y"]) for t in tt], [(q["x"], q["y"]) for q in p.get("tokens", [])], gate)
        got = {i for i, _, _ in pairs}
        for i, t in enumerate(tt):
            if not t.get("occluded", False):
                n += 1
                found += i in got
    return round(found / n, 4) if n else None


def rms_by_side(truth_frames: list[dict], preds: list[dict], gate: float = 0.75) -> dict[str, dict]:
    """Position RMS (in) of the unoccluded fighters found, per side's rim colour, and how
    many were found: {colour: {"rms": .., "n": ..}}."""
    sc = load_scorer()
    sq: dict[str, list[float]] = {}
    for fr, p in zip(truth_frames, preds):
        vis = [f for f in fr["fighters"] if not f["occluded"]]
        for i, _, d in sc.match([(f["x"], f["y"]) for f in vis], [(q["x"], q["y"]) for q in p["fighters"]], gate):
            sq.setdefault(str(vis[i].get("team_colour", vis[i]["team"])), []).append(d * d)
    return {side: {"rms": round(float(np.sqrt(np.mean(v))), 4), "n": len(v)} for side, v in sq.items()}


def side_contrast_line(pipe, by_side: dict[str, dict]) -> str:
    """RMS per side, each side's rim contrast against the mat, and the RMS of the sides
    the set-up does not warn about (rim colour close to the mat's: ``rim_contrasts``)."""
    from tracker.calibrate import RIM_CONTRAST_MIN, rim_contrasts

    bg = pipe.setup.background
    de = rim_contrasts(pipe.config, pipe.setup.camera, bg) if bg is not None else {}
    warned = {side for side in by_side if de.get(side, 1e9) < RIM_CONTRAST_MIN}
    parts = [f"{side} {v['rms']:.4f}" + (f" (rim {de[side]:.0f} from the mat: warned)" if side in warned else "")
             for side, v in by_side.items()]
    line = "RMS by side: " + ", ".join(parts)
    if warned and len(warned) < len(by_side):
        rest = [v for side, v in by_side.items() if side not in warned]
        rms = np.sqrt(sum(v["rms"] ** 2 * v["n"] for v in rest) / sum(v["n"] for v in rest))
        line += f"; sides not warned {rms:.4f}"
    return line


def state_prediction(index, state) -> dict:
    return {"frame": index,
            "fighters": [{"x": f.x, "y": f.y, "z": f.z, "team": f.side} for f in state.fighters if not f.occluded],
            "tokens": [{"kind": t.kind, "x": t.x, "y": t.y} for t in state.tokens if not t.occluded]}


def main() -> None:
    from tracker.pipeline import Pipeline
    from tracker.sources import default_footage, open_source

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", default=str(default_footage()))
    ap.add_argument("--max-frames", type=int, default=None)
    ap.add_argument("--full-every", type=int, default=5, help="full detection every K frames (1: every frame)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1, help="OpenCV/numpy threads (1: one core)")
    ap.add_argument("--live", action="store_true",
                    help="as the live page runs: frames come in real time, full looks in the worker process, a "
                         "frame that comes while the last is still processed is dropped, and each frame is "
                         "scored on the state shown when it came (the overlay's lag included)")
    a = ap.parse_args()
    cv2.setNumThreads(a.threads)
    folder = Path(a.folder)
    truth = json.loads((folder / "truth.json").read_text())
    pipe = Pipeline.from_footage(folder)
    pipe.full_every = a.full_every
    preds, wall, cpu, kept, states = [], [], [], [], []
    pipe.background = a.live
    start, shown, busy_until, processed, last_t = time.perf_counter(), None, 0.0, 0, None
    for index, t, frame in open_source(folder):
        if a.max_frames is not None and index >= a.max_frames:
            break
        dt, last_t = (t - last_t if last_t is not None else 0.0), t
        if a.live:
            now = time.perf_counter() - start
            if busy_until >= t + dt and shown is not None:
                # A newer frame will have come by the time the pipeline is free (it takes
                # the newest): this one is dropped, and the viewer still sees the last state.
                preds.append(state_prediction(index, shown))
                kept.append(truth["frames"][index])
                states.append(shown)
                continue
            if now < t:
                time.sleep(t - now)
        w0, c0 = time.perf_counter(), time.process_time()
        r = pipe.process(frame, index, t)
        w1, c1 = time.perf_counter(), time.process_time()
        processed += 1
        busy_until = w1 - start
        shown = r.state
        if index >= a.warmup:
            wall.append(w1 - w0)
            cpu.append(c1 - c0)
        preds.append(state_prediction(index, r.state))
        kept.append(truth["frames"][index])
        states.append(r.state)
    pipe.close()
    # Scored from the frame after the tracker can first have confirmed fighters.
    s = load_scorer().score({"frames": kept[2:]}, {"frames": preds[2:]})
    errs = []
    sc = load_scorer()
    for fr, p in zip(kept[2:], preds[2:]):
        vis = [f for f in fr["fighters"] if not f["occluded"]]
        errs += [d for *_, d in sc.match([(f["x"], f["y"]) for f in vis], [(q["x"], q["y"]) for q in p["fighters"]], 0.75)]
    print(f"footage: {folder}  frames: {len(preds)}  full detection every {a.full_every} frames  "
          f"load average: {os.getloadavg()[0]:.1f}")
    if a.live:
        print(f"live: frames in real time, {processed} of {len(preds)} processed (the rest dropped), "
              f"{pipe.background_looks} full looks made in the worker; each frame scored on the state shown when it came")
    print(f"speed ({a.threads} thread(s), after {a.warmup} warm-up frames): {1 / np.mean(wall):.1f} frames/s wall "
          f"(mean {np.mean(wall) * 1e3:.0f} ms, p95 {np.percentile(wall, 95) * 1e3:.0f} ms), "
          f"{1 / np.mean(cpu):.1f} frames/s CPU (mean {np.mean(cpu) * 1e3:.0f} ms)")
    print(f"bases found (unoccluded): {s['recall_visible']:.4f}   all: {s['recall']:.4f}   precision: {s['precision']:.4f}"
          f"   sides right: {s['team_accuracy']:.4f}")
    print(f"position error: median {np.median(errs):.4f} in   RMS {s['rms_in']:.4f} in   p95 {s['p95_in']:.4f} in"
          f"   (floor RMS {s['rms_floor_in']}, platforms RMS {s['rms_elevated_in']})")
    print(side_contrast_line(pipe, rms_by_side(kept[2:], preds[2:])))
    s["token_recall_visible"] = tokens_in_sight_found(kept[2:], preds[2:])
    print(f"tokens: in sight found {s['token_recall_visible']}   all: {s['token_recall']}   precision {s['token_precision']}")
    ctl = control_agreement(kept[2:], states[2:], pipe.config.epic, sc.match)
    print(f"objective control (per objective-frame, as benchmarks/heldout.py): {ctl['ctl_agree']} of {ctl['ctl_n']} "
          f"agreeing with the truth's, {ctl['ctl_flag']} other flagged too close to call, {ctl['ctl_wrong']} wrong "
          f"outright, {ctl['ctl_agree_flag']} agreeing yet flagged")
    s["control"] = ctl
    print(json.dumps({"fps_wall": 1 / np.mean(wall), "fps_cpu": 1 / np.mean(cpu), "median_err_in": float(np.median(errs)),
                      **s}))


def control_agreement(truth_frames: list[dict], states: list, epic_config, match) -> dict[str, int]:
    """Objective control from the states shown against control from the truth's
    fighters and tokens, summed over the frames (``benchmarks.heldout_control``)."""
    from benchmarks.heldout_control import compare_frames, control_rulings

    return compare_frames(truth_frames, [control_rulings(s, epic_config) for s in states], epic_config, match)


if __name__ == "__main__":
    main()
