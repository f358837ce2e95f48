"""The learned stand refiner: where an Epic stand's centre lies and how it is turned, read
by a small network from a crop of the table laid along a guess.

Rim fits place a stand seen whole to a few hundredths of an inch at 1080p, but at 720p a
40 x 20 mm stand is 28 x 14 camera pixels; along a file its ends touch its neighbours'
and its figures cover its middle: 0.08 in RMS on the 720p tuning tables, most of it
along the stand. The network reads the stand and what lies round it from a crop
(``vision.base_crops``: frame, empty table and rim colour) whose columns run along the
guess's long side, with two more channels saying which way the camera lies; it was
trained on crops of the tuning split's true stands (``scripts/train_stand_refiner.py``).

In: the camera, the frame, the empty table, guesses (x, y, height of the stand's top, and
its angle in degrees), the point under the camera, each guess's side's rim colour.
Out: per guess the world (x, y) and angle (degrees) the network reads. Runs on OpenCV's
DNN module (no torch).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .base_crops import CROP_PX, crop_axes, crop_of, grid_along
from .refiner import ShippedNet

MODEL_PATH = Path(__file__).resolve().parent / "models" / "stand_refiner.onnx"
QUARTER_PATH = Path(__file__).resolve().parent / "models" / "stand_quarter.onnx"
CHANNELS = 11


def stand_axes(angle_deg: float) -> tuple[np.ndarray, np.ndarray]:
    """(along, across): world unit vectors along a stand turned ``angle_deg`` and a
    quarter turn from it.

    >>> [np.round(v, 3).tolist() for v in stand_axes(90.0)]
    [[0.0, 1.0], [-1.0, 0.0]]
    """
    a = np.radians(angle_deg)
    return np.array([np.cos(a), np.sin(a)]), np.array([-np.sin(a), np.cos(a)])


def stand_crop(camera: Any, frame: np.ndarray, empty: np.ndarray, centre_xy: np.ndarray, z_in: float,
               angle_deg: float, nadir_xy: np.ndarray, rim_bgr: np.ndarray) -> np.ndarray:
    """The crop the stand refiner reads: ``CROP_PX`` square round ``centre_xy`` on the
    plane z = ``z_in``, its columns along the stand, its rows across; channels the nine
    of ``base_crops`` and the direction away from the camera in the crop's axes (a
    figure leans that way)."""
    along, across = stand_axes(angle_deg)
    out = np.empty((CROP_PX, CROP_PX, CHANNELS), np.float32)
    out[..., :9] = crop_of(camera, frame, empty, grid_along(centre_xy, along, across, z_in), rim_bgr)
    away = crop_axes(centre_xy, nadir_xy)[1]
    out[..., 9] = float(away @ along)
    out[..., 10] = float(away @ across)
    return out


def wrap_turn(deg: np.ndarray | float) -> np.ndarray:
    """An angle between two stands' long sides, in (-90, 90] degrees (a stand turned
    half round is the same stand).

    >>> wrap_turn(np.array([170.0, -100.0, 45.0])).tolist()
    [-10.0, 80.0, 45.0]
    """
    d = np.mod(np.asarray(deg, float) + 90.0, 180.0) - 90.0
    return np.where(d == -90.0, 90.0, d)


class StandRefiner(ShippedNet):
    """``read(camera, frame, empty, xyz_top, angle_deg, nadir, rim_bgr)`` -> (xy, angle)."""

    MODEL_PATH = MODEL_PATH

    def read(self, camera: Any, frame: np.ndarray, empty: np.ndarray, xyz_top: np.ndarray, angle_deg: np.ndarray,
             nadir: np.ndarray, rim_bgr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per guess (x, y, height of a stand's top; its angle) with its side's rim colour
        (BGR as this table's light shows it): the world (x, y) of the stand's centre and
        its angle (degrees) as the network reads them."""
        xyz_top = np.asarray(xyz_top, float).reshape(-1, 3)
        angle_deg = np.asarray(angle_deg, float).reshape(-1)
        if not len(xyz_top):
            return np.zeros((0, 2)), np.zeros(0)
        rim_bgr = np.asarray(rim_bgr, np.float32).reshape(len(xyz_top), 3)
        crops = np.stack([stand_crop(camera, frame, empty, p[:2], p[2], a, nadir, c)
                          for p, a, c in zip(xyz_top, angle_deg, rim_bgr)])
        off = self.run(crops, "offset")
        xy = np.empty((len(xyz_top), 2))
        for i, (p, a) in enumerate(zip(xyz_top, angle_deg)):
            along, across = stand_axes(a)
            xy[i] = p[:2] + off[i, 0] * along + off[i, 1] * across
        return xy, angle_deg + np.degrees(off[:, 2])


class QuarterReader(ShippedNet):
    """``read(camera, frame, empty, xyz_top, angle_deg, nadir, rim_bgr)`` -> (n, 3)
    probabilities that each guess is a stand (0), or lies turned a quarter across two
    stands side by side whose square's centre is on its left (1: along +across) or its
    right (2). Trained by ``scripts/train_stand_quarter.py`` on the training split."""

    MODEL_PATH = QUARTER_PATH

    def read(self, camera: Any, frame: np.ndarray, empty: np.ndarray, xyz_top: np.ndarray, angle_deg: np.ndarray,
             nadir: np.ndarray, rim_bgr: np.ndarray) -> np.ndarray:
        xyz_top = np.asarray(xyz_top, float).reshape(-1, 3)
        angle_deg = np.asarray(angle_deg, float).reshape(-1)
        if not len(xyz_top):
            return np.zeros((0, 3))
        rim_bgr = np.asarray(rim_bgr, np.float32).reshape(len(xyz_top), 3)
        crops = np.stack([stand_crop(camera, frame, empty, p[:2], p[2], a, nadir, c)
                          for p, a, c in zip(xyz_top, angle_deg, rim_bgr)])
        logits = np.asarray(self.run(crops, "quarter"), float)
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
