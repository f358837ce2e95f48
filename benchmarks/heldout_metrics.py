"""Tallies and cluster-bootstrap confidence intervals for ``benchmarks/heldout.py``.

A set's *tally* is what the scorer (``../shared/eval/score.py``) counts, kept as
numerators, denominators and per-match errors so that sets can be pooled and
resampled: fighters are matched per frame with the scorer's own ``match`` (minimum
cost, 0.75 in gate), exactly as ``score()`` does, and pooled figures are checked against
``score()`` on the pooled scene. Beside the scorer's figures: *tokens read as fighters*
(a predicted fighter within 0.5 in of a true token's centre with no true fighter within
0.75 in of it; per true token); *tokens in sight* (a true token whose centre no hand
hides from the camera: the truth's hand, a flat polygon at its height, and the token
projected along the true camera's rays; the renders' truth says no token is hidden);
which tagged tokens found carry their own id; and per-group counts
(``g:<group>:<count>``) for the breakdowns: kind and base shape, resolution, and the
hard cases of heldout_cases.py.

Confidence intervals: 95 %, percentile bootstrap over whole sets (a cluster bootstrap:
sets drawn with replacement, 2000 resamples, RNG seed 28), the tracker and the baseline
resampled together so ratios and differences are paired.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

TOKEN_AS_FIGHTER_IN, NO_FIGHTER_IN = 0.5, 0.75
RESAMPLES, SEED = 2000, 28

# name: ("ratio", numerator, denominator) | ("rms", errors) | ("p95", errors)
METRICS: dict[str, tuple[str, ...]] = {
    "recall": ("ratio", "n_m", "n_t"),
    "recall_visible": ("ratio", "n_m_vis", "n_vis"),
    "precision": ("ratio", "n_m", "n_p"),
    "side_accuracy": ("ratio", "n_team", "n_m"),
    "rms_in": ("rms", "all"),
    "rms_floor_in": ("rms", "floor"),
    "rms_platform_in": ("rms", "elevated"),
    "p95_in": ("p95", "all"),
    "token_recall": ("ratio", "tk_m", "tk_t"),
    "token_precision": ("ratio", "tk_m", "tk_p"),
    "tokens_as_fighters": ("ratio", "tok_fighter", "tk_t"),
    "token_recall_in_sight": ("ratio", "tk_m_sight", "tk_sight"),
    "tag_ids_right": ("ratio", "tk_tag_right", "tk_tag_m"),
    "tag_ids_wrong": ("ratio", "tk_tag_wrong", "tk_tag_m"),
    "control_agreement": ("ratio", "ctl_agree", "ctl_n"),
    "rms_camera_floor_in": ("rms", "camera"),  # the calibration alone: a floor grid, true pixel -> our camera
}
# how the scorer names the same figures (for the cross-check)
SCORER_KEYS = {"recall": "recall", "recall_visible": "recall_visible", "precision": "precision",
               "side_accuracy": "team_accuracy", "rms_in": "rms_in", "rms_floor_in": "rms_floor_in",
               "rms_platform_in": "rms_elevated_in", "p95_in": "p95_in", "token_recall": "token_recall",
               "token_precision": "token_precision"}


@dataclass
class Tally:
    """One set's counts (name -> int) and error lists (name -> [float])."""

    counts: dict[str, int] = field(default_factory=dict)
    errs: dict[str, list[float]] = field(default_factory=dict)

    def add(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + int(n)

    def err(self, key: str, v: float) -> None:
        self.errs.setdefault(key, []).append(round(float(v), 6))

    def to_dict(self) -> dict:
        return {"counts": self.counts, "errs": self.errs}


def _team_ok(pred_team, truth: dict) -> bool:
    if pred_team is None:
        return False
    if isinstance(pred_team, str):
        return pred_team.strip().lower() == str(truth["team_colour"]).lower()
    return int(pred_team) == int(truth["team"])


def hidden_by_hand(scene: dict, frame: dict, tokens: list[dict]) -> list[bool]:
    """Which ``tokens`` of a truth frame a hand hides from the camera: each token's top
    centre inside the hand's outline (a flat polygon at the hand's height), both seen
    through the true camera without its lens distortion (a ray is blocked where the two
    pinhole projections meet; the distortion would only warp both alike)."""
    hand = frame.get("hand")
    if not hand or not hand.get("world") or not tokens:
        return [False] * len(tokens)
    import cv2

    cam = scene["camera"]
    K, rvec, tvec = (np.asarray(cam[k], float) for k in ("K", "rvec", "tvec"))

    def project(pts: np.ndarray) -> np.ndarray:
        return cv2.projectPoints(pts.reshape(-1, 1, 3), rvec, tvec, K, None)[0].reshape(-1, 2)

    outline = project(np.asarray(hand["world"], float)).astype(np.float32)
    tops = project(np.array([(t["x"], t["y"], float(t.get("z", 0.0)) + 0.1) for t in tokens]))
    return [cv2.pointPolygonTest(outline, (float(u), float(v)), False) >= 0 for u, v in tops]


def tally_set(scene: dict, preds: dict, groups: list[list[list[str]]], match: Callable, gate: float = 0.75) -> Tally:
    """Count one set's predictions against its truth; ``groups[frame][fighter]``: the
    breakdown groups each true fighter belongs to."""
    tl = Tally()
    by_frame = {int(f.get("frame", i)): f for i, f in enumerate(preds.get("frames", []))}
    for fi, fr in enumerate(scene["frames"]):
        p = by_frame.get(int(fr["frame"]), {})
        tf, pf = fr["fighters"], p.get("fighters", [])
        pairs = match([(t["x"], t["y"]) for t in tf], [(q["x"], q["y"]) for q in pf], gate)
        hit = {i: j for i, j, _ in pairs}
        tl.add("n_t", len(tf))
        tl.add("n_p", len(pf))
        for i, t in enumerate(tf):
            vis = not t["occluded"]
            j = hit.get(i)
            ok_team = j is not None and _team_ok(pf[j].get("team"), t)
            for g in ["all"] + groups[fi][i]:
                pre = "" if g == "all" else f"g:{g}:"
                tl.add(pre + "n_vis", vis)
                tl.add(pre + "n_m_vis", vis and j is not None)
                tl.add(pre + "n_m", j is not None)
                tl.add(pre + "n_team", ok_team)
                if pre:
                    tl.add(pre + "n_t")
            if j is None:
                continue
            q = pf[j]
            d = float(np.hypot(t["x"] - q["x"], t["y"] - q["y"]))
            tl.err("all", d)
            tl.err("elevated" if t["z"] > 0 else "floor", d)
            if t.get("shape", "round") != "round" and q.get("angle_deg") is not None and q.get("shape") is not None:
                a = abs((float(q["angle_deg"]) - t["angle_deg"] + 90.0) % 180.0 - 90.0)
                for g in groups[fi][i]:
                    tl.err(f"g:{g}:angle", a)
        tt, pt = fr["tokens"], p.get("tokens", [])
        tl.add("tk_t", len(tt))
        tl.add("tk_p", len(pt))
        tk_pairs = match([(t["x"], t["y"]) for t in tt], [(q["x"], q["y"]) for q in pt], gate)
        tl.add("tk_m", len(tk_pairs))
        hidden = hidden_by_hand(scene, fr, tt)
        found = {i for i, _, _ in tk_pairs}
        tl.add("tk_sight", hidden.count(False))
        tl.add("tk_m_sight", sum(1 for i in found if not hidden[i]))
        for i, j, _ in tk_pairs:  # which token it is: a tagged token's id, read or named
            if tt[i].get("tag_id") is not None:
                got = pt[j].get("tag_id")
                tl.add("tk_tag_m")
                tl.add("tk_tag_right", got == tt[i]["tag_id"])
                tl.add("tk_tag_wrong", got is not None and got != tt[i]["tag_id"])
        for q in pf:
            near_tok = any(np.hypot(t["x"] - q["x"], t["y"] - q["y"]) <= TOKEN_AS_FIGHTER_IN for t in tt)
            near_fig = any(np.hypot(t["x"] - q["x"], t["y"] - q["y"]) <= NO_FIGHTER_IN for t in tf)
            tl.add("tok_fighter", near_tok and not near_fig)
    for k in ("n_t", "n_vis", "n_m", "n_m_vis", "n_team", "n_p", "tk_t", "tk_p", "tk_m", "tok_fighter",
              "tk_tag_m", "tk_tag_right", "tk_tag_wrong", "tk_sight", "tk_m_sight"):
        tl.counts.setdefault(k, 0)
    return tl


class Pool:
    """Several sets' tallies, resampled together (one weight matrix for all of them)."""

    def __init__(self, tallies: list[Tally], resamples: int = RESAMPLES, seed: int = SEED):
        self.t = tallies
        k = len(tallies)
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, k, (resamples, k)) if k else np.zeros((resamples, 0), int)
        self.w = np.zeros((resamples, k))
        np.add.at(self.w, (np.repeat(np.arange(resamples), k), idx.ravel()), 1.0)
        self.idx = idx

    def _counts(self, key: str) -> np.ndarray:
        return np.array([t.counts.get(key, 0) for t in self.t], float)

    def total(self, key: str) -> int:
        return int(self._counts(key).sum())

    def n_errs(self, key: str) -> int:
        return sum(len(t.errs.get(key, ())) for t in self.t)

    def values(self, spec: tuple[str, ...]) -> tuple[float | None, np.ndarray]:
        """(point estimate, one value per resample; NaN where undefined) of a metric spec."""
        kind = spec[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            if kind == "ratio":
                num, den = self._counts(spec[1]), self._counts(spec[2])
                point = num.sum() / den.sum() if den.sum() else None
                return point, (self.w @ num) / (self.w @ den)
            per = [np.asarray(t.errs.get(spec[1], []), float) for t in self.t]
            if kind == "rms":
                sse = np.array([float((e ** 2).sum()) for e in per])
                n = np.array([len(e) for e in per], float)
                point = float(np.sqrt(sse.sum() / n.sum())) if n.sum() else None
                return point, np.sqrt((self.w @ sse) / (self.w @ n))
        allv = np.concatenate(per) if per else np.zeros(0)
        point = float(np.percentile(allv, 95)) if len(allv) else None
        out = np.full(len(self.idx), np.nan)
        for r, row in enumerate(self.idx):
            e = np.concatenate([per[i] for i in row]) if len(row) else np.zeros(0)
            if len(e):
                out[r] = np.percentile(e, 95)
        return point, out


def ci(samples: np.ndarray) -> tuple[float, float] | None:
    """The 95 % percentile interval of bootstrap values (NaNs left out)."""
    s = samples[np.isfinite(samples)]
    if len(s) == 0:
        return None
    lo, hi = np.percentile(s, [2.5, 97.5])
    return float(lo), float(hi)


def estimate(pool: Pool, spec: tuple[str, ...]) -> dict:
    """{value, ci} of one metric over a pool."""
    point, boot = pool.values(spec)
    return {"value": point, "ci": ci(boot)}


def paired(pool_a: Pool, pool_b: Pool, spec: tuple[str, ...], how: str) -> dict:
    """b / a ("ratio") or a - b ("diff") of one metric, with its paired bootstrap CI."""
    pa, ba = pool_a.values(spec)
    pb, bb = pool_b.values(spec)
    if pa is None or pb is None:
        return {"value": None, "ci": None}
    with np.errstate(divide="ignore", invalid="ignore"):
        if how == "ratio":
            return {"value": pb / pa if pa else None, "ci": ci(bb / ba)}
        return {"value": pa - pb, "ci": ci(ba - bb)}


def cross_check(pooled: dict[str, dict], scorer_summary: dict, tol: float = 6e-5) -> list[str]:
    """Differences between our pooled figures and ``score()``'s on the pooled scene."""
    bad = []
    for ours, theirs in SCORER_KEYS.items():
        a, b = pooled.get(ours, {}).get("value"), scorer_summary.get(theirs)
        if (a is None) != (b is None) or (a is not None and abs(a - b) > tol):
            bad.append(f"{ours}: ours {a} vs score.py {b}")
    return bad
