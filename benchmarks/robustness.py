"""How the tracker holds up when the picture is not what it was calibrated on (issue #4):
the shared evaluation sets again, each frame changed the way a real table changes it
(the light dimmed or brightened after the empty table was taken, a warmer lamp, sensor
noise, a soft focus, heavy JPEG), scored with the shared scorer like
benchmarks/eval_sets.py. The calibration views and the empty table stay as they were,
as they would at a real table where the light changes during the game.

    python benchmarks/robustness.py                 # every perturbation, every set
    python benchmarks/robustness.py --only dim --only noise --json out.json
    python benchmarks/robustness.py --only none --roster doubled   # as after casualties

Prints one row per perturbation: base recall (visible), precision, side accuracy, RMS on
the floor and on platforms, token recall, and the pooled figures of all sets.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.eval_sets import SCORER, SETS, load_scorer, load_truth, pool, run_set, subset  # noqa: E402


def _gain(img: np.ndarray, g: float) -> np.ndarray:
    return np.clip(img.astype(np.float32) * g, 0, 255).astype(np.uint8)


def _warm(img: np.ndarray) -> np.ndarray:
    return np.clip(img.astype(np.float32) * np.array([0.88, 1.0, 1.12], np.float32), 0, 255).astype(np.uint8)


def _noise(img: np.ndarray, seed: int, sigma: float = 6.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(img.astype(np.float32) + rng.normal(0, sigma, img.shape), 0, 255).astype(np.uint8)


def _chroma_blur(img: np.ndarray, sigma: float = 1.0) -> np.ndarray:
    """The colour (Cr, Cb) blurred, the brightness kept: a camera or codec with less
    colour detail than the sets' (their JPEGs already halve it, 4:2:0)."""
    y, cr, cb = cv2.split(cv2.cvtColor(img, cv2.COLOR_BGR2YCrCb))
    soft = [cv2.GaussianBlur(c, (0, 0), sigma) for c in (cr, cb)]
    return cv2.cvtColor(cv2.merge([y, *soft]), cv2.COLOR_YCrCb2BGR)


def _jpeg(img: np.ndarray, q: int = 45) -> np.ndarray:
    ok, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, q])
    return cv2.imdecode(buf, cv2.IMREAD_COLOR)


# name -> (what it stands for, frame -> frame; the frame's index seeds any randomness)
PERTURBATIONS = {
    "none": ("the frames as given", lambda img, i: img),
    "dim": ("light 25 % dimmer than at set-up", lambda img, i: _gain(img, 0.75)),
    "dim10": ("light 10 % dimmer", lambda img, i: _gain(img, 0.9)),
    "bright": ("light 20 % brighter", lambda img, i: _gain(img, 1.2)),
    "warm": ("a warmer lamp (blue -12 %, red +12 %)", lambda img, i: _warm(img)),
    "noise": ("sensor noise, sigma 6 levels", lambda img, i: _noise(img, i)),
    "blur": ("soft focus, Gaussian sigma 1.2 px", lambda img, i: cv2.GaussianBlur(img, (0, 0), 1.2)),
    "jpeg70": ("JPEG quality 70", lambda img, i: _jpeg(img, 70)),
    "jpeg": ("JPEG quality 45", lambda img, i: _jpeg(img)),
    # Nearer the sets' own range (noise 4-6 levels, blur 0.5-0.8 px, JPEG 83-88 at 4:2:0):
    # how much margin the goals keep for sets a little softer or noisier than these.
    "noise3": ("sensor noise, sigma 3 levels", lambda img, i: _noise(img, i, 3.0)),
    "blur06": ("soft focus, Gaussian sigma 0.6 px", lambda img, i: cv2.GaussianBlur(img, (0, 0), 0.6)),
    "chroma": ("colour detail halved again (Cr, Cb blurred, sigma 1 px)", lambda img, i: _chroma_blur(img)),
    "jpeg95": ("one more JPEG pass, quality 95 (its 4:2:0 halves the colour detail again)",
               lambda img, i: _jpeg(img, 95)),
}


