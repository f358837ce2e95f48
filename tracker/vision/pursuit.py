"""Which side a base found as a patch of its outline belongs to, and which outlines the
roster still lacks (the outline pursuit's bookkeeping; the patches themselves come from
``vision.stands``).

A whole look holds the bases it found against each side's roster; while a side lacks
bases of some outline (shape, width mm, depth mm; a round base's diameter twice), the
foreground is searched for patches of those outlines. A patch's side is read off its rim:
the median of each side's rim evidence along the outline (a miniature's paint overhanging
part of the rim does not name the side). Where no rim shows, the roster alone decides,
but only for a side whose rims set-up warned are near the mat's colour (a rim that
contrasts with the mat shows), and only when no other side lacks an outline near this
one (the patch's size is uncertain by a step) and no other side's colour shows there.

In: rosters and found bases as (side, outline) pairs; evidence maps per side; the
patch's outline and pose. Out: what is short, the median evidence per side, the side
(or None: a place the camera could not name, a ``world.Doubt``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

import numpy as np

from ..base_shapes import outline_samples
from .stands import Outline

OutlineKey = tuple[str, float, float]  # (shape, width mm, depth mm)


def roster_short(listed: Iterable[tuple[int, OutlineKey]], found: Iterable[tuple[int, OutlineKey]]
                 ) -> dict[tuple[int, OutlineKey], int]:
    """(side, outline) -> how many more the roster ``listed`` holds than ``found``, only
    those short.

    >>> r32, r40 = ("round", 32.0, 32.0), ("round", 40.0, 40.0)
    >>> roster_short([(0, r32), (0, r32), (1, r40)], [(0, r32), (1, r40), (1, r40)])
    {(0, ('round', 32.0, 32.0)): 1}
    """
    short: Counter = Counter(listed)
    short.subtract(Counter(found))
    return {k: n for k, n in short.items() if n > 0}


def rim_offsets(o: Outline, theta: float, inward: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """View-pixel offsets from its centre of the points along outline ``o``'s rim (0.7 px
    inside its edge), turned ``theta``, moved ``inward`` px further in along the
    outline's normals.

    >>> du, dv = rim_offsets(Outline("round", 10, 10), 0.0)
    >>> round(float(np.hypot(du, dv).max()), 1)
    9.3
    """
    band, normal = outline_samples("rect" if o.shape == "rect" else "oval", max(o.hx - 0.7, 1.0), max(o.hy - 0.7, 1.0))
    u, v = band[:, 0] - inward * normal[:, 0], band[:, 1] - inward * normal[:, 1]
    c, s = np.cos(theta), np.sin(theta)
    return c * u - s * v, s * u + c * v


def read_at(ev: np.ndarray, cx: float, cy: float, du: np.ndarray, dv: np.ndarray) -> np.ndarray:
    """``ev`` at the pixels (``cx`` + ``du``, ``cy`` + ``dv``), each rounded and kept in the view."""
    return ev[np.clip(np.rint(cy + dv).astype(int), 0, ev.shape[0] - 1),
              np.clip(np.rint(cx + du).astype(int), 0, ev.shape[1] - 1)]


def along_outline(maps: Mapping[int, np.ndarray], o: Outline, cx: float, cy: float, theta: float,
                  facing: float | None = None) -> dict[int, float]:
    """Each side's evidence map read along outline ``o`` placed at (``cx``, ``cy``) turned
    ``theta`` (0.7 px inside its edge: the rim), as its median. ``facing``: the direction
    toward the camera (radians, view pixels); each side's reading is then the larger of
    the whole outline's median and that of the half facing the camera: a miniature
    leans away from the camera in the picture and hides the far half of its rim first,
    so a crescent left showing lies on the near half.

    >>> m = np.zeros((40, 40), np.float32); m[:, 20:] = 1.0  # one side's colour on the right half
    >>> along_outline({0: m, 1: np.zeros_like(m)}, Outline("round", 10, 10), 20.0, 20.0, 0.0)
    {0: 0.5, 1: 0.0}
    >>> along_outline({0: m}, Outline("round", 10, 10), 20.0, 20.0, 0.0, facing=0.0)  # the camera to the right
    {0: 1.0}
    """
    du, dv = rim_offsets(o, theta)
    near = None if facing is None else (du * np.cos(facing) + dv * np.sin(facing)) > 0
    out = {}
    for side, ev in maps.items():
        read = read_at(ev, cx, cy, du, dv)
        out[side] = float(np.median(read))
        if near is not None and near.any():
            out[side] = max(out[side], float(np.median(read[near])))
    return out


def rim_shares(maps: Mapping[int, np.ndarray], o: Outline, cx: float, cy: float, theta: float,
               inner: float, least: float = 0.05) -> dict[int, float]:
    """Each side's share of outline ``o``'s rim (read as ``along_outline`` reads it) where
    its evidence is the strongest of all sides' and at least ``least``, and fades
    ``inner`` px further in. Every side's evidence answers a little to a rim of a near
    hue (a purple rim is part blue): the point goes to the colour that explains it
    best. A rim is a band: a colour that goes on inward is a miniature's paint over the
    rim, which names no side.

    >>> a = np.zeros((40, 40), np.float32); a[:, 20:] = 0.5  # a purple rim's right half ...
    >>> a[:, 20:] *= np.hypot(*np.mgrid[-20:20, -20:20])[:, 20:] > 7
    >>> b = 0.6 * a                                           # ... blue's evidence answers to it too
    >>> rim_shares({0: a, 1: b}, Outline("round", 10, 10), 20.0, 20.0, 0.0, inner=5.0)
    {0: 0.5, 1: 0.0}
    >>> rim_shares({0: np.full_like(a, 0.5), 1: b}, Outline("round", 10, 10), 20.0, 20.0, 0.0, inner=5.0)  # paint
    {0: 0.0, 1: 0.0}
    """
    sides = list(maps)
    if not sides:
        return {}
    rim, inside = rim_offsets(o, theta), rim_offsets(o, theta, inward=inner)
    read = np.array([read_at(maps[si], cx, cy, *rim) for si in sides])
    further = np.array([read_at(maps[si], cx, cy, *inside) for si in sides])
    k = read.argmax(axis=0)
    top = read.max(axis=0)
    won = np.where((top >= least) & (further[k, np.arange(len(k))] < 0.5 * top), k, -1)
    return {si: float(np.mean(won == n)) for n, si in enumerate(sides)}


def side_of_patch(ev: Mapping[int, float], key: OutlineKey, short: Mapping[tuple[int, OutlineKey], int],
                  warned: set[int], *, least: float, ratio: float, least_warned: float, size_step_mm: float
                  ) -> int | None:
    """The side a patch of outline ``key`` belongs to, from each side's rim evidence along
    it (``ev``): the side lacking that outline whose evidence is at least ``least`` and
    ``ratio`` times every other's; else, where no rim shows, the one side lacking an
    outline of that shape within ``size_step_mm`` if set-up ``warned`` its rims are near
    the mat and no other side's evidence reaches ``least_warned``; else None.

    >>> r50 = ("round", 50.0, 50.0)
    >>> kw = dict(least=0.003, ratio=2.0, least_warned=0.1, size_step_mm=10.0)
    >>> side_of_patch({0: 0.3, 1: 0.05}, r50, {(0, r50): 1}, set(), **kw)
    0
    >>> side_of_patch({0: 0.0, 1: 0.0}, r50, {(1, r50): 1}, {1}, **kw)   # a white rim on a pale mat
    1
    >>> side_of_patch({0: 0.0, 1: 0.0}, r50, {(1, r50): 1}, set(), **kw)  # a rim that would show
    >>> side_of_patch({0: 0.0, 1: 0.0}, r50, {(1, r50): 1, (0, ("round", 40.0, 40.0)): 1}, {1}, **kw)
    """
    sides = {si for si, k in short if k == key and si in ev}
    if not sides:
        return None
    best = max(ev, key=ev.get)
    if best in sides and ev[best] >= least and all(ev[best] >= ratio * e for si, e in ev.items() if si != best):
        return best
    near = {si for (si, k), n in short.items() if n > 0 and k[0] == key[0] and abs(k[1] - key[1]) <= size_step_mm}
    if len(near) == 1:
        lone = next(iter(near))
        if lone in warned and lone in sides and all(e < least_warned for si, e in ev.items() if si != lone):
            return lone
    return None
