"""Token tags too small to decode, told apart among the few the game has.

At 720p a token's 0.66 in tag is about 11 pixels across: under two pixels a cell, its
bits blurred into each other, which neither ArUco nor the cell-by-cell reading of
``vision.tags`` can decode (on Epic tuning tables 8 of 58 tagged objectives were read).
But a table holds only the ids its game config lists, and a tag the picture can no
longer decode still looks more like its own code than like any other of those few.
So each candidate code is drawn as the camera would see it: its 6x6 cells (black
border, 16 bits) and the paper round them, each pixel's share of each cell worked out
by supersampling, blurred by a Gaussian of the camera's softness, at the poses where
the tag's black border fits best (``vision.tags.border_poses``), and compared with the
close-up by normalised correlation (indifferent to light and paper colour). The best
correlation per id is the id's likeness (``likeness``). Which token carries which id is
then one assignment over all of a frame's unread tokens, each id once (``assign``).

Likeness alone does not make a disc a token: a miniature's blob correlates with a
heavily blurred tag about as well as a blurred tag does. ``Likeness.blob`` (a plain or
hollow dark square) is what such a blob scores; the caller weighs the rest (the disc,
its size and colour).

In: a grey close-up centred on the token (``vision.tags``' convention), its scale (pixels
an inch), the disc's diameter (inches), the dictionary, the candidate ids. Out: each
candidate's likeness (-1 to 1).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import cv2
import numpy as np
from scipy.optimize import linear_sum_assignment

from .tags import _dictionary_codes, border_poses

WORK_PX_PER_IN = 32.0  # the close-up is matched at this scale: ~3.5 px a cell
SUPERSAMPLE = 3  # sub-pixel samples a side when a pixel's share of each cell is worked out
BLUR_PX = (0.7, 1.5, 2.5)  # the camera's softness tried, Gaussian sigma at WORK_PX_PER_IN
POSES = 12  # the border's best poses drawn


class Likeness(NamedTuple):
    """``per_id``: the likeness of each candidate id (parallel to the ids asked about);
    ``blob``: the best of a plain dark square's and a hollow one's, the shapes a blurred
    miniature or shadow also makes: a tag is more like its own code than like these."""

    per_id: np.ndarray
    blob: float


@functools.lru_cache(maxsize=8)
def _full_codes(dictionary: str, ids: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The candidates' codes in their four turns as 37 values: the 6x6 cells (border 0,
    black; the 16 bits 0/1) then the paper (1); then the two blobs (a dark square, a
    hollow one; id -1). Returns (codes (4n + 2, 37), ids (4n + 2,))."""
    codes, all_ids = _dictionary_codes(dictionary)
    sel = np.isin(all_ids, ids)
    k = np.arange(6) - 2.5
    cu, cv_ = (a.ravel() for a in np.meshgrid(k, k))
    inner = np.flatnonzero(~((np.abs(cu) > 2) | (np.abs(cv_) > 2)))
    full = np.zeros((int(sel.sum()) + 2, 37), np.float32)
    full[:, 36] = 1.0
    full[:-2, inner] = codes[sel]
    full[-1, inner] = 1.0
    full.setflags(write=False)
    return full, np.concatenate([all_ids[sel], [-1, -1]])


def _cell_shares(h: int, w: int, centre: tuple[float, float], step: tuple[float, float]) -> np.ndarray:
    """Each pixel's share of each of the 36 cells and of the paper (index 36): (37, h*w).
    ``centre``: the grid's centre in pixels; ``step``: one cell along the grid's rows."""
    n = SUPERSAMPLE
    off = (np.arange(n) + 0.5) / n - 0.5
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    ux, uy = step
    c2 = ux * ux + uy * uy
    pix = np.arange(h * w)
    idx = []
    for oy in off:
        for ox in off:
            dx, dy = (xs + ox - centre[0]).ravel(), (ys + oy - centre[1]).ravel()
            u = (dx * ux + dy * uy) / c2 + 3.0
            v = (-dx * uy + dy * ux) / c2 + 3.0
            inside = (u >= 0) & (u < 6) & (v >= 0) & (v < 6)
            cell = np.where(inside, np.floor(v) * 6 + np.floor(u), 36).astype(np.intp)
            idx.append(cell * (h * w) + pix)
    shares = np.bincount(np.concatenate(idx), minlength=37 * h * w).astype(np.float32)
    return shares.reshape(37, h * w) / (n * n)


