"""Which lens model a calibration uses, and how much its focal length and principal
point are known once the choice of model is counted in.

In: board views as OpenCV point lists (object (N,1,3), image (N,1,2)), the image size,
candidate ``LensModel``s. Out: ``ModelChoice`` (the model picked by leave-views-out
reprojection error, why, and each candidate's weight) and ``covering_sigma`` (1-sigma of
fx, fy, cx, cy over a bootstrap of the views and over the candidates).

A calibration's Jacobian sigma speaks of noise within one model: on a real camera the
default model said fx 523.4 +- 0.9 where the published model (centred principal point,
fx = fy, no tangential terms) gives 512 -- 13 sigmas apart. Views held out say which
model predicts new views best; a model within noise of the best stays in the stated
uncertainty with a weight, so the sigma covers how far the models disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import erfc, sqrt
from typing import Sequence

import cv2
import numpy as np

__all__ = ["LensModel", "ModelChoice", "CANDIDATES", "SIGMA_FACTOR", "choose_lens_model", "covering_sigma",
           "principal_point_warnings", "fit_model", "centred_start"]

_CRIT = (cv2.TERM_CRITERIA_COUNT + cv2.TERM_CRITERIA_EPS, 200, 1e-12)


@dataclass(frozen=True)
class LensModel:
    name: str
    flags: int
    describe: str

    @property
    def centred(self) -> bool:
        return bool(self.flags & cv2.CALIB_FIX_PRINCIPAL_POINT)


# Simplest first: a tie in held-out error goes to the earlier model.
CANDIDATES: tuple[LensModel, ...] = (
    LensModel("centred", cv2.CALIB_FIX_PRINCIPAL_POINT | cv2.CALIB_FIX_ASPECT_RATIO | cv2.CALIB_ZERO_TANGENT_DIST,
              "principal point at the centre, fx = fy, radial k1 k2 k3"),
    LensModel("radial", cv2.CALIB_ZERO_TANGENT_DIST, "free principal point, fx, fy, radial k1 k2 k3"),
    LensModel("full", 0, "free principal point, fx, fy, k1 k2 p1 p2 k3 (OpenCV's default)"),
)

#: views held out in turn (at most this many folds; one view a fold when fewer views)
FOLDS = 5
#: bootstrap resamplings of the views for the stated sigma (each refits every model kept)
BOOT_REPS = 50
#: the stated sigma of (fx, fy, cx, cy) is this times the larger of covering_sigma's and
#: the Jacobian's. The resampling cannot see what all views share (the corner detector's
#: pull under tilt set fx 0.07 % high on average on rendered boards), so fx's is widened;
#: cx and cy carry the candidates' disagreement over them (p1, p2 trade with the principal
#: point), wider than their error, so theirs is narrowed. Measured on 110 rendered cameras
#: (benchmarks/calibration_sigma.py --seed 1000 --cameras 60, then --seed 5000): the 1-sigma
#: interval then holds the truth for 71 / 75 / 69 % of them, 2 sigma 94 / 94 / 95 % (factor
#: 1 for all: 65 / 78 / 75 % and 89 / 95 / 97 %).
SIGMA_FACTOR = np.array([1.2, 1.2, 0.9, 0.9])
#: a model whose held-out error is this many standard errors above the best one's gets no weight
_MAX_Z = 3.0


def centred_start(obj, img, size, flags) -> np.ndarray | None:
    """A starting K for flags OpenCV cannot start from itself (fixed principal point or
    aspect; None for others): centred, fx = fy from the views' homographies."""
    if not flags & (cv2.CALIB_FIX_PRINCIPAL_POINT | cv2.CALIB_FIX_ASPECT_RATIO):
        return None
    w, h = size
    f = float(cv2.initCameraMatrix2D(obj, img, size, 1.0)[0, 0])
    return np.array([[f, 0, (w - 1) / 2], [0, f, (h - 1) / 2], [0, 0, 1.0]])


