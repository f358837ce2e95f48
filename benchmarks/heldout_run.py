"""One set of ``benchmarks/heldout.py``: the tracker and the naive baseline on its frames
(they see only what a user has: setup.json, calib/, table.jpg, frames/), then, on the
scoring side, the truth: tallies, hard cases, objective control.

``run_set`` is what a worker process runs; it returns plain data (picklable, JSON-able).
"""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
EVAL = REPO.parent / "shared" / "eval"
SCORER, BASELINE = EVAL / "score.py", EVAL / "baseline.py"

_modules: dict[Path, ModuleType] = {}


def load_module(path: Path) -> ModuleType:
    """A script of ../shared/eval imported from where it stands (never copied)."""
    if path not in _modules:
        spec = importlib.util.spec_from_file_location(f"shared_eval_{path.stem}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _modules[path] = mod
    return _modules[path]


# -- what the tracker and the baseline see ------------------------------------------------
def prediction(r: Any) -> dict:
    """One frame in the scorer's format (``tracker.cli._eval_frame``), its fighters also
    carrying ``shape`` and ``angle_deg`` when the detections have them, and ``base_mm``,
    ``score``, ``from_foreground``, ``sigma_in``; its tokens ``tag_id`` when named."""
    from tracker.base_shapes import SHAPE_NAMES
    from tracker.cli import _eval_frame
    from tracker.detection import KIND_BASE

    out = _eval_frame(r)
    d = r.detections
    tokens = [k for k in range(len(d.kind)) if d.kind[k] != KIND_BASE]
    for t, k in zip(out["tokens"], tokens):
        if d.tag_id[k] >= 0:
            t["tag_id"] = int(d.tag_id[k])  # which token it is (not scored by score.py)
    shape, angle = getattr(d, "shape", None), getattr(d, "angle_deg", None)
    shaped = shape is not None and angle is not None and len(shape) == len(d.kind)
    rows = [k for k in range(len(d.kind)) if d.kind[k] == KIND_BASE]
    for f, k in zip(out["fighters"], rows):
        if shaped:
            f["shape"] = SHAPE_NAMES.get(int(shape[k]), "round")
            f["angle_deg"] = float(angle[k])
        # How each was found and how sure (not scored; for looking at the errors by stage).
        f["base_mm"] = float(d.base_mm[k])
        f["score"] = round(float(d.score[k]), 3)
        f["from_foreground"] = bool(d.from_foreground[k])
        if len(d.sigma_in) == len(d.kind):
            f["sigma_in"] = round(float(d.sigma_in[k]), 4)
    return out


def run_tracker(folder: Path) -> dict:
    """The tracker on every frame of a set: predictions, its control rulings, timings."""
    from benchmarks.heldout_control import control_rulings
    from tracker.pipeline import Pipeline
    from tracker.sources import open_source

    from tracker.errors import UserError

    t0 = time.perf_counter()
    try:
        pipe = Pipeline.from_footage(folder)
    except UserError as e:
        # The tracker refuses the table (e.g. board views that leave the focal length
        # undetermined): it reports nothing, and the set counts as all missed, never left out.
        return nothing_found(folder, str(e), time.perf_counter() - t0)
    pipe.full_every = 1  # the frames are separate stills
    setup_s = time.perf_counter() - t0
    judge = getattr(pipe, "judge_still", None) or pipe.process
    preds, rulings, frame_s = [], [], []
    with open_source(folder) as src:
        for index, t, frame in src:
            a = time.perf_counter()
            r = judge(frame, index, t)
            frame_s.append(time.perf_counter() - a)
            preds.append(prediction(r))
            rulings.append(control_rulings(r.state, pipe.config.epic))
        skipped = src.skipped
    if hasattr(pipe, "close"):
        pipe.close()
    return {"preds": {"frames": preds}, "rulings": rulings, "setup_s": setup_s, "frame_s": frame_s,
            "skipped": skipped, "method": "judge_still" if judge != pipe.process else "process",
            "camera": camera_of(pipe.camera)}


def camera_of(cam: Any) -> dict | None:
    """The set-up's camera (intrinsics and table pose) as plain lists, for the scoring side."""
    if getattr(cam, "intrinsics", None) is None:
        return None
    return {"K": cam.intrinsics.K.tolist(), "dist": cam.intrinsics.dist.tolist(),
            "rvec": cam.rvec.tolist(), "tvec": cam.tvec.tolist()}


def camera_floor_errors(camera: dict, truth: dict, nx: int = 12, ny: int = 8) -> list[float]:
    """How far (in) the tracker's camera puts points of the floor, seen where the true
    camera sees them: a grid over the play area, each true pixel unprojected at z = 0."""
    import cv2
    import numpy as np

    from calibration.camera import CameraModel, Intrinsics, TablePose

    t = truth["camera"]
    w, d = truth["table"]["play_area_in"]
    xs, ys = np.meshgrid(np.linspace(0, w, nx), np.linspace(0, d, ny))
    world = np.c_[xs.ravel(), ys.ravel(), np.zeros(xs.size)]
    seen, _ = cv2.projectPoints(world, np.array(t["rvec"], float), np.array(t["tvec"], float),
                                np.array(t["K"], float), np.array(t["dist"], float))
    K = np.array(camera["K"], float)
    size = (int(truth["image"]["width"]), int(truth["image"]["height"]))
    model = CameraModel(Intrinsics(K, np.array(camera["dist"], float), size, 0.0),
                        TablePose(np.array(camera["rvec"]), np.array(camera["tvec"]), 0.0, (), ()))
    return np.linalg.norm(model.unproject(seen.reshape(-1, 2), 0.0) - world[:, :2], axis=1).tolist()


def nothing_found(folder: Path, why: str, setup_s: float = 0.0) -> dict:
    """run_tracker's result for a table the tracker refused or failed on: every frame
    empty, so its fighters and tokens count as missed and its control calls as wrong."""
    n = len(json.loads((folder / "setup.json").read_text())["frames"])
    return {"preds": {"frames": [{"frame": i, "fighters": [], "tokens": []} for i in range(n)]},
            "rulings": [[] for _ in range(n)],  # (no state: no call said, not even "unseen")
            "setup_s": setup_s, "frame_s": [], "skipped": 0, "method": "refused", "refused": why}


def run_baseline(folder: Path) -> dict:
    """../shared/eval/baseline.py's ``Baseline`` in this process, as its own main() runs it."""
    bl_mod = load_module(BASELINE)
    setup = json.loads((folder / "setup.json").read_text())
    w, d = setup["table"]["play_area_in"]
    bl = bl_mod.Baseline(w, d, [s["colour"] for s in setup["sides"]])
    frames, frame_s = [], []
    for i, img in bl_mod.read_frames(str(folder)):
        a = time.perf_counter()
        res = bl.process(img)
        frame_s.append(time.perf_counter() - a)
        res["frame"] = i
        frames.append(res)
    return {"preds": {"frames": frames}, "frame_s": frame_s}


# -- the scoring side ----------------------------------------------------------------------
def group_label(kind: str, f: dict) -> str:
    """The per-kind breakdown a true fighter belongs to."""
    if kind == "epic":
        return "epic stand"
    return f"{kind} {f.get('shape', 'round')}"


def score_side(folder: Path, kind: str, resolution: str, tracked: dict, base: dict) -> dict:
    """Tallies of both predictors, hard-case counts and control agreement for one set."""
    from benchmarks.heldout_cases import CASES, eligible, measure_set
    from benchmarks.heldout_control import compare_frames
    from benchmarks.heldout_metrics import tally_set
    from tracker.config import GameConfig

    scorer = load_module(SCORER)
    truth = json.loads((folder / "truth.json").read_text())
    t0 = time.perf_counter()
    measured, cc = measure_set(folder, truth)
    cases = [[c.cases for c in fr] for fr in measured]
    groups = [[[group_label(kind, f), resolution] + c for f, c in zip(fr["fighters"], cs)]
              for fr, cs in zip(truth["frames"], cases)]
    cases_s = time.perf_counter() - t0
    out: dict[str, Any] = {"tallies": {}, "scorer": {}, "cases_s": cases_s}
    for who, run in (("tracker", tracked), ("baseline", base)):
        out["tallies"][who] = tally_set(truth, run["preds"], groups, scorer.match)
        out["scorer"][who] = scorer.score(truth, run["preds"])
    epic = GameConfig.load(folder).epic if kind == "epic" else None
    ctl = out["tallies"]["tracker"]
    if tracked.get("camera") and "camera" in truth:
        for e in camera_floor_errors(tracked["camera"], truth):
            ctl.err("camera", e)
            ctl.err(f"camera:{kind}", e)
    for k, v in compare_frames(truth["frames"], tracked["rulings"], epic, scorer.match).items():
        ctl.add(k, v)
    out["case_counts"] = {c: sum(c in x for fr in cases for x in fr) for c in CASES}
    out["case_eligible"] = eligible(truth)
    out["rim_seen"] = {str(k): {"lab": [round(float(v), 1) for v in cc.seen[k]], "fighter_frames": cc.seen_from[k],
                                "de_from_nominal": round(float(((cc.seen[k] - cc.nominal[k]) ** 2).sum() ** 0.5), 1)}
                       for k in cc.seen}
    return out


def run_set(job: dict) -> dict:
    """Everything heldout.py needs of one set (``job``: path, name, kind, resolution)."""
    from benchmarks.heldout_metrics import METRICS, Pool, cross_check, estimate

    folder = Path(job["path"])
    t0 = time.perf_counter()
    rec: dict[str, Any] = dict(job)
    try:
        try:
            tracked = run_tracker(folder)
        except Exception as e:  # noqa: BLE001  (a crash counts as nothing found, and is printed)
            tracked = nothing_found(folder, f"crashed: {type(e).__name__}: {str(e).strip()[:300]}")
        base = run_baseline(folder)
        scored = score_side(folder, job["kind"], job["resolution"], tracked, base)
    except Exception as e:  # noqa: BLE001  (one broken set is reported, not fatal)
        rec["error"] = f"{type(e).__name__}: {e}"
        return rec
    rec.update(scored)
    mine = {k: estimate(Pool([scored["tallies"]["tracker"]], resamples=1), METRICS[k]) for k in METRICS}
    rec["cross_check"] = cross_check(mine, scored["scorer"]["tracker"])
    rec["timing"] = {"setup_s": tracked["setup_s"], "frame_s": tracked["frame_s"],
                     "baseline_frame_s": base["frame_s"], "method": tracked["method"],
                     "skipped": tracked["skipped"], "wall_s": time.perf_counter() - t0}
    if "refused" in tracked:
        rec["refused"] = tracked["refused"]
    rec["preds"] = {"tracker": tracked["preds"], "baseline": base["preds"]}
    rec["rulings"] = tracked["rulings"]  # the tracker's control calls per frame (for a look at the wrong ones)
    rec["tallies"] = {k: v.to_dict() for k, v in scored["tallies"].items()}
    return rec