def likeness(gray: np.ndarray, S: float, diam: float, dictionary: str, ids: tuple[int, ...]) -> Likeness:
    """How much the close-up looks like each candidate id's tag, seen as the camera
    would see it: the best normalised correlation over the border's best poses, the
    code's four turns and the camera's softness (``BLUR_PX``); inside the disc only.
    Each -1 to 1 (-1 when the disc is blank).

    >>> from tracker.vision.tags import _dictionary_codes
    >>> codes, all_ids = _dictionary_codes("DICT_4X4_100")
    >>> g = np.full((96, 96), 70, np.uint8); _ = cv2.circle(g, (48, 48), 40, 225, -1)
    >>> bits = codes[all_ids.tolist().index(47)].reshape(4, 4)
    >>> tag = np.zeros((6, 6), np.uint8); tag[1:5, 1:5] = bits * 225
    >>> g[27:69, 27:69] = cv2.resize(tag, (42, 42), interpolation=cv2.INTER_NEAREST)
    >>> g = cv2.GaussianBlur(cv2.resize(cv2.resize(g, (13, 13), interpolation=cv2.INTER_AREA), (96, 96)), (0, 0), 2)
    >>> like = likeness(g, 80.0, 1.0, "DICT_4X4_100", (44, 47, 50, 54))
    >>> [44, 47, 50, 54][int(np.argmax(like.per_id))], bool(like.per_id.max() > like.blob)
    (47, True)
    """
    if S > WORK_PX_PER_IN:  # finer than the bits need: matched smaller, and faster
        w0 = gray.shape[1]
        gray = cv2.resize(gray, None, fx=WORK_PX_PER_IN / S, fy=WORK_PX_PER_IN / S, interpolation=cv2.INTER_AREA)
        S = S * gray.shape[1] / w0
    S = float(S)
    h, w = gray.shape
    poses = border_poses(gray, S, diam, POSES)
    full, code_ids = _full_codes(dictionary, tuple(sorted(ids)))
    out = Likeness(np.full(len(ids), -1.0), -1.0)
    if not poses or not ids:
        return out
    yy, xx = np.mgrid[0:h, 0:w]
    seen = gray.astype(np.float32).ravel()
    best = np.full(len(full), -1.0)
    sigmas = BLUR_PX
    for centre, step in poses:
        # Read inside the disc round this pose's tag (a tag is printed centred on its
        # disc), not round the close-up's centre: a disc found a couple of pixels off
        # its print would bring the mat beyond its edge into the reading, which no
        # code's drawing (tag on paper) explains (0.93 -> 0.66 for a tag's own id, 0.12
        # in off, at 1080p).
        inside = (np.hypot(xx - centre[0], yy - centre[1]) < 0.45 * diam * S).ravel()
        obs = seen[inside] - seen[inside].mean()
        norm = float(np.linalg.norm(obs))
        if norm < 1e-3:
            continue
        obs /= norm
        shares = _cell_shares(h, w, centre, step)
        drawn = full @ shares  # each code drawn sharp, (4n, h*w)
        fits = []
        for sigma in sigmas:
            soft = cv2.GaussianBlur(drawn.reshape(-1, h, w).transpose(1, 2, 0), (0, 0), sigma)
            soft = soft.reshape(h * w, -1).T[:, inside]
            soft = soft - soft.mean(axis=1, keepdims=True)
            soft /= np.linalg.norm(soft, axis=1, keepdims=True) + 1e-6
            fits.append(soft @ obs)
            np.maximum(best, fits[-1], out=best)
        # The softness is the camera's, not the pose's: the one that fits the border's
        # best pose best is kept for the others (a third of the work).
        sigmas = (sigmas[int(np.argmax([f.max() for f in fits]))],)
    for j, i in enumerate(ids):
        out.per_id[j] = best[code_ids == i].max()
    return out._replace(blob=float(best[code_ids == -1].max()))


def assign(like: np.ndarray, floor: float | np.ndarray, margin: float) -> list[int | None]:
    """Which candidate (column) each token (row) carries, each candidate once: the
    assignment of greatest total likeness, where a token may also carry none (worth
    ``floor``, or its row's: a likeness under it is no evidence). A token keeps its id only when every
    assignment that takes it away is worse by at least ``margin``; else None (too
    close to tell, and a misnamed objective moves a ruling).

    >>> assign(np.array([[0.9, 0.5], [0.85, 0.7]]), 0.6, 0.05)
    [0, 1]
    >>> assign(np.array([[0.9, 0.88]]), 0.6, 0.05)
    [None]
    >>> assign(np.array([[0.3, 0.2]]), 0.6, 0.05)
    [None]
    """
    n, m = like.shape
    out: list[int | None] = [None] * n
    if not like.size:
        return out
    # Columns m.. are "no id", one per token, each worth the floor.
    table = np.hstack([like, np.repeat(np.broadcast_to(np.asarray(floor, float), (n,))[:, None], n, axis=1)])

    def total(t: np.ndarray) -> tuple[float, np.ndarray]:
        r, c = linear_sum_assignment(-t)
        return float(t[r, c].sum()), c

    best, cols = total(table)
    for r, c in enumerate(cols):
        if c >= m:
            continue
        without = table.copy()
        without[r, c] = -1e3
        if best - total(without)[0] >= margin:
            out[r] = int(c)
    return out
