"""Crops of the table round a base, turned so the camera lies straight up: what the
learned base refiner (``vision.refiner``) reads, at training and at use alike.

A crop is ``CROP_PX`` square at ``CROP_PX_PER_IN`` on the plane of the base's top,
centred on a guess of the base's centre. Its rows run away from the point under the
camera (row 0 faces the camera), its columns across: a miniature, which stands up toward
the camera, then always leans down the crop and its rim's crescent always faces up, on
any table, from any camera position. Channels: the frame, the empty table at the same
place, and the side's rim colour as this table's light shows it (BGR, 0-1, nine in all).

In: a camera (``calibration.camera.CameraModel``: ``project``), the frame and the empty
table (camera pixels, BGR), the guess (x, y, height of the base's top; inches), the point
under the camera. Out: (CROP_PX, CROP_PX, 9) float32; ``crop_axes`` gives the world
direction of a crop column and row step, to turn an offset read in the crop back.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

CROP_PX = 64
CROP_PX_PER_IN = 20.0  # near a 720p camera's own scale over a Warcry table (18-22 px/in)


def crop_axes(centre_xy: np.ndarray, nadir_xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(across, away): unit world vectors of one crop column step and one row step.
    ``away`` points from the point under the camera through the base (straight down the
    camera's line of sight, flattened); ``across`` is it turned a quarter (right-handed
    with the world's z up). Right under the camera, +y is taken as toward it.

    >>> a, w = crop_axes(np.array([10.0, 5.0]), np.array([10.0, 15.0]))
    >>> w.tolist(), a.tolist()
    ([0.0, -1.0], [1.0, 0.0])
    """
    d = np.asarray(centre_xy, float) - np.asarray(nadir_xy, float)
    n = float(np.hypot(*d))
    away = d / n if n > 1e-6 else np.array([0.0, -1.0])
    across = np.array([-away[1], away[0]])
    return across, away


def crop_grid(centre_xy: np.ndarray, nadir_xy: np.ndarray, z_in: float) -> np.ndarray:
    """(CROP_PX * CROP_PX, 3) world points of a crop's pixel centres, row by row."""
    return grid_along(centre_xy, *crop_axes(centre_xy, nadir_xy), z_in)


def grid_along(centre_xy: np.ndarray, cols: np.ndarray, rows: np.ndarray, z_in: float, px: int = CROP_PX,
               px_per_in: float = CROP_PX_PER_IN) -> np.ndarray:
    """(px * px, 3) world points of a crop's pixel centres, row by row, its columns
    stepping along the world unit vector ``cols`` and its rows along ``rows``, ``px_per_in``
    of them an inch (``CROP_PX`` at ``CROP_PX_PER_IN`` unless said)."""
    across, away = np.asarray(cols, float), np.asarray(rows, float)
    m = (px - 1) / 2
    k = (np.arange(px) - m) / px_per_in
    cols, rows = np.meshgrid(k, k)
    xy = np.asarray(centre_xy, float) + cols.reshape(-1, 1) * across + rows.reshape(-1, 1) * away
    return np.column_stack([xy, np.full(len(xy), float(z_in))])


def base_crop(camera: Any, frame: np.ndarray, empty: np.ndarray, centre_xy: np.ndarray, z_in: float,
              nadir_xy: np.ndarray, rim_bgr: np.ndarray) -> np.ndarray:
    """The nine-channel crop (module docstring) round ``centre_xy`` on the plane z =
    ``z_in``; pixels the camera does not see are 0 in every channel."""
    return crop_of(camera, frame, empty, crop_grid(centre_xy, nadir_xy, z_in), rim_bgr)


def crop_of(camera: Any, frame: np.ndarray, empty: np.ndarray, grid: np.ndarray, rim_bgr: np.ndarray) -> np.ndarray:
    """The nine-channel crop (module docstring) at the world points ``grid`` (``grid_along``,
    a square of any size)."""
    n = int(round(np.sqrt(len(grid))))
    uv = np.asarray(camera.project(grid), np.float32).reshape(n, n, 2)
    mx, my = np.ascontiguousarray(uv[..., 0]), np.ascontiguousarray(uv[..., 1])
    out = np.empty((n, n, 9), np.float32)
    out[..., 0:3] = cv2.remap(frame, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
    out[..., 3:6] = cv2.remap(empty, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
    out[..., 6:9] = np.asarray(rim_bgr, np.float32).reshape(1, 1, 3)
    out *= 1.0 / 255.0
    return out


def camera_nadir(camera: Any) -> np.ndarray | None:
    """The world (x, y) under the camera's centre, or None for a camera known only as a
    homography. (From R and tvec: the synthetic cameras of our own renders have no
    ``camera_position``.)"""
    R, t = getattr(camera, "R", None), getattr(camera, "tvec", None)
    if R is None or t is None or getattr(camera, "homography_only", False):
        return None
    return (-np.asarray(R, float).T @ np.asarray(t, float).reshape(3))[:2]
