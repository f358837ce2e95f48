"""A patch's boundary, and the base outline that runs along it.

In: a view's foreground (``vision.foreground``), a placement and the outlines it may be.
Out: the foreground's edge pixels (``boundary``), how far outside a base's edge its
foreground ends on this table (``boundary_offset``, measured on bases fitted by their rims),
and the outline, size and centre whose edge runs along the boundary, whole or on the half
facing the camera (``outline_on_boundary``).
"""

from __future__ import annotations

import functools
import math

import cv2
import numpy as np

from .filters import _subpixel_peak
from .stands import Outline, _sd


def boundary(fg: np.ndarray) -> np.ndarray:
    """The pixels on the edge of the foreground (fg >= 0.5), 1 there, else 0: what
    ``boundary_offset`` and ``outline_on_boundary`` read (made once a look)."""
    inside = (fg >= 0.5).astype(np.uint8)
    return cv2.morphologyEx(inside, cv2.MORPH_GRADIENT, np.ones((3, 3), np.uint8)).astype(np.float32)


def boundary_offset(edge: np.ndarray, centres: np.ndarray, radii: np.ndarray,
                    offsets: np.ndarray = np.arange(-1.0, 4.01, 0.25), width: float = 1.5) -> float | None:
    """How far outside a base's edge (view pixels) the boundary of its foreground runs on
    this table: blur, and the base's contact shadow, spread its patch by a pixel or
    more. Measured on bases whose edges are known (``centres`` (col, row) and ``radii``
    of bases fitted by their rims): the offset whose circles lie most along the
    boundary (``edge``: ``boundary`` of the foreground), or None without such bases.

    >>> fg = np.zeros((60, 60), np.float32); _ = cv2.circle(fg, (30, 30), 14, 1.0, -1)
    >>> 1.5 <= boundary_offset(boundary(fg), np.array([[30.0, 30.0]]), np.array([12.0])) <= 2.0  # (the edge: 2 px wide)
    True
    """
    if len(centres) == 0:
        return None
    H, W = edge.shape
    total = np.zeros(len(offsets))
    for (c, r), rad in zip(np.asarray(centres, float), np.asarray(radii, float)):
        for i, off in enumerate(offsets):
            k = _outline_ring(Outline("round", rad, rad), 0.0, off, width)
            R = k.shape[0] // 2
            ci, ri = int(round(c)), int(round(r))
            if ri - R < 0 or ci - R < 0 or ri + R >= H or ci + R >= W:
                break
            total[i] += float((edge[ri - R:ri + R + 1, ci - R:ci + R + 1] * k).sum())
    if not total.any():
        return None
    return float(offsets[int(np.argmax(total))])


@functools.lru_cache(maxsize=4096)
def _outline_ring(outline: Outline, theta: float, offset: float, width: float,
                  facing: float | None = None) -> np.ndarray:
    """A thin band along ``outline`` grown by ``offset`` px, turned ``theta``, summing to 1
    (kept: a table's outlines, turns and offset repeat every placement; read-only).
    ``facing``: only the half whose points lie toward that direction (radians, view
    pixels) from the centre."""
    R = int(math.ceil(math.hypot(outline.hx, outline.hy) + offset + width)) + 1
    yy, xx = np.mgrid[-R:R + 1, -R:R + 1].astype(np.float32)
    c, s = math.cos(theta), math.sin(theta)
    sd = _sd(outline.shape, xx * c + yy * s, -xx * s + yy * c, outline.hx, outline.hy)
    band = (np.abs(sd - offset) <= width / 2).astype(np.float32)
    if facing is not None:
        band *= (xx * math.cos(facing) + yy * math.sin(facing)) > 0
    band /= band.sum()
    band.setflags(write=False)
    return band