def fit_model(obj, img, size, model: LensModel, K0=None, dist0=None):
    """calibrateCamera with the model's flags: (rms, K, dist (5,), rvecs, tvecs), started
    from (K0, dist0) when given, else from centred_start or OpenCV's own start."""
    flags = model.flags
    if K0 is None:
        K0 = centred_start(obj, img, size, flags)
    if K0 is not None:
        flags |= cv2.CALIB_USE_INTRINSIC_GUESS
        K0 = np.array(K0, np.float64)
        if model.centred:  # FIX_PRINCIPAL_POINT keeps the guess's, which must be the centre
            K0[0, 2], K0[1, 2] = (size[0] - 1) / 2, (size[1] - 1) / 2
    d0 = None if dist0 is None else np.array(dist0, np.float64).reshape(-1)[:5].copy()
    if d0 is not None and flags & cv2.CALIB_ZERO_TANGENT_DIST:
        d0[2:4] = 0
    rms, K, dist, rv, tv = cv2.calibrateCamera(obj, img, size, K0, d0, flags=flags, criteria=_CRIT)
    return float(rms), K, np.asarray(dist).reshape(-1)[:5], rv, tv


def _view_sq_error(obj, img, K, dist) -> float:
    """Mean squared reprojection error (px^2 a point) of one view, its pose fitted anew."""
    ok, r, t = cv2.solvePnP(obj, img, K, dist, flags=cv2.SOLVEPNP_ITERATIVE)
    if not ok:
        return float("inf")
    p, _ = cv2.projectPoints(obj, r, t, K, dist)
    return float(np.mean(np.sum((p.reshape(-1, 2) - img.reshape(-1, 2)) ** 2, axis=1)))


def heldout_errors(obj, img, size, model: LensModel, extra: Sequence = (), folds: int = FOLDS) -> np.ndarray:
    """Each view's mean squared reprojection error (px^2) when the camera is calibrated
    on the other folds' views (+ ``extra`` (obj, img) pairs, never held out) and only the
    view's pose is fitted to it."""
    n = len(obj)
    k = min(folds, n)
    out = np.zeros(n)
    for f in range(k):
        test = list(range(f, n, k))
        train = [i for i in range(n) if i % k != f]
        o = [obj[i] for i in train] + [e[0] for e in extra]
        im = [img[i] for i in train] + [e[1] for e in extra]
        try:
            _, K, dist, _, _ = fit_model(o, im, size, model)
        except cv2.error:
            out[test] = np.inf
            continue
        for i in test:
            out[i] = _view_sq_error(obj[i], img[i], K, dist)
    return out


@dataclass
class ModelChoice:
    model: LensModel
    reason: str
    #: model name -> held-out RMS reprojection error (px)
    heldout_rms: dict[str, float]
    #: model name -> weight in the stated uncertainty (sums to 1; the lowest held-out error's is the largest)
    weights: dict[str, float]
    candidates: tuple[LensModel, ...] = field(default=CANDIDATES)


def choose_lens_model(obj, img, size, candidates: Sequence[LensModel] = CANDIDATES,
                      extra: Sequence = ()) -> ModelChoice:
    """The simplest candidate whose held-out error is within one standard error (paired
    over the views) of the lowest; each candidate weighted by how plausibly it is no
    worse than the best: 2 * P(Z > z), z its excess error in standard errors, none past 3."""
    cands = tuple(candidates)
    if len(cands) == 1:
        return ModelChoice(cands[0], "fixed by the caller, not chosen", {cands[0].name: float("nan")},
                           {cands[0].name: 1.0}, cands)
    errs = {m.name: heldout_errors(obj, img, size, m, extra) for m in cands}
    mean = {n: float(np.mean(e)) for n, e in errs.items()}
    best = min(mean, key=mean.get)
    n = len(obj)

    def z(name: str) -> float:
        d = errs[name] - errs[best]
        if name == best or not np.all(np.isfinite(d)):
            return 0.0 if name == best else np.inf
        se = float(np.std(d, ddof=1)) / sqrt(n) if n > 1 else 0.0
        return float(np.mean(d)) / se if se > 0 else (0.0 if np.mean(d) <= 0 else np.inf)

    zs = {m.name: z(m.name) for m in cands}
    chosen = next(m for m in cands if zs[m.name] <= 1.0)
    raw = {k: (erfc(v / sqrt(2)) if v < _MAX_Z else 0.0) for k, v in zs.items()}
    tot = sum(raw.values())
    weights = {k: v / tot for k, v in raw.items()}
    rms = {k: sqrt(v) for k, v in mean.items()}
    if chosen.name == best:
        simpler = [m.name for m in cands[:cands.index(chosen)]]
        why = (f"lowest held-out error {rms[best]:.3f} px" +
               (f"; simpler {', '.join(f'{s} {rms[s]:.3f} px' for s in simpler)} worse by more than noise"
                if simpler else ""))
    else:
        why = (f"held-out error {rms[chosen.name]:.3f} px, within noise of {best}'s {rms[best]:.3f} px "
               f"({zs[chosen.name]:.1f} standard errors), and simpler")
    return ModelChoice(chosen, why, rms, weights, cands)


