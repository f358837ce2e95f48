"""State tokens (issue #8, recognition): render a game with tagged activation / damage
tokens beside fighters plus untagged clutter (red damage discs, dice), run the real
pipeline over it, and score against the renderer's truth:

- attachment rate: of the frames in which a state token is visible (no hand over it,
  >= 95 % of it in view) and its fighter is tracked, the share in which the tracker
  reports a token with that tag there attached to that fighter;
- false tokens: clutter or state tokens reported as fighters, objectives or treasure
  (in the world state; raw detections are counted too).

    python benchmarks/state_tokens.py                       # 1280x720, 12 s at 15 fps
    python benchmarks/state_tokens.py --seconds 6 --fps 5 --seed 3 --keep /tmp/st
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tracker.detection import KIND_BASE, KIND_OBJECTIVE, KIND_STATE, KIND_TREASURE  # noqa: E402

VISIBLE = 0.95
NEAR_IN = 0.4  # a reported fighter or token this close to a prop's centre is that prop


def _match(truth_xy, pred_xy, gate: float = 0.75) -> dict[int, int]:
    if not len(truth_xy) or not len(pred_xy):
        return {}
    d = np.linalg.norm(np.asarray(truth_xy, float)[:, None, :2] - np.asarray(pred_xy, float)[None, :, :2], axis=2)
    r, c = linear_sum_assignment(np.where(d <= gate, d, 1e3))
    return {int(i): int(j) for i, j in zip(r, c) if d[i, j] <= gate}


def score(truth: dict, results: list) -> dict:
    """``results``: the pipeline's FrameResults, one per truth frame, in order."""
    visible = right = wrong = missed = untracked = ambiguous = 0
    false_fighters = false_tokens = raw_false_bases = raw_false_tokens = raw_false_state = 0
    wrong_cases: list[tuple] = []
    for fr, res in zip(truth["frames"], results):
        st = res.state
        tf = fr["fighters"]
        m = _match([(f["x"], f["y"]) for f in tf], [(f.x, f.y) for f in st.fighters])
        tracked = {tf[i]["id"]: st.fighters[j].id for i, j in m.items()}
        for tok in fr.get("state_tokens", []):
            if tok["visible_fraction"] < VISIBLE:
                continue
            if tok["fighter"] not in tracked:
                untracked += 1
                continue
            visible += 1
            near = [s for s in st.state_tokens if s.tag_id == tok["tag_id"]
                    and np.hypot(s.x - tok["x"], s.y - tok["y"]) < 0.5]
            if not near:
                missed += 1
                continue
            s = min(near, key=lambda s: np.hypot(s.x - tok["x"], s.y - tok["y"]))
            if s.fighter == tracked[tok["fighter"]]:
                right += 1
                ambiguous += bool(s.ambiguous)
            else:
                wrong += 1
                wrong_cases.append((fr["frame"], tok["id"], tracked[tok["fighter"]], s.fighter, s.distance_in))
        props = [(p["x"], p["y"]) for p in fr.get("clutter", []) + fr.get("state_tokens", [])]
        if not props:
            continue
        pxy = np.asarray(props, float)

        def on_prop(x: float, y: float) -> bool:
            return bool((np.hypot(pxy[:, 0] - x, pxy[:, 1] - y) < NEAR_IN).any())

        matched_f = set(m.values())
        false_fighters += sum(on_prop(f.x, f.y) for j, f in enumerate(st.fighters) if j not in matched_f)
        false_tokens += sum(on_prop(t.x, t.y) for t in st.tokens)
        d = res.detections
        if d is not None and len(d):
            for k in range(len(d)):
                x, y = float(d.xyz[k, 0]), float(d.xyz[k, 1])
                if d.kind[k] == KIND_BASE and on_prop(x, y):
                    # a base detection on a prop that is not a real fighter's place
                    if not any(np.hypot(f["x"] - x, f["y"] - y) < 0.3 for f in tf):
                        raw_false_bases += 1
                elif d.kind[k] in (KIND_OBJECTIVE, KIND_TREASURE) and on_prop(x, y):
                    raw_false_tokens += 1
                elif d.kind[k] == KIND_STATE and not any(
                        t["tag_id"] == d.tag_id[k] and np.hypot(t["x"] - x, t["y"] - y) < NEAR_IN
                        for t in fr.get("state_tokens", [])):
                    raw_false_state += 1
    return {"visible_token_frames": visible, "attached_right": right, "attached_wrong": wrong, "missed": missed,
            "owner_not_tracked": untracked, "right_but_ambiguous": ambiguous,
            "attachment_rate": right / visible if visible else float("nan"),
            "false_fighters": false_fighters, "false_objectives_or_treasure": false_tokens,
            "raw_false_base_detections": raw_false_bases, "raw_false_token_detections": raw_false_tokens,
            "raw_false_state_detections": raw_false_state,
            "wrong_cases": wrong_cases[:10]}


def run(folder: Path) -> tuple[dict, list]:
    from tracker.pipeline import Pipeline
    from tracker.sources import open_source

    truth = json.loads((folder / "truth.json").read_text())
    pipe = Pipeline.from_footage(folder)
    results = [pipe.process(frame, i, t) for i, t, frame in open_source(folder)]
    return truth, results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=720)
    ap.add_argument("--seconds", type=float, default=12.0)
    ap.add_argument("--fps", type=float, default=15.0)
    ap.add_argument("--fighters", type=int, default=12)
    ap.add_argument("--state-tokens", type=int, default=12)
    ap.add_argument("--clutter", type=int, default=12)
    ap.add_argument("--keep", type=Path, default=None, help="render into this folder (kept)")
    a = ap.parse_args()
    from tracker.synthetic import render_set

    out = a.keep or Path(tempfile.mkdtemp(prefix="state-tokens-"))
    t0 = time.time()
    render_set(out, seed=a.seed, width=a.width, height=a.height, seconds=a.seconds, fps=a.fps, n_calib_views=8,
               n_fighters=a.fighters, side_colours=("red", "white", "blue"), state_tokens=a.state_tokens,
               clutter=a.clutter)
    t1 = time.time()
    truth, results = run(out)
    t2 = time.time()
    s = score(truth, results)
    print(f"render {t1 - t0:.0f} s, pipeline {t2 - t1:.0f} s ({len(results)} frames) in {out}")
    for k, v in s.items():
        print(f"{k:32s} {v:.4f}" if isinstance(v, float) else f"{k:32s} {v}")


if __name__ == "__main__":
    main()
