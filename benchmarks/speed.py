"""Per-frame throughput of the pipeline on ONE core (issue #4).

    python benchmarks/speed.py [--frames 20] [--warmup 3] [--set DIR] [--clip DIR] [--json out.json]

One core: the thread env vars are set and cv2.setNumThreads(1) is called before numpy /
OpenCV are used; the process's CPU time over the measured frames is compared with the
main thread's (1.00 = nothing ran in parallel). ``--pin`` also pins the process to one CPU
(sched_setaffinity); off by default, since on a loaded shared machine pinning only adds
waiting for that one CPU. Frames are decoded into memory first (decoding is not timed). Each frame is fed
to ``Pipeline.process`` in order (looping over the set's frames if there are fewer than
warm-up + measured); the first ``--warmup`` calls are not counted.

The change gate (tracker.motion) is off unless ``--gate``: looped snapshots are not a
video, so this measures what each look costs; ``benchmarks/speed_video.py`` measures a
video's steady state with the gate on and off. Reported per resolution: frames/s, mean / p50 / p95 / max ms of the whole ``process()``
call; the per-stage split of ``result.timings_ms`` (detector: rectify, rings, select,
tokens) plus two stages measured here by wrapping the pipeline's own objects: "pose"
(calibration.live.PoseTracker.update) and "tracking" (FighterTracker.update); "other" is
what remains of process(). The naive baseline (benchmarks/naive.py) is timed on the same
frames for reference. Besides wall time, the CPU time of process() (time.thread_time) is
given: on a loaded, shared machine wall time also counts waiting for the CPU. The machine is shared: the load average is printed before and after.
"""

from __future__ import annotations

import os

import one_core  # noqa: F401  (first: one thread for BLAS and OpenCV, before they load)
import cv2  # noqa: E402

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.naive import NaiveTracker  # noqa: E402
from tracker.pipeline import Pipeline  # noqa: E402
from tracker.sources import open_source  # noqa: E402

SHARED = REPO.parent / "shared"
DEFAULT_SET = SHARED / "eval" / "sets" / "warcry-1"
DEFAULT_CLIP = REPO / "sample_footage" / "warcry-demo"


def pin_one_core() -> str:
    try:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[-1]})
        return f"pinned to CPU {cpus[-1]} of {len(cpus)}"
    except (AttributeError, OSError) as e:  # not Linux, or not allowed
        return f"not pinned ({e})"


