"""Camera model: intrinsics (K, distortion), the table pose (world inches -> camera), and
the mapping between pixels and world points at a known height, with its uncertainty.

>>> import numpy as np
>>> K = np.array([[1000., 0, 960], [0, 1000., 540], [0, 0, 1]])
>>> intr = Intrinsics(K, np.zeros(5), (1920, 1080), 0.1)
>>> pose = TablePose(np.array([np.pi, 0, 0]), np.array([-15., 11., 40.]), 0.1, (0, 1, 2, 3), ())
>>> cam = CameraModel(intr, pose)
>>> xy = cam.unproject(cam.project([[12.0, 7.0, 3.0]]), 3.0)
>>> np.round(xy, 6).tolist()
[[12.0, 7.0]]
>>> np.round(cam.camera_position, 6).tolist()
[15.0, 11.0, 40.0]
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from tracker.errors import CalibrationError

__all__ = ["Intrinsics", "TablePose", "CameraModel", "DEFAULT_PIXEL_SIGMA", "INTRINSICS_VERSION", "POSE_VERSION"]

INTRINSICS_VERSION = 1
POSE_VERSION = 1
#: 1-sigma pixel noise of a point located in the image (e.g. a base centre) when the
#: caller does not know better.
DEFAULT_PIXEL_SIGMA = 0.5


def _read_json(path: str | Path, what: str) -> dict:
    p = Path(path)
    if not p.exists():
        raise CalibrationError(f"{p}: {what} file not found; check the path")
    try:
        d = json.loads(p.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):  # (nested 100,000 deep)
        raise CalibrationError(f"{p}: not a readable {what} JSON file; re-create it") from None
    if not isinstance(d, dict):
        raise CalibrationError(f"{p}: not a {what} file (expected a JSON object)")
    return d


@dataclass(frozen=True)
class Intrinsics:
    """K (3x3), dist (OpenCV order k1,k2,p1,p2,k3[,...]), image_size (w, h), rms_px."""

    K: np.ndarray
    dist: np.ndarray
    image_size: tuple[int, int]
    rms_px: float
    #: optional 1-sigma of (fx, fy, cx, cy, k1, k2, p1, p2, k3...) from calibration
    std: np.ndarray | None = field(default=None, compare=False)
    #: optional full covariance of the same parameters (fixed ones have zero rows)
    covariance: np.ndarray | None = field(default=None, compare=False)
    #: the lens model calibration chose (calibration.lens_model) and why; None in files
    #: written before it chose one, and in a footage folder's cached camera
    lens_model: str | None = field(default=None, compare=False)
    lens_model_reason: str | None = field(default=None, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "K", np.asarray(self.K, np.float64).reshape(3, 3))
        object.__setattr__(self, "dist", np.asarray(self.dist, np.float64).reshape(-1))
        object.__setattr__(self, "image_size", (int(self.image_size[0]), int(self.image_size[1])))
        object.__setattr__(self, "rms_px", float(self.rms_px))
        if self.std is not None:
            object.__setattr__(self, "std", np.asarray(self.std, np.float64).reshape(-1))
        if self.covariance is not None:
            c = np.asarray(self.covariance, np.float64)
            object.__setattr__(self, "covariance", c.reshape(int(round(np.sqrt(c.size))), -1))

    @property
    def fx(self) -> float:
        return float(self.K[0, 0])

    @property
    def fy(self) -> float:
        return float(self.K[1, 1])

    def check_image_size(self, size: tuple[int, int]) -> None:
        w, h = int(size[0]), int(size[1])
        if (w, h) != tuple(self.image_size):
            raise CalibrationError(
                f"camera calibration is for {self.image_size[0]}x{self.image_size[1]} images but these pictures are "
                f"{w}x{h}; calibrate the camera at this resolution (calibrate-camera) or set the camera back")

    def to_dict(self) -> dict:
        d = {"version": INTRINSICS_VERSION, "kind": "intrinsics", "image_size": list(self.image_size),
             "K": self.K.tolist(), "dist": self.dist.tolist(), "rms_px": self.rms_px}
        if self.std is not None:
            d["std"] = self.std.tolist()
        if self.covariance is not None:
            d["covariance"] = self.covariance.tolist()
        if self.lens_model is not None:  # (optional keys: older trackers read the file as before)
            d["lens_model"] = self.lens_model
            d["lens_model_reason"] = self.lens_model_reason
        return d

    @classmethod
    def from_dict(cls, d: dict, where: str = "camera") -> "Intrinsics":
        try:
            v = int(d.get("version", 0))
            if v > INTRINSICS_VERSION:
                raise CalibrationError(f"{where}: camera file version {v} is newer than this tracker understands; upgrade")
            K = np.asarray(d["K"], np.float64)
            dist = np.asarray(d["dist"], np.float64).reshape(-1)
            size = tuple(int(x) for x in d["image_size"])
            if K.shape != (3, 3) or len(size) != 2 or dist.size not in (4, 5, 8, 12, 14):
                raise ValueError
            return cls(K, dist, size, float(d.get("rms_px", float("nan"))),
                       None if d.get("std") is None else np.asarray(d["std"], np.float64),
                       None if d.get("covariance") is None else np.asarray(d["covariance"], np.float64),
                       None if d.get("lens_model") is None else str(d["lens_model"]),
                       None if d.get("lens_model_reason") is None else str(d["lens_model_reason"]))
        except (KeyError, TypeError, ValueError):
            raise CalibrationError(f"{where}: not a camera calibration (needs K 3x3, dist, image_size); "
                                   "re-run calibrate-camera") from None

    def to_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1))

    @classmethod
    def from_json(cls, path: str | Path) -> "Intrinsics":
        return cls.from_dict(_read_json(path, "camera calibration"), str(path))


@dataclass(frozen=True)
class TablePose:
    """rvec, tvec: world (inches) -> camera, OpenCV convention. ``homography`` (world z=0
    -> distorted pixels) is set only for the no-intrinsics fallback."""

    rvec: np.ndarray
    tvec: np.ndarray
    reprojection_error_px: float
    markers_used: tuple[int, ...]
    markers_missing: tuple[int, ...]
    covariance: np.ndarray | None = None
    homography: np.ndarray | None = field(default=None, compare=False)
    #: (6, 4 + len(dist)) d(rvec, tvec)/d(fx, fy, cx, cy, dist...): how the pose fitted to the
    #: table markers moves when the intrinsics are off; used to carry the calibration's
    #: uncertainty into position_sigma
    dpose_dk: np.ndarray | None = field(default=None, compare=False)
    #: extra: per-corner residuals and anything a caller may want to show
    info: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "rvec", np.asarray(self.rvec, np.float64).reshape(3))
        object.__setattr__(self, "tvec", np.asarray(self.tvec, np.float64).reshape(3))
        object.__setattr__(self, "markers_used", tuple(int(i) for i in self.markers_used))
        object.__setattr__(self, "markers_missing", tuple(int(i) for i in self.markers_missing))
        if self.covariance is not None:
            object.__setattr__(self, "covariance", np.asarray(self.covariance, np.float64).reshape(6, 6))
        if self.homography is not None:
            object.__setattr__(self, "homography", np.asarray(self.homography, np.float64).reshape(3, 3))
        if self.dpose_dk is not None:
            object.__setattr__(self, "dpose_dk", np.asarray(self.dpose_dk, np.float64).reshape(6, -1))

    @property
    def R(self) -> np.ndarray:
        return cv2.Rodrigues(self.rvec)[0]

    @property
    def camera_position(self) -> np.ndarray:
        return -self.R.T @ self.tvec

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"version": POSE_VERSION, "kind": "table_pose", "rvec": self.rvec.tolist(),
                             "tvec": self.tvec.tolist(), "reprojection_error_px": self.reprojection_error_px,
                             "markers_used": list(self.markers_used), "markers_missing": list(self.markers_missing),
                             "camera_position_in": self.camera_position.tolist()}
        if self.covariance is not None:
            d["covariance"] = self.covariance.tolist()
        if self.homography is not None:
            d["homography"] = self.homography.tolist()
        if self.dpose_dk is not None:
            d["dpose_dk"] = self.dpose_dk.tolist()
        return d

    @classmethod
    def from_dict(cls, d: dict, where: str = "table pose") -> "TablePose":
        try:
            v = int(d.get("version", 0))
            if v > POSE_VERSION:
                raise CalibrationError(f"{where}: table file version {v} is newer than this tracker understands; upgrade")
            cov = d.get("covariance")
            H = d.get("homography")
            M = d.get("dpose_dk")
            return cls(np.asarray(d["rvec"], float), np.asarray(d["tvec"], float),
                       float(d.get("reprojection_error_px", float("nan"))),
                       tuple(d.get("markers_used", ())), tuple(d.get("markers_missing", ())),
                       None if cov is None else np.asarray(cov, float), None if H is None else np.asarray(H, float),
                       None if M is None else np.asarray(M, float))
        except (KeyError, TypeError, ValueError):
            raise CalibrationError(f"{where}: not a table pose (needs rvec and tvec); re-run calibrate-table") from None

    def to_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1))

    @classmethod
    def from_json(cls, path: str | Path) -> "TablePose":
        return cls.from_dict(_read_json(path, "table pose"), str(path))


class CameraModel:
    """Pixels <-> world inches for a calibrated camera and table pose.

    With ``intrinsics=None`` and a pose carrying a homography (the no-intrinsics
    fallback) it maps the table plane only: heights and lens distortion are ignored.
    """

    def __init__(self, intrinsics: Intrinsics | None, pose: TablePose):
        self.intrinsics = intrinsics
        self.pose = pose
        self.R = pose.R
        self.rvec = pose.rvec
        self.tvec = pose.tvec
        if intrinsics is None and pose.homography is None:
            raise CalibrationError("camera model needs a camera calibration or a homography table pose")
        self._Hinv = None if pose.homography is None else np.linalg.inv(pose.homography)

    @property
    def homography_only(self) -> bool:
        return self.intrinsics is None

    # --- geometry -------------------------------------------------------------------
    def project(self, xyz) -> np.ndarray:
        """(N,3) world inches -> (N,2) distorted pixels."""
        P = np.asarray(xyz, np.float64).reshape(-1, 3)
        if len(P) == 0:
            return np.zeros((0, 2))
        if self.homography_only:
            q = np.c_[P[:, :2], np.ones(len(P))] @ self.pose.homography.T
            return q[:, :2] / q[:, 2:3]
        uv, _ = cv2.projectPoints(P, self.rvec, self.tvec, self.intrinsics.K, self.intrinsics.dist)
        return uv.reshape(-1, 2)

    def rays(self, uv) -> np.ndarray:
        """(N,2) pixels -> (N,3) world-frame ray directions (not normalised)."""
        uv = np.asarray(uv, np.float64).reshape(-1, 1, 2)
        n = cv2.undistortPointsIter(uv, self.intrinsics.K, self.intrinsics.dist, None, None,
                                    (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 50, 1e-12)).reshape(-1, 2)
        return np.c_[n, np.ones(len(n))] @ self.R  # R^T applied to each row

    def unproject(self, uv, z=0.0) -> np.ndarray:
        """(N,2) pixels + height(s) z (inches) -> (N,2) world x, y where the pixel's ray
        meets the plane at that height."""
        uv = np.asarray(uv, np.float64).reshape(-1, 2)
        if len(uv) == 0:
            return np.zeros((0, 2))
        z = np.broadcast_to(np.asarray(z, np.float64), (len(uv),))
        if self.homography_only:
            q = np.c_[uv, np.ones(len(uv))] @ self._Hinv.T
            return q[:, :2] / q[:, 2:3]
        d = self.rays(uv)
        C = self.camera_position
        lam = (z - C[2]) / d[:, 2]
        return C[None, :2] + lam[:, None] * d[:, :2]

    @property
    def camera_position(self) -> np.ndarray:
        """(3,) world inches."""
        if self.homography_only:
            return np.full(3, np.nan)
        return -self.R.T @ self.tvec

    def camera_position_sigma(self) -> np.ndarray:
        """(3,) 1-sigma of camera_position (inches) from the pose covariance and, when
        known, the intrinsics' uncertainty (mostly along the optical axis: focal vs height)."""
        if self.homography_only or self.pose.covariance is None:
            return np.full(3, np.nan)
        p0 = np.r_[self.rvec, self.tvec]

        def C(p):
            return -cv2.Rodrigues(p[:3])[0].T @ p[3:]
        J = np.zeros((3, 6))
        for i in range(6):
            h = 1e-6 * max(1.0, abs(p0[i]))
            d = np.zeros(6)
            d[i] = h
            J[:, i] = (C(p0 + d) - C(p0 - d)) / (2 * h)
        S = self.pose.covariance.copy()
        Ck = self.intrinsics.covariance
        if Ck is None and self.intrinsics.std is not None:
            Ck = np.diag(self.intrinsics.std ** 2)
        M = self.pose.dpose_dk
        if Ck is not None and M is not None:
            nk = min(len(Ck), M.shape[1])
            S = S + M[:, :nk] @ Ck[:nk, :nk] @ M[:, :nk].T
        return np.sqrt(np.diag(J @ S @ J.T))

    # --- uncertainty ----------------------------------------------------------------
    def _jacobians(self, xyz):
        P = np.asarray(xyz, np.float64).reshape(-1, 3)
        uv, J = cv2.projectPoints(P, self.rvec, self.tvec, self.intrinsics.K, self.intrinsics.dist)
        J = J.reshape(len(P), 2, -1)
        Jpose = J[:, :, :6]             # d uv / d (rvec, tvec)
        Jpt = J[:, :, 3:6] @ self.R     # d uv / d X_world  (X_cam = R X + t)
        Jk = J[:, :, 6:]                # d uv / d (fx, fy, cx, cy, dist...)
        return uv.reshape(-1, 2), Jpose, Jpt, Jk

    def position_covariance(self, xyz, pixel_sigma: float = DEFAULT_PIXEL_SIGMA, *,
                            include_intrinsics: bool = True) -> np.ndarray:
        """(N,2,2) covariance of the world x, y recovered from a pixel observation of each
        point (at its known height): pixel noise, the table pose's own uncertainty, and
        (when the calibration's standard deviations are known) the intrinsics' uncertainty
        after the table pose has absorbed what it can of it."""
        P = np.asarray(xyz, np.float64).reshape(-1, 3)
        if self.homography_only:
            raise CalibrationError("no position uncertainty without a camera calibration (homography fallback)")
        _, Jpose, Jpt, Jk = self._jacobians(P)
        A = np.linalg.inv(Jpt[:, :, :2])  # d xy / d uv at fixed z
        S = np.eye(2)[None] * pixel_sigma ** 2
        if self.pose.covariance is not None:
            S = S + Jpose @ self.pose.covariance @ np.transpose(Jpose, (0, 2, 1))
        Ck = self.intrinsics.covariance
        if Ck is None and self.intrinsics.std is not None:
            Ck = np.diag(self.intrinsics.std ** 2)
        M = self.pose.dpose_dk
        if include_intrinsics and Ck is not None and M is not None:
            nk = min(len(Ck), M.shape[1], Jk.shape[2])
            G = Jk[:, :, :nk] + Jpose @ M[:, :nk]      # d uv / d k with the pose re-fitted
            S = S + G @ Ck[:nk, :nk] @ np.transpose(G, (0, 2, 1))
        return A @ S @ np.transpose(A, (0, 2, 1))

    def position_sigma(self, xyz, pixel_sigma: float = DEFAULT_PIXEL_SIGMA, *,
                       include_intrinsics: bool = True) -> np.ndarray:
        """(N,2) 1-sigma error of world x and y (inches) of points located in the image
        with ``pixel_sigma`` px noise: pixel noise + table pose uncertainty (+ intrinsics
        uncertainty when the calibration recorded it). Propagated through the Jacobian of
        cv2.projectPoints."""
        C = self.position_covariance(xyz, pixel_sigma, include_intrinsics=include_intrinsics)
        return np.sqrt(np.stack([C[:, 0, 0], C[:, 1, 1]], axis=1))

    def inches_per_pixel(self, xyz) -> np.ndarray:
        """(N,) local scale: inches on the plane of each point per image pixel (geometric mean)."""
        _, _, Jpt, _ = self._jacobians(xyz)
        return 1.0 / np.sqrt(np.abs(np.linalg.det(Jpt[:, :, :2])))

    # --- rectification --------------------------------------------------------------
    def plane_maps(self, z: float, x_range: tuple[float, float], y_range: tuple[float, float],
                   px_per_in: float) -> tuple[np.ndarray, np.ndarray]:
        """cv2.remap maps that render the plane at height z, world x in x_range, y in
        y_range, as a top-down image (row 0 = largest y, so +y is up as on a map)."""
        x0, x1 = x_range
        y0, y1 = y_range
        w = int(round((x1 - x0) * px_per_in))
        h = int(round((y1 - y0) * px_per_in))
        xs = x0 + (np.arange(w) + 0.5) / px_per_in
        ys = y1 - (np.arange(h) + 0.5) / px_per_in
        X, Y = np.meshgrid(xs, ys)
        P = np.stack([X.ravel(), Y.ravel(), np.full(X.size, float(z))], axis=1)
        uv = self.project(P).astype(np.float32)
        return uv[:, 0].reshape(h, w), uv[:, 1].reshape(h, w)

    def rectify(self, image: np.ndarray, z: float = 0.0, x_range=None, y_range=None, px_per_in: float = 20.0):
        if x_range is None or y_range is None:
            raise CalibrationError("rectify needs the world x and y ranges to show")
        mx, my = self.plane_maps(z, x_range, y_range, px_per_in)
        return cv2.remap(image, mx, my, cv2.INTER_LINEAR)

    def __repr__(self) -> str:  # pragma: no cover
        c = self.camera_position
        return f"CameraModel(camera at {c.round(2).tolist()} in, reproj {self.pose.reprojection_error_px:.3f} px)"


def warn_homography() -> None:
    warnings.warn("table pose from a homography (no camera calibration): lens distortion and heights are "
                  "ignored; run calibrate-camera for accurate positions", stacklevel=3)
