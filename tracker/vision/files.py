"""Files of stands: rectangles end to end in a line, placed along it by the file's ends.

Stands of an Epic unit in a file touch end to end, and a file's rim runs round it whole:
where two stands meet, their ends show little or no rim (the miniatures stand to the
edge). A rectangle's fit finds its long sides on the file's long rims anywhere along them,
so each stand's place along the file is decided by little, and the stands of one file
were found slid along it together, each 0.3-0.5 in off (1080p, a rim fit of 0.62).
The file's two ends do show: its stands are placed where the file's ends lie.

In: stands' centres and turns in view pixels, their half sizes, and a map of their side's
rim evidence. Out: the files (``files``: chains of stands end to end) and how far a
file's stands lie off along it (``file_shift``, view pixels); the places of stands missing
from a file or a rank between two found (``gap_slots``: any unit of length).
"""

from __future__ import annotations

import math

import cv2
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

# Two stands are end to end when turned alike within FILE_TURN, their centres a stand's
# length apart along it within FILE_ALONG_TOL of a length, and within FILE_ACROSS_TOL of a
# half depth across it.
FILE_TURN = math.radians(6.0)
FILE_ALONG_TOL, FILE_ACROSS_TOL = 0.2, 0.5


def line_turn(a, b):
    """How far apart two lines' turns ``a`` and ``b`` are (radians, numbers or arrays):
    modulo a half turn, 0 to pi / 2."""
    return np.abs((np.asarray(a) - b + math.pi / 2) % math.pi - math.pi / 2)


def files(centres: np.ndarray, thetas: np.ndarray, hx: float, hy: float) -> list[list[int]]:
    """The chains of two or more stands end to end (indices into ``centres``, (n, 2)
    view pixels, turned ``thetas`` radians; half length ``hx``, half depth ``hy``).

    >>> c = np.array([[10.0, 10.0], [30.0, 10.5], [50.0, 10.0], [30.0, 40.0]])
    >>> files(c, np.zeros(4), 10.0, 5.0)
    [[0, 1, 2]]
    """
    n = len(centres)
    u = np.c_[np.cos(thetas), np.sin(thetas)]
    d = centres[None, :, :] - centres[:, None, :]  # (i, j): from stand i to stand j
    along = np.abs((d * u[:, None, :]).sum(axis=2))
    across = np.abs(d[..., 1] * u[:, None, 0] - d[..., 0] * u[:, None, 1])
    turn = line_turn(thetas[:, None], thetas[None, :])
    linked = (turn <= FILE_TURN) & (np.abs(along - 2 * hx) <= FILE_ALONG_TOL * 2 * hx) & (across <= FILE_ACROSS_TOL * hy)
    np.fill_diagonal(linked, False)
    _, label = connected_components(csr_matrix(linked | linked.T), directed=False)
    groups = [np.flatnonzero(label == g).tolist() for g in range(int(label.max()) + 1)] if n else []
    return [g for g in groups if len(g) > 1]


def file_shift(rim: np.ndarray, centres: np.ndarray, theta: float, hx: float, hy: float, band: float = 1.5,
               step: float = 0.25) -> tuple[float, float, float]:
    """How far (view pixels, along ``theta``) a file's stands (``centres``, (n, 2)) lie
    off: the shift within half a stand's length that puts the most rim evidence
    (``rim``) on the file's two ends (each the mean over the middle 80 % of its width and
    ``band`` pixels inward). Also that evidence and the evidence where they lie.

    >>> rim = np.zeros((40, 80), np.float32)
    >>> rim[15:26, 10:12] = rim[15:26, 49:51] = 1.0  # the ends of a file 40 px long, from column 10
    >>> s, best, here = file_shift(rim, np.array([[25.0, 20.0], [45.0, 20.0]]), 0.0, 10.0, 5.0)
    >>> round(s), best > here
    (-5, True)
    """
    u = np.array([math.cos(theta), math.sin(theta)])
    v = np.array([-u[1], u[0]])
    t = centres @ u
    c = centres.mean(axis=0) - (float(t.mean()) * u)  # (the file's axis through its middle)
    lo, hi = float(t.min()) - hx, float(t.max()) + hx
    k = np.arange(-0.8 * hy, 0.8 * hy + 1e-6, 0.5)
    inward = np.arange(0.0, band + 1e-6, 0.5)

    def end(at: float, sign: float) -> float:
        pts = c + np.add.outer(at + sign * inward, np.zeros_like(k))[..., None] * u + k[None, :, None] * v
        cols, rows = pts[..., 0].astype(np.float32), pts[..., 1].astype(np.float32)
        return float(cv2.remap(rim, cols, rows, cv2.INTER_LINEAR, borderValue=0.0).mean())

    shifts = np.arange(-hx, hx + 1e-6, step)
    score = np.array([end(lo + s, 1.0) + end(hi + s, -1.0) for s in shifts])
    here = end(lo, 1.0) + end(hi, -1.0)
    best = int(np.argmax(score))
    return float(shifts[best]), float(score[best]), here


# A gap's two stands lie in line when each is turned within GAP_TURN of the line between
# them (for a file; a quarter turn from it for a rank): faint stands' fits are turned a
# few degrees off, the line between two stands of a file is the file.
GAP_TURN = math.radians(15.0)


def gap_slots(centres: np.ndarray, thetas: np.ndarray, hx: float, hy: float, most: int = 2
              ) -> list[tuple[np.ndarray, float]]:
    """The places of stands missing between two found in line: pairs of stands each
    turned within GAP_TURN of the line between them (a file), or a quarter turn from it
    (a rank), whose centres lie 2 to ``most`` + 1 stands' lengths (a file) or depths (a
    rank) apart, within FILE_ALONG_TOL of a whole stand; the gap's stands evenly between
    them, turned along the line (or across it). A unit's stands keep in files and ranks,
    so a stand its rims could not show (a green rim on a green mat at 720p) still leaves
    the gap of its size between its neighbours. (``centres`` (n, 2), ``thetas`` radians,
    half length ``hx`` and half depth ``hy``, all in one unit.)

    >>> c = np.array([[0.0, 0.0], [6.0, 0.2], [20.0, 0.0], [20.0, 2.0]])  # a file 3 apart, a rank 2 apart
    >>> [(p.round(1).tolist(), round(t, 2)) for p, t in gap_slots(c, np.array([0.0, 0.1, 0.0, 0.0]), 1.0, 0.5)]
    [([2.0, 0.1], 0.03), ([4.0, 0.1], 0.03), ([20.0, 1.0], 0.0)]
    """
    out: list[tuple[np.ndarray, float]] = []
    for i in range(len(centres)):
        for j in range(i + 1, len(centres)):
            d = centres[j] - centres[i]
            line, apart = math.atan2(d[1], d[0]), float(np.hypot(*d))
            for turn, pitch in ((line, 2 * hx), (line - math.pi / 2, 2 * hy)):
                n = round(apart / pitch)
                if 2 <= n <= most + 1 and abs(apart / pitch - n) <= FILE_ALONG_TOL \
                        and line_turn(thetas[i], turn) <= GAP_TURN and line_turn(thetas[j], turn) <= GAP_TURN:
                    out += [(centres[i] + d * k / n, turn % math.pi) for k in range(1, n)]
    return out
