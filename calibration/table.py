"""Table pose from the four table markers (and optionally terrain tags at known heights).

``estimate_table_pose`` detects the markers, solves PnP from all their corners (IPPE for
the planar start, then Levenberg-Marquardt), drops a marker whose corners disagree with
the others (a hand, a glare), and gives the pose its covariance from the residuals.
Without intrinsics it falls back to a plane homography and says what that ignores.
"""

from __future__ import annotations

import logging
import warnings

import cv2
import numpy as np

from tracker.errors import CalibrationError

from .camera import CameraModel, Intrinsics, TablePose
from .markers import MarkerDetections, detect_markers, to_gray

log = logging.getLogger(__name__)

__all__ = ["estimate_table_pose", "solve_pose", "table_object_points", "pose_covariance",
           "homography_pose", "MIN_SIGMA_PX"]

#: floor for the residual-based pixel sigma used in the pose covariance (renders and
#: very sharp images can fit "too well" with 16 corners).
MIN_SIGMA_PX = 0.05


def table_object_points(table, ids) -> np.ndarray:
    by_id = {m.id: m for m in table.markers}
    return np.array([by_id[i].corners_in() for i in ids], np.float64).reshape(-1, 4, 3)


def pose_covariance(obj: np.ndarray, rvec, tvec, intr: Intrinsics, residual: np.ndarray,
                    dof_extra: int = 0) -> tuple[np.ndarray, float]:
    """6x6 covariance of (rvec, tvec) = s^2 (J^T J)^-1 with s^2 from the residuals."""
    _, J = cv2.projectPoints(obj.reshape(-1, 3), rvec, tvec, intr.K, intr.dist)
    J = J[:, :6]
    n = residual.size
    s2 = float((residual ** 2).sum() / max(n - 6 - dof_extra, 1))
    s2 = max(s2, MIN_SIGMA_PX ** 2)
    return s2 * np.linalg.inv(J.T @ J), float(np.sqrt(s2))


def pose_intrinsics_jacobian(obj: np.ndarray, rvec, tvec, intr: Intrinsics) -> np.ndarray:
    """(6, nk) d(rvec, tvec)/d(fx, fy, cx, cy, dist...) of the least-squares pose fitted to
    ``obj``: the first-order pose change that absorbs an intrinsics error."""
    _, J = cv2.projectPoints(obj.reshape(-1, 3), rvec, tvec, intr.K, intr.dist)
    Jp, Jk = J[:, :6], J[:, 6:]
    return -np.linalg.solve(Jp.T @ Jp, Jp.T @ Jk)


def _residuals(obj, img, rvec, tvec, intr):
    proj, _ = cv2.projectPoints(obj.reshape(-1, 3), rvec, tvec, intr.K, intr.dist)
    return proj.reshape(-1, 2) - img.reshape(-1, 2)


def solve_pose(obj: np.ndarray, img: np.ndarray, intr: Intrinsics, guess=None):
    """obj (N,3) world, img (N,2) pixels -> rvec, tvec (LM-refined). Planar points: IPPE
    (both solutions tried), else ITERATIVE; ``guess`` = (rvec, tvec) to start LM from."""
    obj = np.ascontiguousarray(obj, np.float64).reshape(-1, 3)
    img = np.ascontiguousarray(img, np.float64).reshape(-1, 2)
    cands = []
    if guess is not None:
        cands.append((np.asarray(guess[0], float).reshape(3, 1).copy(), np.asarray(guess[1], float).reshape(3, 1).copy()))
    else:
        planar = np.ptp(obj[:, 2]) < 1e-9
        if planar:
            n, rvecs, tvecs, _ = cv2.solvePnPGeneric(obj, img, intr.K, intr.dist, flags=cv2.SOLVEPNP_IPPE)
            cands += [(r, t) for r, t in zip(rvecs[:n], tvecs[:n])]
        else:
            ok, r, t = cv2.solvePnP(obj, img, intr.K, intr.dist, flags=cv2.SOLVEPNP_SQPNP)
            if ok:
                cands.append((r, t))
    best = None
    crit = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_COUNT, 100, 1e-12)
    for r, t in cands:
        r, t = cv2.solvePnPRefineLM(obj, img, intr.K, intr.dist, r.copy(), t.copy(), crit)
        e = float(np.sqrt((_residuals(obj, img, r, t, intr) ** 2).sum(1).mean()))
        if best is None or e < best[2]:
            best = (r.reshape(3), t.reshape(3), e)
    if best is None:
        raise CalibrationError("could not solve the table pose from the markers seen")
    return best[0], best[1]


def _describe(det: MarkerDetections, table_ids) -> str:
    seen = sorted(int(i) for i in det.ids if int(i) in table_ids)
    other = sorted(int(i) for i in det.ids if int(i) not in table_ids)
    s = f"saw table markers {seen}" if seen else "saw no table markers"
    if other:
        s += f" (and other markers {other[:12]})"
    return s


