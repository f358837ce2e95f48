"""Whether a place on the table is bare: the picture there is the empty table's.

A fighter the tracker holds but no look finds may be hidden (a hand, a neighbour's
miniature leaning over it), or gone. Where its base stood the picture says which: a
base, a miniature or a hand all change it from the empty table; a place that looks as
the empty table does holds nothing. This lets a state drop a fighter at once when the
picture plainly shows it gone, and keep it while anything could still be it.

In: the frame and the empty table (BGR, the frame's light put back as the empty
table's), the camera, each place's centre (x, y, z: the surface it stands on) and
radius in inches. Out: the share of each place that differs from the empty table.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from .colour import detector_lab

# A pixel differs from the empty table when its Lab colour (L weighed 0.35, as the
# detector's) moved this far: sensor noise and JPEG stay well under it, a base's rim,
# a miniature's paint or its shadow go past it.
CHANGED_LAB = 10.0
# A place is bare when under this share of it changed.
BARE_SHARE = 0.08

# A change this large is certain whatever the picture's noise (the evidence maps' old
# fixed scale); smaller ones count by how far they stand above the noise.
CHANGE_SURE_LAB = 25.0

_GRID = np.stack(np.meshgrid(np.linspace(-0.85, 0.85, 9), np.linspace(-0.85, 0.85, 9)), -1).reshape(-1, 2)
_GRID = _GRID[np.hypot(_GRID[:, 0], _GRID[:, 1]) <= 0.85]


def changed_share(frame: np.ndarray, empty: np.ndarray, camera: Any, xyz: np.ndarray,
                  radius_in: np.ndarray) -> np.ndarray:
    """The share of each disc (centre ``xyz``, ``radius_in``) whose picture differs from
    the empty table's (after a 3x3 blur of both, so that single noisy pixels do not
    count). Points outside the picture count as unchanged."""
    xyz = np.asarray(xyz, float).reshape(-1, 3)
    r = np.broadcast_to(np.asarray(radius_in, float), (len(xyz),))
    out = np.zeros(len(xyz))
    h, w = frame.shape[:2]
    for i, (c, rad) in enumerate(zip(xyz, r)):
        pts = np.c_[c[0] + rad * _GRID[:, 0], c[1] + rad * _GRID[:, 1], np.full(len(_GRID), c[2])]
        uv = camera.project(pts)
        x0, y0 = np.floor(uv.min(axis=0)).astype(int) - 2
        x1, y1 = np.ceil(uv.max(axis=0)).astype(int) + 3
        x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, w), min(y1, h)
        if x1 - x0 < 3 or y1 - y0 < 3:
            continue
        a = detector_lab(cv2.blur(frame[y0:y1, x0:x1], (3, 3)))
        b = detector_lab(cv2.blur(empty[y0:y1, x0:x1], (3, 3)))
        q = np.rint(uv - [x0, y0]).astype(int)
        ok = (q[:, 0] >= 0) & (q[:, 1] >= 0) & (q[:, 0] < x1 - x0) & (q[:, 1] < y1 - y0)
        q = q[ok]
        if not len(q):
            continue
        d = np.linalg.norm(a[q[:, 1], q[:, 0]] - b[q[:, 1], q[:, 0]], axis=1)
        out[i] = float(np.mean(d > CHANGED_LAB))
    return out


def change_evidence(dist: np.ndarray, usable: np.ndarray) -> np.ndarray:
    """How surely each pixel changed from the empty table, in [0, 1] (float32), from its
    Lab distance from it (``dist``, used up). Counted above this picture's own noise
    (its median over the ``usable`` pixels, most of any table being empty: three
    channels of Gaussian noise of sigma s give a median distance of 1.54 s, and 3 s is
    past 99 % of it), on a log scale in units of s, so that a faint change well above
    the noise counts for much and a large one is still told from a moderate one;
    CHANGE_SURE_LAB and more is certain. A fixed scale (distance / 25) left a white
    disc on a pale mat, 8 above a noise of 1, a third of the evidence, below the disc
    finder's floor; a noisy camera's picture keeps close to that scale.

    >>> rng = np.random.default_rng(0)
    >>> d = np.linalg.norm(rng.normal(0, 0.7, (100, 100, 3)), axis=2).astype(np.float32)
    >>> d[40:50, 40:50] = 8.0                      # a faint disc
    >>> d[0:10, 0:10] = 30.0                       # paint
    >>> ev = change_evidence(d, np.ones(d.shape, bool))
    >>> float(ev[45, 45]) > 0.6, float(ev[5, 5]), float(np.mean(ev[60:, 60:] > 0.2)) < 0.01
    (True, 1.0, True)
    """
    sample = dist[::4, ::4][usable[::4, ::4]]
    if sample.size < 64:  # too little table to tell its noise by
        lo, sigma = 0.0, CHANGE_SURE_LAB
    else:
        sigma = max(float(np.median(sample)) / 1.54, 0.5)
        lo = min(3.0 * sigma, CHANGE_SURE_LAB / 2)
    dist -= lo
    np.maximum(dist, 0.0, out=dist)
    dist *= 1 / sigma
    ev = np.log1p(dist, out=dist)
    ev *= 1 / np.log1p((CHANGE_SURE_LAB - lo) / sigma)
    return np.clip(ev, 0, 1, out=ev).astype(np.float32, copy=False)