def covering_sigma(obj, img, size, choice: ModelChoice, estimate: np.ndarray, extra: Sequence = (),
                   reps: int = BOOT_REPS, seed: int = 0, start=None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """1-sigma of (fx, fy, cx, cy) covering the views' noise and the choice of model.

    ``estimate`` is the stated (fx, fy, cx, cy). Every candidate with weight is fitted to
    all views and to ``reps`` resamplings of them (with replacement; ``extra`` always in);
    the variance stated is sum_m w_m (var_m + (mean_m - estimate)^2): each model's own
    spread over the resamplings plus its distance from the stated value. Also returns
    each model's full-view (fx, fy, cx, cy). ``start`` (K, dist): where every model's
    full-view fit starts (the calibration's own result: the same valley of the focal length)."""
    rng = np.random.default_rng(seed)
    n = len(obj)
    picks = [rng.integers(0, n, n) for _ in range(reps)]
    eo, ei = [e[0] for e in extra], [e[1] for e in extra]
    est = np.asarray(estimate, float)
    var = np.zeros(4)
    full: dict[str, np.ndarray] = {}
    for m in choice.candidates:
        w = choice.weights.get(m.name, 0.0)
        if w <= 0:
            continue
        try:
            _, K, dist, _, _ = fit_model(list(obj) + eo, list(img) + ei, size, m, *(start or (None, None)))
        except cv2.error:
            continue
        mu = np.array([K[0, 0], K[1, 1], K[0, 2], K[1, 2]])
        full[m.name] = mu
        boots = []
        for p in picks:
            try:
                _, Kb, _, _, _ = fit_model([obj[i] for i in p] + eo, [img[i] for i in p] + ei, size, m, K, dist)
            except cv2.error:
                continue
            boots.append([Kb[0, 0], Kb[1, 1], Kb[0, 2], Kb[1, 2]])
        b = np.asarray(boots)
        # The spread about the model's own full-view fit (not the resamplings' mean):
        # a resampling's bias toward other values belongs to the uncertainty too.
        spread = np.mean((b - mu) ** 2, axis=0) if len(b) > 1 else np.zeros(4)
        var += w * (spread + (mu - est) ** 2)
    return np.sqrt(var), full


#: views whose boards all face the camera within this angle leave the principal point to
#: the distortion terms: warned about
MIN_TILT_DEG = 15.0
#: corners should come within this share of the size of each edge of the picture
EDGE_SHARE = 0.25


def principal_point_warnings(rvecs, image_points, size) -> list[str]:
    """One line each: boards barely tilted (the principal point then trades off with the
    boards' positions), and edges of the picture the corners never come near (the
    distortion, and with it the principal point, unseen there)."""
    out = []
    tilts = [np.degrees(np.arccos(min(1.0, abs(float(cv2.Rodrigues(np.asarray(r, float))[0][2, 2])))))
             for r in rvecs]
    if tilts and max(tilts) < MIN_TILT_DEG:
        out.append(f"the boards are tilted at most {max(tilts):.0f} degrees from facing the camera: the principal "
                   f"point (cx, cy) is poorly fixed; add views tilted 20-40 degrees in several directions")
    pts = np.concatenate([np.asarray(p, float).reshape(-1, 2) for p in image_points]) if image_points else None
    if pts is not None and len(pts):
        w, h = size
        far = [side for side, gap in (("left", pts[:, 0].min() / w), ("right", 1 - pts[:, 0].max() / w),
                                      ("top", pts[:, 1].min() / h), ("bottom", 1 - pts[:, 1].max() / h))
               if gap > EDGE_SHARE]
        if far:
            out.append(f"no corners within {EDGE_SHARE:.0%} of the picture's {', '.join(far)} edge"
                       f"{'s' if len(far) > 1 else ''}: the principal point (cx, cy) and the distortion are poorly "
                       f"fixed; add views with the board near those edges")
    return out
