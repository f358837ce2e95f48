"""Camera intrinsics from views of a calibration board.

``calibrate_camera(views, board)`` finds the board in each view (paths, images, a folder
or a video sampled evenly), calibrates, rejects views whose error is an outlier and
calibrates again, and returns the intrinsics with per-view errors, the rejected views
with their reasons, and a coverage picture of where the corners fell.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import cv2
import numpy as np
from tqdm import tqdm

from tracker.errors import CalibrationError, SourceError

from .boards import BoardNotFound, BoardView
from .camera import Intrinsics
from .lens_model import (
    CANDIDATES,
    SIGMA_FACTOR,
    LensModel,
    ModelChoice,
    centred_start,
    choose_lens_model,
    covering_sigma,
    principal_point_warnings,
)

log = logging.getLogger(__name__)

__all__ = ["CalibrationResult", "calibrate_camera", "load_views", "IMAGE_EXTS", "VIDEO_EXTS"]

IMAGE_EXTS = {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp", ".pgm", ".ppm"}
VIDEO_EXTS = {".mp4", ".avi", ".mov", ".mkv", ".webm", ".m4v", ".mpg", ".mpeg"}


@dataclass
class CalibrationResult:
    intrinsics: Intrinsics
    per_view_error: dict[str, float]          # view name -> RMS reprojection error (px)
    rejected: list[tuple[str, str]]           # (view name, reason)
    coverage: np.ndarray                      # BGR picture, image size
    coverage_fraction: float                  # share of a 8x6 grid of image cells with corners
    n_points: int
    views_used: list[str] = field(default_factory=list)
    extrinsics: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    #: view name -> (object points (N,3), image points (N,2)) of each view used
    points: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    #: the lens model chosen by held-out views, with each candidate's held-out error and
    #: weight in the stated sigma (None when the caller fixed the flags the old way)
    model_choice: ModelChoice | None = None
    #: one line each: what leaves the principal point poorly fixed (calibration.lens_model)
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        i = self.intrinsics
        return (f"{len(self.views_used)} views, {self.n_points} points, RMS {i.rms_px:.3f} px, fx {i.fx:.2f} fy {i.fy:.2f} "
                f"cx {i.K[0, 2]:.2f} cy {i.K[1, 2]:.2f}, dist {np.round(i.dist, 5).tolist()}, "
                f"coverage {self.coverage_fraction:.0%}, {len(self.rejected)} rejected")

    def model_lines(self) -> list[str]:
        """The lens model chosen and why, and fx / cx / cy with their 1-sigma (which, after
        a model choice, covers the resampled views and the candidate models too)."""
        i = self.intrinsics
        out = []
        c = self.model_choice
        if c is not None:
            out.append(f"lens model: {c.model.name} ({c.model.describe}); {c.reason}")
            if len(c.heldout_rms) > 1:
                out.append("  held-out error / weight in sigma: " + ", ".join(
                    f"{n} {c.heldout_rms[n]:.3f} px / {c.weights.get(n, 0):.0%}" for n in c.heldout_rms))
        if i.std is not None and len(i.std) >= 4:
            what = ("1-sigma over resampled views and the lens models" if c is not None and len(c.heldout_rms) > 1
                    else "1-sigma over resampled views" if c is not None else "1-sigma within this lens model")
            out.append(f"fx {i.fx:.2f} ± {i.std[0]:.2f} px, cx {i.K[0, 2]:.2f} ± {i.std[2]:.2f}, "
                       f"cy {i.K[1, 2]:.2f} ± {i.std[3]:.2f} ({what})")
        return out


def _read_image(path: Path) -> np.ndarray | None:
    from tracker.sources import read_picture

    # (A JPEG cut short too: its missing part would be grey. Its grey levels as decoded,
    # not converted from colour: the boards' corners, and so the cached lens, as before.)
    img, _ = read_picture(Path(path), cv2.IMREAD_GRAYSCALE)
    return img


def load_views(source, max_video_frames: int = 40) -> list[tuple[str, object]]:
    """Expand a source into [(name, path-or-image)]: a folder, a video (sampled evenly),
    an image path, or a list of those / of numpy images."""
    if isinstance(source, np.ndarray):
        return [("image0", source)]
    if isinstance(source, (str, Path)):
        p = Path(source)
        if not p.exists():
            raise SourceError(f"{p}: no such file or folder")
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.suffix.lower() in IMAGE_EXTS | VIDEO_EXTS)
            if not files:
                raise SourceError(f"{p}: no images or videos in this folder")
            out = []
            for f in files:
                out += load_views(f, max_video_frames)
            return out
        if p.suffix.lower() in VIDEO_EXTS:
            cap = cv2.VideoCapture(str(p))
            if not cap.isOpened():
                raise SourceError(f"{p}: cannot open this video")
            n = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
            want = set(np.linspace(0, max(n - 1, 0), min(max_video_frames, max(n, 1))).round().astype(int).tolist())
            out, i = [], 0
            while True:
                ok, frame = cap.read()
                if not ok:
                    break
                if i in want or n <= 0:
                    out.append((f"{p.name}#{i}", frame))
                i += 1
            cap.release()
            if not out:
                raise SourceError(f"{p}: no frames could be read from this video")
            return out
        return [(p.name, p)]
    out = []
    for k, item in enumerate(source):
        if isinstance(item, np.ndarray):
            out.append((f"image{k}", item))
        else:
            out += load_views(item, max_video_frames)
    return out


def _flags(fix_principal_point, fix_aspect_ratio, zero_tangent, fix_k3) -> int:
    f = 0
    if fix_principal_point:
        f |= cv2.CALIB_FIX_PRINCIPAL_POINT
    if fix_aspect_ratio:
        f |= cv2.CALIB_FIX_ASPECT_RATIO
    if zero_tangent:
        f |= cv2.CALIB_ZERO_TANGENT_DIST
    if fix_k3:
        f |= cv2.CALIB_FIX_K3
    return f


def _coverage(image_size, views: Sequence[BoardView], grid=(8, 6)) -> tuple[np.ndarray, float]:
    w, h = image_size
    pic = np.full((h, w, 3), 40, np.uint8)
    hits = np.zeros((grid[1], grid[0]), int)
    for v in views:
        for x, y in v.img:
            gx = int(np.clip(x / w * grid[0], 0, grid[0] - 1))
            gy = int(np.clip(y / h * grid[1], 0, grid[1] - 1))
            hits[gy, gx] += 1
    for gy in range(grid[1]):
        for gx in range(grid[0]):
            x0, y0 = int(gx * w / grid[0]), int(gy * h / grid[1])
            x1, y1 = int((gx + 1) * w / grid[0]) - 1, int((gy + 1) * h / grid[1]) - 1
            colour = (40, 40, 120) if hits[gy, gx] == 0 else (40, 110, 40)
            cv2.rectangle(pic, (x0, y0), (x1, y1), colour, -1)
            cv2.rectangle(pic, (x0, y0), (x1, y1), (90, 90, 90), 1)
    for k, v in enumerate(views):
        hue = int(180 * k / max(len(views), 1))
        col = cv2.cvtColor(np.uint8([[[hue, 255, 255]]]), cv2.COLOR_HSV2BGR)[0, 0].tolist()
        for x, y in v.img:
            cv2.circle(pic, (int(round(x)), int(round(y))), max(2, w // 400), col, -1, cv2.LINE_AA)
    frac = float((hits > 0).mean())
    cv2.putText(pic, f"{len(views)} views, {sum(len(v.img) for v in views)} points, {frac:.0%} of cells covered",
                (10, max(20, h // 30)), cv2.FONT_HERSHEY_SIMPLEX, max(0.5, w / 1600), (255, 255, 255), 1, cv2.LINE_AA)
    return pic, frac


def intrinsics_covariance(obj, img, rvecs, tvecs, K, dist, flags: int, rms: float) -> np.ndarray:
    """Full covariance of (fx, fy, cx, cy, dist...) from the calibration's normal equations
    (intrinsics + every view's extrinsics), s^2 (J^T J)^-1 marginalised to the intrinsics.
    Parameters the flags fix get zero variance; FIX_ASPECT_RATIO ties fy to fx."""
    dist = np.asarray(dist, np.float64).reshape(-1)
    nk = 4 + len(dist)
    nv = len(obj)
    free = np.ones(nk, bool)
    if flags & cv2.CALIB_FIX_PRINCIPAL_POINT:
        free[2:4] = False
    if flags & cv2.CALIB_ZERO_TANGENT_DIST:
        free[6:8] = False
    if flags & cv2.CALIB_FIX_K1:
        free[4] = False
    if flags & cv2.CALIB_FIX_K2:
        free[5] = False
    if flags & cv2.CALIB_FIX_K3 and len(dist) > 4:
        free[8] = False
    if len(dist) > 5:
        free[9:] = False
    aspect = bool(flags & cv2.CALIB_FIX_ASPECT_RATIO)
    if aspect:
        free[1] = False
    kidx = np.flatnonzero(free)
    nf = len(kidx)
    n = 0
    blocks = []
    for o, i, r, t in zip(obj, img, rvecs, tvecs):
        _, J = cv2.projectPoints(np.asarray(o, np.float64).reshape(-1, 3), r, t, K, dist)
        Je, Jk = J[:, :6], J[:, 6:6 + nk].copy()
        if aspect:
            Jk[:, 0] += Jk[:, 1] * (K[1, 1] / K[0, 0])
        Jk = Jk[:, kidx]
        blocks.append((Je, Jk))
        n += J.shape[0]
    # Schur complement: marginalise each view's 6 extrinsics
    S = np.zeros((nf, nf))
    for Je, Jk in blocks:
        A = Je.T @ Je
        B = Je.T @ Jk
        S += Jk.T @ Jk - B.T @ np.linalg.solve(A, B)
    p = nf + 6 * nv
    # OpenCV's rms is per point (2-D); s^2 is per coordinate: sum / (2N - p), n = 2N rows
    s2 = rms ** 2 * (n / 2) / max(n - p, 1)
    Cf = s2 * np.linalg.pinv(S)
    C = np.zeros((nk, nk))
    C[np.ix_(kidx, kidx)] = Cf
    if aspect:  # fy = fx * a
        a = K[1, 1] / K[0, 0]
        C[1, :] = a * C[0, :]
        C[:, 1] = a * C[:, 0]
        C[1, 1] = a * a * C[0, 0]
    return C


@dataclass
class FocalProfile:
    """The calibration's RMS error with the focal length held at each of ``focal`` (px),
    every other parameter fitted: where its valley lies and how wide it is."""

    focal: np.ndarray
    rms: np.ndarray
    n_points: int

    @property
    def best_focal(self) -> float:
        return float(self.focal[int(np.argmin(self.rms))])

    @property
    def best_rms(self) -> float:
        return float(np.min(self.rms))

    def sigma(self, rms_min: float, n_params: int) -> float:
        """Half the width of the focal lengths whose squared error is within one noise
        variance of the best (the 68 % profile interval), in px; the grid's step bounds it
        below, so it only ever widens a Jacobian's sigma."""
        sse = self.rms ** 2 * self.n_points
        sse_min = min(rms_min ** 2 * self.n_points, float(sse.min()))
        var = sse_min / max(2 * self.n_points - n_params, 1)
        inside = self.focal[sse <= sse_min + var]
        if len(inside) == 0:
            return 0.0
        lo, hi = float(inside.min()), float(inside.max())
        return (hi - lo) / 2


PROFILE_FOCALS = np.geomspace(0.25, 2.5, 24)  # x image width: horizontal fields of view 127 to 23 degrees


def focal_profile(obj, img, image_size, flags: int) -> FocalProfile:
    """The RMS error at each of PROFILE_FOCALS x the width, the principal point started at
    the centre. The Levenberg-Marquardt fit is local: from OpenCV's own starting guess
    it can settle 20 % off the focal length when the views leave it weakly determined
    (small boards, little tilt); the profile finds the valley and shows its width."""
    w, h = image_size
    out = []
    crit = (cv2.TERM_CRITERIA_COUNT + cv2.TERM_CRITERIA_EPS, 100, 1e-10)
    for f in PROFILE_FOCALS * w:
        K0 = np.array([[f, 0, (w - 1) / 2], [0, f, (h - 1) / 2], [0, 0, 1]])
        try:
            r = cv2.calibrateCamera(obj, img, image_size, K0, None, criteria=crit,
                                    flags=flags | cv2.CALIB_USE_INTRINSIC_GUESS | cv2.CALIB_FIX_FOCAL_LENGTH)[0]
        except cv2.error:
            r = np.inf
        out.append(r)
    return FocalProfile(PROFILE_FOCALS * w, np.asarray(out, float), int(sum(len(p) for p in img)))


# The pixel error assumed for corners of boards found by their outline (measured against
# rendered truth on tuning tables: 0.1-0.7 px, mostly a shift of the whole board).
OUTLINE_PIXEL_SIGMA = 0.5

# The focal length's stated 1-sigma, as a share of it, above which a calibration is refused
# (good board views give 0.2-0.8 %; a 720p camera 45 in above a board lying on the table,
# a few corners a view, 10-50 %).
MAX_FOCAL_SIGMA = 0.03


def _board_in(board, item) -> tuple[tuple[int, int] | None, "BoardView | None", str]:
    """One view's (image size, the board found in it, why not): size None for an image
    that cannot be read, the board None where it is not found."""
    img = _read_image(item) if isinstance(item, Path) else item
    if img is None or getattr(img, "size", 0) == 0:
        return None, None, "unreadable image (corrupt or not an image)"
    try:
        return (img.shape[1], img.shape[0]), board.detect(img), ""
    except BoardNotFound as e:
        return (img.shape[1], img.shape[0]), None, str(e)


def calibrate_camera(views, board, *, fix_principal_point: bool = False, fix_aspect_ratio: bool = False,
                     zero_tangent: bool = False, fix_k3: bool = False, progress: bool = True,
                     extra_views: Iterable[tuple[str, np.ndarray, np.ndarray]] = (),
                     outlier_factor: float = 3.0, min_views: int = 3, max_video_frames: int = 40,
                     echo=None, max_focal_sigma: float | None = None,
                     lens_model: str | LensModel | None = None, detected: dict | None = None) -> CalibrationResult:
    """Calibrate from ``views`` (paths, images, a folder, a video) of ``board``.

    extra_views: (name, obj (N,3), img (N,2)) planar point sets of known geometry from the
    same camera (e.g. the table markers in table.jpg), added to the board views.
    Views are rejected (and listed with the reason) when no board is found, too few
    corners are found, or their error is an outlier (> outlier_factor x the median view
    error and > 0.3 px); the camera is then calibrated again without them.

    lens_model: None keeps the flags given and states the Jacobian's sigma (within that
    model). "auto" chooses among lens_model.CANDIDATES by held-out views (the flags are
    then ignored); a LensModel uses that one. Either way fx, fy, cx, cy state SIGMA_FACTOR x
    the larger of their Jacobian sigma and a bootstrap's over the views and over the
    candidates (weighted by held-out error). ``warnings`` (always) says when the views
    leave the principal point loose.

    detected: a dict the board found in each view is kept in (by view name) and taken
    from: the same views calibrated again (with other extra views) are not searched again.
    """
    items = load_views(views, max_video_frames)
    found: list[tuple[str, BoardView]] = []
    rejected: list[tuple[str, str]] = []
    image_size = None
    it = tqdm(items, desc="finding board", unit="view", disable=not progress, leave=False)
    for name, item in it:
        got = detected.get(name) if detected is not None else None
        if got is None:
            got = _board_in(board, item)
            if detected is not None:
                detected[name] = got
        size, v, reason = got
        if size is None:
            rejected.append((name, reason))
            continue
        if image_size is None:
            image_size = size
        elif size != image_size:
            rejected.append((name, f"image size {size[0]}x{size[1]} differs from the first view's "
                                   f"{image_size[0]}x{image_size[1]}"))
            continue
        if v is None:
            rejected.append((name, reason))
            continue
        found.append((name, v))
    extra = [(n, BoardView(np.asarray(o, np.float32).reshape(-1, 3), np.asarray(i, np.float32).reshape(-1, 2)))
             for n, o, i in extra_views]
    if image_size is None:
        raise CalibrationError(f"no readable images among the {len(items)} views given")
    if len(found) < min_views:
        reasons = sorted({r for _, r in rejected})
        raise CalibrationError(f"board ({board.describe()}) found in {len(found)} of {len(items)} views, need at least "
                               f"{min_views}; {'; '.join(reasons[:3]) or 'no reason'} -- check --board and the images")

    flags = _flags(fix_principal_point, fix_aspect_ratio, zero_tangent, fix_k3)
    crit = (cv2.TERM_CRITERIA_COUNT + cv2.TERM_CRITERIA_EPS, 200, 1e-12)

    choice = None
    if lens_model is not None:
        # The model is chosen on the views found (outliers among them are rare and only
        # blur the choice); from here on its flags are the calibration's.
        cands = CANDIDATES if lens_model == "auto" else (lens_model,)
        choice = choose_lens_model(*_point_lists(found), image_size, cands, _point_pairs(extra))
        flags = choice.model.flags
    fl0 = flags

    def run(use, focal: float | None = None):
        allv = use + extra
        obj = [v.obj.reshape(-1, 1, 3).astype(np.float32) for _, v in allv]
        img = [v.img.reshape(-1, 1, 2).astype(np.float32) for _, v in allv]
        K0 = np.eye(3)
        if focal is not None:
            K0 = np.array([[focal, 0, (image_size[0] - 1) / 2], [0, focal, (image_size[1] - 1) / 2], [0, 0, 1]])
            fl = fl0 | cv2.CALIB_USE_INTRINSIC_GUESS
        elif (start := centred_start(obj, img, image_size, fl0)) is not None:
            K0, fl = start, fl0 | cv2.CALIB_USE_INTRINSIC_GUESS
        else:
            fl = fl0
        rms, K, dist, rv, tv, std_i, _, pve = cv2.calibrateCameraExtended(obj, img, image_size, K0, None, flags=fl,
                                                                         criteria=crit)
        return rms, K, dist, rv, tv, std_i, np.asarray(pve).reshape(-1), (obj, img, fl)

    use = list(found)
    rms, K, dist, rv, tv, std_i, pve, used = run(use)
    first = focal_profile(used[0], used[1], image_size, flags)
    if first.best_rms < rms * 0.98:
        # the solver stopped in a valley of the wrong focal length; start again in the right one
        again = run(use, first.best_focal)
        if again[0] < rms:
            rms, K, dist, rv, tv, std_i, pve, used = again
    for _ in range(3):  # outlier views: reject and calibrate again
        errs = pve[:len(use)]
        med = float(np.median(errs))
        bad = [k for k, e in enumerate(errs) if e > outlier_factor * med and e > 0.3]
        if not bad or len(use) - len(bad) < min_views:
            break
        for k in sorted(bad, reverse=True):
            rejected.append((use[k][0], f"outlier error {errs[k]:.2f} px (median {med:.2f} px)"))
            del use[k]
        rms, K, dist, rv, tv, std_i, pve, used = run(use, float(K[0, 0]))
    prof = focal_profile(used[0], used[1], image_size, flags) if len(use) < len(found) else first
    dist = np.asarray(dist).reshape(-1)
    # std of fx, fy, cx, cy, k1, k2, p1, p2, k3 (the first 4 + len(dist))
    std = np.asarray(std_i).reshape(-1)[:4 + len(dist)]
    try:
        cov = intrinsics_covariance(used[0], used[1], rv, tv, K, dist, used[2], float(rms))
        std = np.sqrt(np.clip(np.diag(cov), 0, None))
    except (np.linalg.LinAlgError, cv2.error):
        cov = None
    wide = prof.sigma(float(rms), 4 + len(dist))
    if len(std) and wide > std[0]:
        # The focal length's valley is wider than its curvature at the bottom says (few,
        # small or square-on views): the profile's width is what is known of it.
        k = wide / max(float(std[0]), 1e-9)
        std = std.copy()
        std[:2] *= k
        if cov is not None:
            cov = cov.copy()
            cov[:2, :] *= k
            cov[:, :2] *= k
    if any(v.by_outline for _, v in use) and rms < OUTLINE_PIXEL_SIGMA:
        # Corners from a board's outline fit carry a bias of a few tenths of a pixel
        # (the fitted homography cannot bend with the lens); the fit's own RMS does not show it.
        k = OUTLINE_PIXEL_SIGMA / float(rms)
        std = std * k
        cov = None if cov is None else cov * k * k
    if choice is not None:
        std, cov = _with_covering_sigma(std, cov, use, extra, image_size, choice, K, dist)
    rel = float(std[0]) / float(K[0, 0]) if len(std) and K[0, 0] > 0 else 0.0
    if rel > (MAX_FOCAL_SIGMA if max_focal_sigma is None else max_focal_sigma):
        # Board views that are few, small and face the camera square leave the focal
        # length and the distance to the board interchangeable: every position would be
        # off in proportion. Refused, with what would fix it.
        raise CalibrationError(
            f"the board views leave the focal length undetermined (fx {K[0, 0]:.0f} ± {std[0]:.0f} px from "
            f"{len(use)} views, {sum(len(v.img) for _, v in use)} corners); photograph the board closer to the "
            f"camera, filling a quarter of the picture or more, tilted 20-40 degrees in several directions")
    intr = Intrinsics(K, dist, image_size, float(rms), std, cov, None if choice is None else choice.model.name,
                      None if choice is None else choice.reason)
    allv = use + extra
    warns = principal_point_warnings(rv[:len(use)], [v.img for _, v in use], image_size)
    pic, frac = _coverage(image_size, [v for _, v in allv])
    per_view = {n: float(e) for (n, _), e in zip(allv, pve)}
    if echo is not None:
        for n, e in per_view.items():
            echo(f"  {n}: {e:.3f} px")
        for n, r in rejected:
            echo(f"  {n}: skipped ({r})")
    return CalibrationResult(intr, per_view, rejected, pic, frac, int(sum(len(v.img) for _, v in allv)),
                             [n for n, _ in allv], {n: (r.reshape(3), t.reshape(3)) for (n, _), r, t in zip(allv, rv, tv)},
                             {n: (v.obj.reshape(-1, 3), v.img.reshape(-1, 2)) for n, v in allv}, choice, warns)


def _point_lists(views: Sequence[tuple[str, BoardView]]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    return ([v.obj.reshape(-1, 1, 3).astype(np.float32) for _, v in views],
            [v.img.reshape(-1, 1, 2).astype(np.float32) for _, v in views])


def _point_pairs(views: Sequence[tuple[str, BoardView]]) -> list[tuple[np.ndarray, np.ndarray]]:
    return list(zip(*_point_lists(views)))


def _with_covering_sigma(std, cov, use, extra, image_size, choice: ModelChoice, K, dist):
    """std and covariance with fx, fy, cx, cy set to SIGMA_FACTOR x the larger of the
    sigma that covers the resampled views and the candidate models (lens_model.covering_sigma)
    and their own; correlations kept, a parameter the model fixed (sigma 0) gets its
    variance alone."""
    est = np.array([K[0, 0], K[1, 1], K[0, 2], K[1, 2]])
    cover, _ = covering_sigma(*_point_lists(use), image_size, choice, est, _point_pairs(extra), start=(K, dist))
    std = np.asarray(std, float).copy()
    cov = None if cov is None else np.asarray(cov, float).copy()
    sig = SIGMA_FACTOR * np.maximum(cover, std[:4])
    for j in range(4):
        if sig[j] <= 0:
            continue
        if cov is not None:
            if std[j] > 0:
                k = sig[j] / std[j]
                cov[j, :] *= k
                cov[:, j] *= k
            else:
                cov[j, j] = sig[j] ** 2
        std[j] = sig[j]
    return std, cov