def _wrap(obj, name: str, sink: dict, key: str) -> None:
    """Time obj.name(...) into sink[key] (last call), on the instance only."""
    fn = getattr(obj, name)

    def timed(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            sink[key] = (time.perf_counter() - t) * 1e3

    setattr(obj, name, timed)


def load_frames(folder: Path, n: int) -> list[np.ndarray]:
    frames = []
    with open_source(folder) as src:
        for _, _, f in src:
            frames.append(f)
            if len(frames) >= n:
                break
    return frames


def bench(folder: Path, n_frames: int, warmup: int, gate: bool = False) -> dict:
    t0 = time.perf_counter()
    pipe = Pipeline.from_footage(folder)
    setup_s = time.perf_counter() - t0
    if not gate:  # the cost of each look; what a video's still frames save: speed_video.py
        pipe = Pipeline(pipe.config, pipe.setup, fps=pipe.fps, gate=False)
    naive = NaiveTracker.from_folder(folder)
    frames = load_frames(folder, n_frames + warmup)
    extra: dict[str, float] = {}
    if pipe.pose_tracker is not None:
        _wrap(pipe.pose_tracker, "update", extra, "pose")
    _wrap(pipe.tracker, "update", extra, "tracking")
    total, cpu, stages, naive_ms = [], [], [], []
    proc0 = thr0 = 0.0
    for i in range(n_frames + warmup):
        if i == warmup:
            proc0, thr0 = time.process_time(), time.thread_time()
        frame = frames[i % len(frames)]
        extra.clear()
        t, c = time.perf_counter(), time.thread_time()
        r = pipe.process(frame, i, i / pipe.fps)
        dt, dc = (time.perf_counter() - t) * 1e3, (time.thread_time() - c) * 1e3
        t = time.perf_counter()
        naive.process(frame, i)
        dn = (time.perf_counter() - t) * 1e3
        if i < warmup:
            continue
        total.append(dt)
        cpu.append(dc)
        naive_ms.append(dn)
        st = dict(r.timings_ms)
        st.update(extra)
        st["other"] = dt - sum(st.values())
        stages.append(st)
    threads_ratio = (time.process_time() - proc0) / max(time.thread_time() - thr0, 1e-9)
    tot = np.array(total)
    keys = list(dict.fromkeys(k for s in stages for k in s))
    split = {k: {"mean": float(np.mean([s.get(k, 0.0) for s in stages])),
                 "p95": float(np.percentile([s.get(k, 0.0) for s in stages], 95))} for k in keys}
    h, w = frames[0].shape[:2]
    return {"folder": str(folder), "size": f"{w}x{h}", "frames_measured": len(total), "warmup": warmup,
            "distinct_frames": len(frames), "calibration_s": setup_s,
            "fps": float(1e3 / tot.mean()), "mean_ms": float(tot.mean()), "p50_ms": float(np.median(tot)),
            "p95_ms": float(np.percentile(tot, 95)), "max_ms": float(tot.max()), "stages_ms": split,
            "process_cpu_over_thread_cpu": float(threads_ratio),
            "cpu_mean_ms": float(np.mean(cpu)), "cpu_p95_ms": float(np.percentile(cpu, 95)),
            "naive_mean_ms": float(np.mean(naive_ms)), "naive_p95_ms": float(np.percentile(naive_ms, 95))}


def show(r: dict) -> None:
    print(f"== {r['size']}  {Path(r['folder']).name}: {r['frames_measured']} frames measured after {r['warmup']} "
          f"warm-up ({r['distinct_frames']} distinct); calibration {r['calibration_s']:.1f} s")
    print(f"process(): {r['fps']:.2f} frames/s   mean {r['mean_ms']:.0f} ms   p50 {r['p50_ms']:.0f} ms   "
          f"p95 {r['p95_ms']:.0f} ms   max {r['max_ms']:.0f} ms")
    print(f"  CPU time of process() (thread_time, less sensitive to other jobs on the machine): "
          f"mean {r['cpu_mean_ms']:.0f} ms (= {1e3 / r['cpu_mean_ms']:.2f} frames/s), p95 {r['cpu_p95_ms']:.0f} ms; "
          f"process CPU / main-thread CPU {r['process_cpu_over_thread_cpu']:.2f} (1.00 = one core)")
    print(f"  {'stage':10s}{'mean ms':>10s}{'p95 ms':>10s}{'share':>8s}")
    for k, v in r["stages_ms"].items():
        print(f"  {k:10s}{v['mean']:10.1f}{v['p95']:10.1f}{100 * v['mean'] / r['mean_ms']:7.1f}%")
    print(f"naive baseline, same frames: mean {r['naive_mean_ms']:.0f} ms, p95 {r['naive_p95_ms']:.0f} ms per frame")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="pipeline throughput on one core")
    ap.add_argument("--set", type=Path, default=DEFAULT_SET, help="1920x1080 frames (default: eval warcry-1)")
    ap.add_argument("--clip", type=Path, default=DEFAULT_CLIP, help="1280x720 footage (default: sample warcry-demo)")
    ap.add_argument("--frames", type=int, default=20, help="frames measured per resolution")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--json", dest="json_out", type=Path, default=None)
    ap.add_argument("--pin", action="store_true", help="also pin the process to one CPU")
    ap.add_argument("--gate", action="store_true",
                    help="keep the change gate on (off by default: these frames are looped snapshots, "
                         "not a video; benchmarks/speed_video.py measures the gate on clips)")
    a = ap.parse_args(argv)
    pin = pin_one_core() if a.pin else "not pinned"
    print(f"one core: cv2 threads {cv2.getNumThreads()}, OMP/OPENBLAS=1, {pin}; {os.cpu_count()} CPUs on the machine")
    load0 = os.getloadavg()
    print("load average before: %.2f %.2f %.2f" % load0)
    results = []
    for folder in (a.set, a.clip):
        if folder is None or not folder.is_dir():
            print(f"-- {folder}: not found, skipped")
            continue
        try:
            r = bench(folder.resolve(), a.frames, a.warmup, gate=a.gate)
        except Exception as e:  # e.g. footage being regenerated while we read it
            print(f"-- {folder}: failed: {type(e).__name__}: {e}")
            continue
        show(r)
        results.append(r)
    load1 = os.getloadavg()
    print("load average after:  %.2f %.2f %.2f  (a load above 1 per CPU means the timings are inflated)" % load1)
    if a.json_out:
        a.json_out.write_text(json.dumps({"results": results, "load_before": load0, "load_after": load1,
                                          "pinning": pin}, indent=1))
        print(f"wrote {a.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