def outline_on_boundary(edge: np.ndarray, col: float, row: float, outlines: list[Outline], reach: float,
                        width: float = 1.5, offset: float = 0.0, n_angles: int = 24, facing: float | None = None,
                        ) -> tuple[int, float, float, float, float]:
    """Which of ``outlines`` (view pixels) a patch of foreground at (``col``, ``row``)
    (``edge``: ``boundary`` of the foreground) has, where its centre lies (within ``reach``) and how it is turned: the outline lying
    most along the patch's boundary. A base's patch is its outline plus, on some sides,
    its shadow or its miniature's overhang; those move the boundary outwards only where
    they are, so the base's own outline still runs along the boundary elsewhere, while
    the patch's mean (``pursue``'s response) is swayed by them to a larger outline.
    ``offset``: how far outside a base's edge its patch's boundary runs on this table
    (``boundary_offset``). ``facing``: the direction toward the camera (radians, view
    pixels; quantised to sixteenths of a turn). A miniature stands up toward the camera,
    so in a top-down view it and the base's own wall lean away from it: the half of the
    outline facing the camera is the base's edge alone. The share is then the larger of
    the whole outline's and that half's.

    Out: (index into ``outlines``, col, row, angle (radians, as ``pursue``'s), share of
    that outline on the boundary); index -1 when none fits in the picture.

    >>> fg = np.zeros((80, 80), np.float32)
    >>> _ = cv2.circle(fg, (48, 40), 15, 0.8, -1)  # a shadow to one side
    >>> _ = cv2.circle(fg, (40, 40), 15, 1.0, -1)  # the base
    >>> k, c, r, _, share = outline_on_boundary(boundary(fg), 44.0, 40.0, [Outline("round", h, h) for h in (12, 15, 19)], 6)
    >>> k, round(c), round(r), share > 0.4
    (1, 40, 40, True)
    >>> fg = np.zeros((80, 80), np.float32)
    >>> _ = cv2.ellipse(fg, (40, 40), (22, 12), 30, 0, 360, 1.0, -1)  # an oval turned 30 degrees
    >>> k, c, r, th, share = outline_on_boundary(boundary(fg), 42.0, 41.0, [Outline("oval", 22, 12), Outline("round", 16, 16)], 4)
    >>> k, round(c), round(r), round(math.degrees(th)) % 180, share > 0.5
    (0, 40, 40, 30, True)
    >>> fg = np.zeros((80, 90), np.float32)
    >>> _ = cv2.circle(fg, (40, 40), 15, 1.0, -1)  # a base, the camera off to its left ...
    >>> _ = cv2.ellipse(fg, (52, 40), (16, 14), 0, 0, 360, 1.0, -1)  # ... its miniature leaning right
    >>> [round(outline_on_boundary(boundary(fg), 44.0, 40.0, [Outline("round", 15, 15)], 6, facing=f)[4], 2)
    ...  for f in (None, math.pi)]
    [0.68, 1.0]
    """
    H, W = edge.shape
    best = (-1, col, row, 0.0, 0.0)
    near_half = None if facing is None else round(facing / (math.pi / 8)) * (math.pi / 8)
    for k, o in enumerate(outlines):
        # (A turned outline's kernel is the same size at every turn: one window for all.)
        R = _outline_ring(o, 0.0, offset, width).shape[0] // 2 + int(math.ceil(reach)) + 1
        r0, c0 = int(round(row)) - R, int(round(col)) - R
        a0, a1, b0, b1 = max(r0, 0), min(r0 + 2 * R + 1, H), max(c0, 0), min(c0 + 2 * R + 1, W)
        if a0 >= a1 or b0 >= b1:
            continue
        win = np.zeros((2 * R + 1, 2 * R + 1), np.float32)
        win[a0 - r0:a1 - r0, b0 - c0:b1 - c0] = edge[a0:a1, b0:b1]
        yy, xx = np.mgrid[0:2 * R + 1, 0:2 * R + 1]
        beyond = np.hypot(xx - (col - c0), yy - (row - r0)) > reach
        for theta in (np.arange(n_angles) * (math.pi / n_angles) if o.turns else [0.0]):
            resp = cv2.filter2D(win, -1, _outline_ring(o, float(theta), offset, width), borderType=cv2.BORDER_CONSTANT)
            if near_half is not None:
                near = cv2.filter2D(win, -1, _outline_ring(o, float(theta), offset, width, near_half),
                                    borderType=cv2.BORDER_CONSTANT)
                resp = np.maximum(resp, near)
            resp[beyond] = -1.0
            pr, pc = np.unravel_index(int(np.argmax(resp)), resp.shape)
            share = float(resp[pr, pc])
            if share > best[4]:
                sr, sc = _subpixel_peak(resp, int(pr), int(pc))
                best = (k, c0 + sc, r0 + sr, float(theta), share)
    return best