def perturbed_copy(folder: Path, dest: Path, fn, roster: str = "as listed") -> Path:
    """``folder`` (an eval set) under ``dest`` with every frame passed through ``fn``;
    everything else is the same files, but for ``roster`` "doubled": every side's bases
    listed twice in its setup.json, as a roster is once half of each side has been taken
    down (every side short of every size in every look)."""
    out = dest / folder.name
    out.mkdir(parents=True)
    for p in folder.iterdir():
        if p.name != "frames":
            (shutil.copytree if p.is_dir() else shutil.copy2)(p, out / p.name)
    if roster == "doubled":
        setup = json.loads((out / "setup.json").read_text())
        for side in setup["sides"]:
            side["bases_mm"] = list(side["bases_mm"]) * 2
        (out / "setup.json").write_text(json.dumps(setup))
    (out / "frames").mkdir()
    for i, p in enumerate(sorted((folder / "frames").glob("*.jpg"))):
        img = cv2.imread(str(p), cv2.IMREAD_COLOR)
        # PNG: the perturbation is all that changes (a second JPEG pass would add its own).
        cv2.imwrite(str(out / "frames" / (p.stem + ".png")), fn(img, i))
    return out


KEYS = [("recall", "recall_visible", "%"), ("precision", "precision", "%"), ("sides", "team_accuracy", "%"),
        ("RMS floor", "rms_floor_in", "f"), ("RMS platf.", "rms_elevated_in", "f"), ("p95", "p95_in", "f"),
        ("tokens", "token_recall", "%"), ("tok. prec.", "token_precision", "%")]


def _fmt(v, kind: str) -> str:
    if v is None:
        return "-"
    return f"{100 * v:.1f} %" if kind == "%" else f"{v:.4f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", choices=sorted(PERTURBATIONS), default=None,
                    help="run only this perturbation (repeatable)")
    ap.add_argument("--set", dest="sets", action="append", type=Path, default=None,
                    help="an eval set folder (repeatable; default: every shared/eval/sets/*)")
    ap.add_argument("--roster", choices=["as listed", "doubled"], default="as listed",
                    help="doubled: every side's bases listed twice, as after half of each side "
                         "is taken down (what the roster-aware look does with sides short of bases)")
    ap.add_argument("--json", dest="json_out", type=Path, default=None)
    a = ap.parse_args(argv)
    score = load_scorer(SCORER)
    sets = [p.resolve() for p in (a.sets or sorted(p for p in SETS.iterdir() if (p / "truth.json").is_file()))]
    names = a.only or list(PERTURBATIONS)
    print(f"{'':10s}" + "".join(f"{k:>11s}" for k, _, _ in KEYS) + "   per set recall / floor RMS", flush=True)
    results = {}
    t0 = time.perf_counter()
    for name in names:
        _, fn = PERTURBATIONS[name]
        parts, per_set = [], []
        with tempfile.TemporaryDirectory(prefix=f"robust-{name}-") as tmp:
            for folder in sets:
                copy = perturbed_copy(folder, Path(tmp), fn, a.roster)
                run = run_set(copy, None)
                scene = subset(load_truth(folder), len(run["tracker"]["frames"]))
                s = score(scene, run["tracker"])
                per_set.append(f"{folder.name[-1]}: {_fmt(s.get('recall_visible'), '%')} / {_fmt(s.get('rms_floor_in'), 'f')}")
                parts.append((scene, run["tracker"], run["naive"]))
        scene, pt, pn = pool(parts)
        st = score(scene, pt)
        results[name] = st
        print(f"{name:10s}" + "".join(f"{_fmt(st.get(k), kind):>11s}" for _, k, kind in KEYS)
              + "   " + ", ".join(per_set), flush=True)
    print(f"\n{time.perf_counter() - t0:.0f} s; " + "; ".join(f"{n}: {PERTURBATIONS[n][0]}" for n in names))
    if a.json_out:
        a.json_out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
