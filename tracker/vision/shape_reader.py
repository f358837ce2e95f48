"""The learned shape reader: which shape of base lies at a guess (round, oval or
rectangle), its size, where its centre lies and how it is turned, read by a small network
from a wide crop of the table round the guess.

On a table of round and oval bases the rim fits confuse the two where a miniature hides
most of an oval's rim: an oval's end curves like a 30-40 mm circle, so a round rim fits
it there, a base's length off its centre (0.3-0.7 in); a round rim half hidden fits an
oval as well. These were 78 % of the squared error on the mixed tuning tables. A person
tells them apart by the whole base's footprint, which the network reads: a crop
``CROP_PX`` square at ``PX_PER_IN`` (6 in across, room for a 90 mm oval guessed at one
end), laid like the base refiner's (``vision.base_crops``: its rows run away from the
camera, so a miniature always leans down the crop), with the frame, the empty table and
the side's rim colour. Trained on the tuning split's mixed tables
(``scripts/train_shape_reader.py``).

In: the camera, the frame, the empty table, guesses (x, y, height of the base's top), the
point under the camera, each guess's side's rim colour. Out: ``ShapeReading`` per guess.
Runs on OpenCV's DNN module (no torch).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .base_crops import crop_axes, crop_of, grid_along
from .refiner import ShippedNet

MODEL_PATH = Path(__file__).resolve().parent / "models" / "shape_reader.onnx"
CROP_PX, PX_PER_IN = 96, 16.0
SHAPES = ("round", "oval", "rect")


def shape_crop(camera: Any, frame: np.ndarray, empty: np.ndarray, centre_xy: np.ndarray, z_in: float,
               nadir_xy: np.ndarray, rim_bgr: np.ndarray) -> np.ndarray:
    """The nine-channel crop the shape reader reads (``CROP_PX`` square at ``PX_PER_IN``
    round ``centre_xy`` on the plane z = ``z_in``, columns across the camera's line of
    sight, rows away from the camera)."""
    across, away = crop_axes(centre_xy, nadir_xy)
    return crop_of(camera, frame, empty, grid_along(centre_xy, across, away, z_in, CROP_PX, PX_PER_IN), rim_bgr)


def crop_turn(angle_deg: float, across: np.ndarray, away: np.ndarray) -> float:
    """A world angle (degrees) as the angle in a crop whose columns step along ``across``
    and rows along ``away`` (radians).

    >>> round(crop_turn(90.0, np.array([1.0, 0.0]), np.array([0.0, 1.0])), 4)
    1.5708
    """
    u = np.array([np.cos(np.radians(angle_deg)), np.sin(np.radians(angle_deg))])
    return float(np.arctan2(u @ away, u @ across))


def world_turn(theta: float, across: np.ndarray, away: np.ndarray) -> float:
    """An angle in a crop (radians) as a world angle in [0, 180) degrees (``crop_turn``
    turned back; a base turned half round is the same base).

    >>> a, w = np.array([0.0, -1.0]), np.array([1.0, 0.0])
    >>> round(world_turn(crop_turn(30.0, a, w), a, w), 6)
    30.0
    """
    d = np.cos(theta) * across + np.sin(theta) * away
    return float(np.degrees(np.arctan2(d[1], d[0])) % 180.0)


class ShapeReading(NamedTuple):
    """Per guess: world (x, y) of the base's centre, each of ``SHAPES``' probability, the
    base's long and short size (in), its world angle (degrees, [0, 180): its long side's
    direction)."""

    xy: np.ndarray
    shape_p: np.ndarray
    size_in: np.ndarray
    angle_deg: np.ndarray


class ShapeReader(ShippedNet):
    """``read(camera, frame, empty, xyz_top, nadir, rim_bgr)`` -> ``ShapeReading``."""

    MODEL_PATH = MODEL_PATH

    def read(self, camera: Any, frame: np.ndarray, empty: np.ndarray, xyz_top: np.ndarray, nadir: np.ndarray,
             rim_bgr: np.ndarray) -> ShapeReading:
        """Per guess (x, y, height of a base's top) with its side's rim colour (BGR as this
        table's light shows it): the base the network reads there (``ShapeReading``)."""
        xyz_top = np.asarray(xyz_top, float).reshape(-1, 3)
        n = len(xyz_top)
        if not n:
            return ShapeReading(np.zeros((0, 2)), np.zeros((0, len(SHAPES))), np.zeros((0, 2)), np.zeros(0))
        rim_bgr = np.asarray(rim_bgr, np.float32).reshape(n, 3)
        crops = np.stack([shape_crop(camera, frame, empty, p[:2], p[2], nadir, c) for p, c in zip(xyz_top, rim_bgr)])
        off, logits, size, turn = self.run(crops, ["offset", "shape_logits", "size", "turn"])
        xy, angle = np.empty((n, 2)), np.empty(n)
        for i, p in enumerate(xyz_top):
            across, away = crop_axes(p[:2], nadir)
            xy[i] = p[:2] + off[i, 0] * across + off[i, 1] * away
            angle[i] = world_turn(0.5 * float(np.arctan2(turn[i, 1], turn[i, 0])), across, away)
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return ShapeReading(xy, e / e.sum(axis=1, keepdims=True), np.asarray(size, float), angle)
