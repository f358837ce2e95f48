"""The table's light: how this camera renders white, read off the table markers' paper.

A side's ``rim_bgr`` and a token style's ``bgr`` are paint colours, as a player would
name them; the camera sees them through its white balance and the room's light. The
four table markers are printed on white paper and lie on the table in every picture
(physical spec), so their white cells are a white reference on every table: each
channel's gain is the paper's value in that channel over the paper's mean. Configured
colours are compared with what the camera sees after the same gains (``as_seen``): a
warm lamp that turns a blue rim purple-ish turns the blue model the same way.

In: the empty table (BGR), the camera model, the table's markers. Out: ``TableLight``
(``paper_bgr``, per-channel ``gain``), ``as_seen(bgr)``.

>>> light = TableLight(paper_bgr=np.array([150.0, 165.0, 180.0]))
>>> light.gain.round(3).tolist()
[0.909, 1.0, 1.091]
>>> light.as_seen((190, 95, 25))
(173, 95, 27)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

# Lab as detection works in it, by table: cv2.LUT maps each 8-bit channel straight to its
# float value (L scaled by 0.35, a and b centred on 0) in one pass.
_LAB_LUT = np.empty((1, 256, 3), np.float32)
_LAB_LUT[0, :, 0] = np.arange(256, dtype=np.float32) * 0.35
_LAB_LUT[0, :, 1] = np.arange(256, dtype=np.float32) - 128.0
_LAB_LUT[0, :, 2] = np.arange(256, dtype=np.float32) - 128.0


def detector_lab(image_bgr: np.ndarray) -> np.ndarray:
    """Lab as float32 with a, b centred on 0. Lightness is scaled down because shading
    and the lighting gradient change it far more than they change hue."""
    return cv2.LUT(cv2.cvtColor(image_bgr, cv2.COLOR_BGR2LAB), _LAB_LUT)


# A white that reads further from grey than this (max/min channel ratio) is no paper
# (a marker in a coloured shadow, a mis-read): the camera's own balance is kept then.
MAX_CAST = 1.6


@dataclass(frozen=True)
class TableLight:
    """``paper_bgr``: the table markers' white paper as this camera sees it (None: not
    seen, gains of 1)."""

    paper_bgr: np.ndarray | None = None
    gain: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        g = np.ones(3)
        p = None if self.paper_bgr is None else np.asarray(self.paper_bgr, float)
        if p is not None and p.min() > 20 and p.max() / p.min() <= MAX_CAST:
            g = p / p.mean()
        object.__setattr__(self, "gain", g)

    def as_seen(self, bgr: Any) -> tuple[int, int, int]:
        """A paint colour as this camera's white balance renders it (brightness kept)."""
        c = np.clip(np.asarray(bgr, float) * self.gain, 0, 255)
        return tuple(int(round(v)) for v in c)


def paper_white(image_bgr: np.ndarray, camera: Any, markers: Any, samples: int = 15) -> np.ndarray | None:
    """The median colour of the white cells of the table markers in ``image_bgr``: each
    marker's square sampled on a grid (projected with ``camera``), the brightest fifth of
    its samples taken as paper (the rest is the code's black). None if no marker is in
    the picture."""
    h, w = image_bgr.shape[:2]
    whites = []
    u = (np.arange(samples) + 0.5) / samples - 0.5
    gx, gy = np.meshgrid(u, u)
    for m in markers:
        cx, cy = m.centre_in
        s = 0.8 * m.size_in  # inside the printed border
        pts = np.c_[cx + s * gx.ravel(), cy + s * gy.ravel(), np.zeros(gx.size)]
        uv = np.rint(camera.project(pts)).astype(int)
        ok = (uv[:, 0] >= 0) & (uv[:, 1] >= 0) & (uv[:, 0] < w) & (uv[:, 1] < h)
        if ok.sum() < 0.5 * len(uv):
            continue
        v = image_bgr[uv[ok, 1], uv[ok, 0]].astype(float)
        bright = v.sum(axis=1)
        whites.append(v[bright >= np.percentile(bright, 80)])
    if not whites:
        return None
    return np.median(np.concatenate(whites), axis=0)
