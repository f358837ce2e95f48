"""Accuracy benchmark (issue #4): the project's tracker and the naive baseline of
shared/eval/README.md, run side by side in one process on the same frames, both scored
by the shared scorer (imported from where it stands, never copied).

    python benchmarks/eval_sets.py                       # every ../shared/eval/sets/*
    python benchmarks/eval_sets.py --set sample_footage/warcry-demo --max-frames 90
    python benchmarks/eval_sets.py --json eval.json --preds-dir preds/

A set is a folder in the eval layout: setup.json (or game.yaml), calib/, table.jpg,
frames/ (or clip.*) and truth.json (used here ONLY to score). Predictions are what each
frame shows: for the tracker, ``result.detections`` via tracker.cli._eval_frame, exactly
as ``tabletracker track --eval-output`` writes them; for the baseline, benchmarks/naive.py.
"Overall" pools every frame of every set into one scene and scores that once.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.naive import NaiveTracker  # noqa: E402
from tracker.cli import _eval_frame  # noqa: E402
from tracker.pipeline import Pipeline  # noqa: E402
from tracker.sources import open_source  # noqa: E402

SHARED = REPO.parent / "shared"  # beside the repository, as the workplace and CI lay it out
SCORER = SHARED / "eval" / "score.py"
SETS = SHARED / "eval" / "sets"

# (label, key in the scorer's summary, format)
ROWS = [
    ("fighters (truth)", "fighters", "d"),
    ("predicted", "predicted", "d"),
    ("matched", "matched", "d"),
    ("recall", "recall", "%"),
    ("recall visible", "recall_visible", "%"),
    ("precision", "precision", "%"),
    ("side accuracy", "team_accuracy", "%"),
    ("RMS all in", "rms_in", "f"),
    ("RMS floor in", "rms_floor_in", "f"),
    ("RMS platform in", "rms_elevated_in", "f"),
    ("  matched on platf.", "matched_elevated", "d"),
    ("p95 in", "p95_in", "f"),
    ("z RMS in", "z_rms_in", "f"),
    ("token recall", "token_recall", "%"),
    ("token precision", "token_precision", "%"),
    ("token kind acc.", "token_kind_accuracy", "%"),
]
RATIOS = [("RMS all", "rms_in"), ("RMS floor", "rms_floor_in"), ("RMS platform", "rms_elevated_in"), ("p95", "p95_in")]


def load_scorer(path: Path = SCORER):
    spec = importlib.util.spec_from_file_location("shared_eval_score", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.score


def load_truth(folder: Path) -> dict:
    for name in ("truth.json", "scene.json"):
        if (folder / name).is_file():
            return json.loads((folder / name).read_text())
    raise SystemExit(f"{folder}: no truth.json (needed to score)")


def run_set(folder: Path, max_frames: int | None = None) -> dict:
    """Both trackers over one set's frames; their predictions and timings."""
    t0 = time.perf_counter()
    pipe = Pipeline.from_footage(folder)
    pipe.full_every = 1  # the frames are separate snapshots, and the score is of what each one shows
    t1 = time.perf_counter()
    naive = NaiveTracker.from_folder(folder)
    t2 = time.perf_counter()
    pt, pn = [], []
    ms_t, ms_n = [], []
    with open_source(folder) as src:
        for index, t, frame in src:
            if max_frames is not None and index >= max_frames:
                break
            a = time.perf_counter()
            r = pipe.process(frame, index, t)
            pt.append(_eval_frame(r))
            b = time.perf_counter()
            pn.append(naive.process(frame, index))
            c = time.perf_counter()
            ms_t.append((b - a) * 1e3)
            ms_n.append((c - b) * 1e3)
        skipped = src.skipped
    return {"tracker": {"frames": pt}, "naive": {"frames": pn}, "skipped": skipped,
            "setup_s": {"tracker": t1 - t0, "naive": t2 - t1},
            "ms_per_frame": {"tracker": sum(ms_t) / max(len(ms_t), 1), "naive": sum(ms_n) / max(len(ms_n), 1)},
            "naive_radii_px": list(naive.r_px) if naive.r_px else None}


def subset(scene: dict, n: int) -> dict:
    """The truth restricted to the frames that were processed (0 .. n-1)."""
    return {**scene, "frames": [f for f in scene["frames"] if int(f["frame"]) < n]}