def homography_pose(img_by_id: dict[int, np.ndarray], table, ids, missing) -> TablePose:
    """No intrinsics: the plane homography world z=0 -> pixels from all marker corners."""
    obj = table_object_points(table, ids).reshape(-1, 3)[:, :2]
    img = np.concatenate([img_by_id[i] for i in ids]).reshape(-1, 2).astype(np.float64)
    H, _ = cv2.findHomography(obj, img, 0)
    q = np.c_[obj, np.ones(len(obj))] @ H.T
    err = float(np.sqrt(((q[:, :2] / q[:, 2:3] - img) ** 2).sum(1).mean()))
    warnings.warn("no camera calibration: table mapped by a homography, which ignores lens distortion and "
                  "heights (a fighter on a platform will be misplaced); run calibrate-camera", stacklevel=3)
    return TablePose(np.zeros(3), np.zeros(3), err, tuple(ids), tuple(missing), None, H,
                     info={"method": "homography"})


def estimate_table_pose(image, intrinsics: Intrinsics | None, table, *, terrain=None,
                        detections: MarkerDetections | None = None, outlier_px: float = 2.0) -> TablePose:
    """Pose of the table (world inches -> camera) from the table markers in ``image``.

    terrain: optional terrain library (iterable of TerrainSpec) -- tags on flat tops at
    known heights are then used as extra constraints (their x, y, rotation unknown) in a
    joint refinement; the found tag poses are in ``pose.info["terrain"]``.
    Raises CalibrationError with what was seen when fewer than 3 table markers are found.
    """
    table_ids = [m.id for m in table.markers]
    if detections is None:
        gray = to_gray(image)
        if intrinsics is not None:
            intrinsics.check_image_size((gray.shape[1], gray.shape[0]))
        # Full resolution: done once per set-up, and a table seen from far up has small
        # markers. Half size missed one of the Epic sample's four and placed another's
        # corners 2 px off, tilting the table by up to 0.06 in at its edge.
        detections = detect_markers(gray, table.dictionary, refine=True, downscale=1.0)
    det_by_id = detections.as_dict()
    ids = [i for i in table_ids if i in det_by_id]
    missing = [i for i in table_ids if i not in det_by_id]
    if len(ids) < 3:
        raise CalibrationError(f"need at least 3 of the 4 table markers {table_ids} ({table.dictionary}) to place "
                               f"the table; {_describe(detections, table_ids)}; uncover them or check the lighting")
    if intrinsics is None:
        return homography_pose(det_by_id, table, ids, missing)

    def fit(use):
        obj = table_object_points(table, use)
        img = np.stack([det_by_id[i] for i in use]).astype(np.float64)
        r, t = solve_pose(obj, img, intrinsics)
        res = _residuals(obj, img, r, t, intrinsics).reshape(len(use), 4, 2)
        return obj, img, r, t, res

    obj, img, r, t, res = fit(ids)
    rejected = []
    while len(ids) > 3:
        per = np.sqrt((res ** 2).sum(2).max(1))
        worst = int(np.argmax(per))
        if per[worst] <= outlier_px:
            break
        rejected.append(ids[worst])
        ids = ids[:worst] + ids[worst + 1:]
        obj, img, r, t, res = fit(ids)
    if rejected:
        log.warning("table markers %s disagree with the others by > %.1f px; not used", rejected, outlier_px)
    info: dict = {"method": "pnp", "rejected": rejected, "residuals_px": res}
    n_extra = 0
    if terrain:
        from .terrain_refine import refine_with_terrain
        out = refine_with_terrain(detections, intrinsics, obj.reshape(-1, 3), img.reshape(-1, 2), r, t, terrain)
        if out is not None:
            r, t, tags, cov, sigma = out
            info["terrain"] = tags
            rms = float(np.sqrt((res ** 2).sum(2).mean()))
            res = _residuals(obj, img, r, t, intrinsics).reshape(len(ids), 4, 2)
            info["residuals_px"] = res
            rms = float(np.sqrt((res ** 2).sum(2).mean()))
            M = pose_intrinsics_jacobian(obj, r, t, intrinsics)
            return TablePose(r, t, rms, tuple(ids), tuple(missing + rejected), cov, dpose_dk=M,
                             info=info | {"sigma_px": sigma})
    cov, sigma = pose_covariance(obj, r, t, intrinsics, res, n_extra)
    info["sigma_px"] = sigma
    rms = float(np.sqrt((res ** 2).sum(2).mean()))
    M = pose_intrinsics_jacobian(obj, r, t, intrinsics)
    return TablePose(r, t, rms, tuple(ids), tuple(missing + rejected), cov, dpose_dk=M, info=info)


def camera_for(image, intrinsics, table, **kw) -> CameraModel:
    return CameraModel(intrinsics, estimate_table_pose(image, intrinsics, table, **kw))
