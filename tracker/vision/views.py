"""Rectified plane views: the camera image re-sampled top-down onto a horizontal plane.

Every surface a base can stand on is a horizontal plane at a known height; on a view of
that plane (at the base top's height) a round rim is a true circle of its known radius,
centred above the base's centre, whatever the camera's tilt and lens.

In: the camera model, the plane's height and world rectangle (inches), pixels per inch,
the camera image's size. Out: ``PlaneView`` (remap maps and the mask of pixels the
camera sees; ``sample(image)``, ``to_world``, ``to_pixel``, ``crop``); ``_plane_map``:
the raw float32 maps (where each view pixel lies in the camera image).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np


@dataclass
class PlaneView:
    """A top-down re-sampling of the camera image onto the plane z = ``z_in``, over the
    world rectangle ``(x0, y0)``-``(x1, y1)`` at ``px_per_in``. Row 0 is the far (+y)
    edge so the view looks like the table seen from above."""

    z_in: float
    x0: float
    y0: float
    x1: float
    y1: float
    px_per_in: float
    map1: np.ndarray
    map2: np.ndarray
    valid: np.ndarray  # pixels whose source lies inside the camera image

    @classmethod
    def build(cls, camera: Any, z_in: float, rect: tuple[float, float, float, float], px_per_in: float,
              image_size: tuple[int, int]) -> "PlaneView":
        x0, y0, x1, y1 = rect
        w = max(1, int(round((x1 - x0) * px_per_in)))
        h = max(1, int(round((y1 - y0) * px_per_in)))
        u, v = _plane_map(camera, z_in, x0, y1, px_per_in, w, h)
        W, H = image_size
        valid = (u >= 0) & (u <= W - 1) & (v >= 0) & (v <= H - 1)
        m1, m2 = cv2.convertMaps(u, v, cv2.CV_16SC2)
        return cls(z_in, x0, y0, x1, y1, px_per_in, m1, m2, valid)

    def sample(self, image: np.ndarray) -> np.ndarray:
        return cv2.remap(image, self.map1, self.map2, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)

    def to_world(self, col: np.ndarray, row: np.ndarray) -> np.ndarray:
        """Rectified pixel coordinates (centre-of-pixel convention) → world x, y."""
        x = self.x0 + (np.asarray(col, float) + 0.5) / self.px_per_in
        y = self.y1 - (np.asarray(row, float) + 0.5) / self.px_per_in
        return np.column_stack([x, y])

    def to_pixel(self, xy: np.ndarray) -> np.ndarray:
        xy = np.asarray(xy, float).reshape(-1, 2)
        return np.column_stack([(xy[:, 0] - self.x0) * self.px_per_in - 0.5,
                                (self.y1 - xy[:, 1]) * self.px_per_in - 0.5])

    @property
    def shape(self) -> tuple[int, int]:
        return self.valid.shape

    def crop(self, window: tuple[slice, slice]) -> "PlaneView":
        """The part ``window`` (rows, cols; steps of 1) of this view, as a view of its own:
        the same pixels (its maps are slices of these), its world rectangle shrunk to them."""
        rows, cols = window
        r0, r1, _ = rows.indices(self.shape[0])
        c0, c1, _ = cols.indices(self.shape[1])
        S = self.px_per_in
        return PlaneView(self.z_in, self.x0 + c0 / S, self.y1 - r1 / S, self.x0 + c1 / S, self.y1 - r0 / S, S,
                         self.map1[r0:r1, c0:c1], self.map2[r0:r1, c0:c1], self.valid[r0:r1, c0:c1])


def _plane_map(camera: Any, z_in: float, x0: float, y1: float, px_per_in: float, w: int,
               h: int) -> tuple[np.ndarray, np.ndarray]:
    """Where each pixel of a view of the plane z = ``z_in`` (top-left world corner x0,
    y1; ``w`` x ``h`` pixels) lies in the camera image: float32 maps u, v.

    With a calibrated pinhole camera (calibration.camera.CameraModel) the plane's pixel
    grid is a homography of the camera's normalised coordinates, so
    cv2.initUndistortRectifyMap, given that homography as its rectifying rotation,
    applies the lens model to the whole grid at once: the same figures as
    camera.project (cv2.projectPoints, which also works out a Jacobian per point), some
    30 times faster. Any other camera: camera.project."""
    from calibration.camera import CameraModel

    if type(camera).project is CameraModel.project and not camera.homography_only:
        R, t = np.asarray(camera.R, float), np.asarray(camera.tvec, float).reshape(3)
        # Camera coordinates of view pixel (col, row): A @ (col, row, 1).
        A = np.column_stack([R[:, 0] / px_per_in, -R[:, 1] / px_per_in,
                             R[:, 0] * (x0 + 0.5 / px_per_in) + R[:, 1] * (y1 - 0.5 / px_per_in) + R[:, 2] * z_in + t])
        return cv2.initUndistortRectifyMap(camera.intrinsics.K, camera.intrinsics.dist, np.linalg.inv(A), np.eye(3),
                                           (w, h), cv2.CV_32FC1)
    xs = x0 + (np.arange(w) + 0.5) / px_per_in
    ys = y1 - (np.arange(h) + 0.5) / px_per_in
    X, Y = np.meshgrid(xs, ys)
    pts = np.column_stack([X.ravel(), Y.ravel(), np.full(X.size, z_in)])
    uv = np.asarray(camera.project(pts), np.float64).reshape(h, w, 2).astype(np.float32)
    return np.ascontiguousarray(uv[..., 0]), np.ascontiguousarray(uv[..., 1])