def pool(parts: list[tuple[dict, dict, dict]]) -> tuple[dict, dict, dict]:
    """Several (scene, tracker preds, naive preds) as one scene: frames renumbered."""
    scene, pt, pn = {"frames": []}, {"frames": []}, {"frames": []}
    off = 0
    for s, a, b in parts:
        n = 1 + max([int(f["frame"]) for f in s["frames"]] + [int(f["frame"]) for f in a["frames"]] + [-1])
        scene["frames"] += [{**f, "frame": int(f["frame"]) + off} for f in s["frames"]]
        pt["frames"] += [{**f, "frame": int(f["frame"]) + off} for f in a["frames"]]
        pn["frames"] += [{**f, "frame": int(f["frame"]) + off} for f in b["frames"]]
        off += n
    return scene, pt, pn


def _fmt(v, kind: str) -> str:
    if v is None:
        return "-"
    if kind == "d":
        return str(int(v))
    if kind == "%":
        return f"{100 * v:.1f} %"
    return f"{v:.4f}"


def table(name: str, st: dict, sn: dict, extra: str = "") -> str:
    lines = [f"== {name}: {st['frames']} frames{extra}", f"{'':22s}{'tracker':>12s}{'naive':>12s}"]
    for label, key, kind in ROWS:
        lines.append(f"{label:22s}{_fmt(st.get(key), kind):>12s}{_fmt(sn.get(key), kind):>12s}")
    for label, key in RATIOS:
        a, b = st.get(key), sn.get(key)
        ratio = f"{b / a:.1f}x" if a and b is not None else "-"
        lines.append(f"{'naive/tracker ' + label:34s}{ratio:>12s}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", dest="sets", action="append", type=Path, default=None,
                    help="a folder in the eval layout (repeatable; default: every shared/eval/sets/*)")
    ap.add_argument("--max-frames", type=int, default=None,
                    help="score only the first N frames of each set (a 360-frame clip takes minutes)")
    ap.add_argument("--json", dest="json_out", type=Path, default=None, help="write all summaries here")
    ap.add_argument("--preds-dir", type=Path, default=None,
                    help="also write each set's predictions here (tracker-SET.json, naive-SET.json)")
    ap.add_argument("--scorer", type=Path, default=SCORER)
    a = ap.parse_args(argv)
    score = load_scorer(a.scorer)
    sets = a.sets or sorted(p for p in SETS.iterdir() if (p / "truth.json").is_file())
    out: dict = {"sets": {}, "scorer": str(a.scorer)}
    parts = []
    t_all = time.perf_counter()
    for folder in sets:
        folder = folder.resolve()
        run = run_set(folder, a.max_frames)
        n = len(run["tracker"]["frames"])
        scene = subset(load_truth(folder), n)
        st, sn = score(scene, run["tracker"]), score(scene, run["naive"])
        extra = (f"; calibration {run['setup_s']['tracker']:.1f} s (tracker) / {run['setup_s']['naive']:.2f} s (naive);"
                 f" {run['ms_per_frame']['tracker']:.0f} / {run['ms_per_frame']['naive']:.0f} ms per frame;"
                 f" naive radii {run['naive_radii_px']} px")
        if run["skipped"]:
            extra += f"; WARNING {run['skipped']} unreadable frames skipped (indices shift)"
        print(table(folder.name, st, sn, extra), flush=True)
        print()
        out["sets"][folder.name] = {"path": str(folder), "tracker": st, "naive": sn, "setup_s": run["setup_s"],
                                    "ms_per_frame": run["ms_per_frame"], "naive_radii_px": run["naive_radii_px"]}
        parts.append((scene, run["tracker"], run["naive"]))
        if a.preds_dir:
            a.preds_dir.mkdir(parents=True, exist_ok=True)
            for who in ("tracker", "naive"):
                (a.preds_dir / f"{who}-{folder.name}.json").write_text(json.dumps(run[who]))
    if len(parts) > 1:
        scene, pt, pn = pool(parts)
        st, sn = score(scene, pt), score(scene, pn)
        print(table("overall (" + ", ".join(out["sets"]) + ")", st, sn))
        out["overall"] = {"tracker": st, "naive": sn}
    print(f"\ntotal {time.perf_counter() - t_all:.1f} s")
    if a.json_out:
        a.json_out.write_text(json.dumps(out, indent=1))
        print(f"wrote {a.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
