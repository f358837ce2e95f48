"""Which side a base is: its rim's colour, and the sides it could also be.

In: fits and each side's rim-colour evidence; the rims learnt so far.
Out: each fit's side re-read from the share of its rim each side's colour explains best
(``_sides_by_colour``); the other sides a poorly seen base could be (``_side_rivals``); each
side's painted wall width and its edge offset as learnt from its whole rims (``learnt`` /
``adopt``: what the look worker sends back).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import numpy as np

from ..base_shapes import SHAPE_NAMES, outline_samples
from ..vision.pursuit import rim_shares
from ..vision.stands import Outline
from ..world import MM_PER_IN
from .detections import KIND_BASE, Detections

# A base's side is sure when its rim was seen on at least this share of its outline (the
# fit's score) ...
SIDE_SURE_SCORE = 0.25


# ... else, every side whose rim evidence along the outline (RIM_BAND_IN inside its edge)
# is at least this share of its own side's, and above RIVAL_LEAST, could be its side.
SIDE_RIVAL_SHARE = 0.5


RIVAL_LEAST = 0.005


RIM_BAND_IN = 0.045


class Sides:
    """Reads sides from rims, never from a miniature's paint (a mixin of ``TableDetector``)."""

    def _sides_by_colour(self, fits: list[dict], evs: dict[tuple[int, int], np.ndarray]) -> None:
        """Each fit's (or pursued patch's) side again, by which side's colour its rim is
        (``rim_shares``): the side whose evidence wins ``side_colour_share`` of the rim at
        least and ``side_colour_ratio`` times the fit's own side's share takes it, if its
        roster lists that outline. A fit is made on one side's evidence, where a rim of a
        near hue shows a clean edge too (a purple rim on blue's map), and the best-seen
        edge claims the place; the colour itself tells the two apart. A miniature's paint
        over the rim goes on inward and wins nothing. (99 tuning tables: sides 96.8 ->
        97.4 %, wrong control calls 25 -> 19; without the paint test, 96.6 %; the
        pursued patches too, 97.6 %.)"""
        S = self.px_per_in
        sizes = {si: set(sz) for si, _, sz in self._side_lab()}
        shaped = {(si, sp.shape, float(sp.width_mm), float(sp.depth_mm)) for si, sp in self._shaped}
        for f in fits:
            v, side = f["view"], f["side"]
            maps = {si: evs[(v, si)] for si in sizes if (v, si) in evs}
            if len(maps) < 2:
                continue
            if f.get("shape", 0):
                name, (w, d) = SHAPE_NAMES[int(f["shape"])], f["size_mm"]
                o = Outline(name, w / MM_PER_IN / 2 * S, d / MM_PER_IN / 2 * S)
                lists = {si for si in maps if (si, name, float(w), float(d)) in shaped}
            else:
                r = f["base_mm"] / MM_PER_IN / 2 * S
                o = Outline("round", r, r)
                lists = {si for si in maps if f["base_mm"] in sizes[si]}
            shares = rim_shares(maps, o, f["col"], f["row"], f.get("theta", 0.0), inner=self.side_colour_inner_in * S)
            best = max(lists - {side}, key=lambda si: shares[si], default=None)
            if best is not None and shares[best] >= self.side_colour_share and \
                    shares[best] >= self.side_colour_ratio * shares.get(side, 0.0):
                f["side"] = best
                if f.get("rivals"):  # (a patch's side the roster's guess: the others still rivals)
                    f["rivals"] = (f["rivals"] | 1 << side) & ~(1 << best)

    def _side_rivals(self, bases: Detections, evs: dict[tuple[int, int], np.ndarray]) -> np.ndarray:
        """Per base, the other sides its rim could be (a bit mask; ``Detections.rivals``):
        where its rim was seen on under ``SIDE_SURE_SCORE`` of its outline, or not fitted
        at all (found as a patch), every side whose rim evidence along the outline is at
        least ``SIDE_RIVAL_SHARE`` of its own side's. On 100 tuning tables a rim seen on
        under a quarter of its outline had the wrong side 9.7 % of the time, one seen more
        0.6 %; with the evidence's share as well, a quarter of the sides read wrong are
        flagged so, and one fighter in 60 read right."""
        out = np.zeros(len(bases), np.int64)
        S = self.px_per_in
        for i in np.flatnonzero((bases.kind == KIND_BASE) & ((bases.score < SIDE_SURE_SCORE) | bases.from_foreground)):
            x, y, z = map(float, bases.xyz[i])
            v, view = self._view_at(x, y, z)
            if view is None:
                continue
            shape = SHAPE_NAMES.get(int(bases.shape[i]), "round")
            w, d = (float(m) / MM_PER_IN for m in bases.size_mm[i]) if shape != "round" else \
                (float(bases.base_mm[i]) / MM_PER_IN,) * 2
            band, _ = outline_samples("rect" if shape == "rect" else "oval", w / 2 - RIM_BAND_IN, d / 2 - RIM_BAND_IN,
                                      step=1.0 / S)
            a = math.radians(float(bases.angle_deg[i]))
            px = view.to_pixel(np.column_stack([x + math.cos(a) * band[:, 0] - math.sin(a) * band[:, 1],
                                                y + math.sin(a) * band[:, 0] + math.cos(a) * band[:, 1]]))
            H, W = view.shape
            c = np.clip(np.rint(px[:, 0]).astype(int), 0, W - 1)
            r = np.clip(np.rint(px[:, 1]).astype(int), 0, H - 1)
            ev = {si: float(evs[(v, si)][r, c].mean()) for si, _, _ in self._side_lab() if (v, si) in evs}
            own = ev.get(int(bases.side[i]), 0.0)
            for si, e in ev.items():
                if si != int(bases.side[i]) and e > RIVAL_LEAST and e >= SIDE_RIVAL_SHARE * own:
                    out[i] |= 1 << si
        return out

    def _wall_px(self, side: Any, xy: np.ndarray, z: Any, share: float | None = None) -> np.ndarray | None:
        """(N, 2) for bases of ``side`` at world ``xy`` standing at height ``z`` (each one
        number, or one per base): how far, and which way, a base's painted side wall
        widens its rim toward the camera's nadir, in view pixels (col, row); zero for a
        side whose bases carry their colour on the top face only (``rim_style: ring``),
        and None when no base here has a wall to take off (or the camera's place is not
        known).

        Seen from above, the wall's foot is the top's edge moved toward the nadir by
        ``w = thickness * d / (H - z)`` (d the base's distance from the nadir, H the camera's
        height): on a ray at angle phi from that direction the edge lies ``w cos(phi)``
        past the top's (_fit_rims takes it off). A whole rim's centre is otherwise w / 2
        toward the nadir, a crescent's on the near side up to w (our renders' green 32 mm
        base 14.7 in out, 0.08 in). How much of ``w`` reads as rim depends on the paint
        and the light on the wall: ``share`` (default: the side's, _wall_share)."""
        xy = np.asarray(xy, float).reshape(-1, 2)
        sides = np.broadcast_to(np.asarray(side, int), (len(xy),))
        by_side = {int(s): (self._wall_share(int(s)) if share is None else share) if self._painted(int(s)) else 0.0
                   for s in set(sides.tolist())}
        if max(by_side.values(), default=0.0) <= 0.0:
            return None  # (nothing to take off: the fit as for a ring)
        shares = np.array([by_side[s] for s in sides.tolist()])
        C = np.asarray(self.camera.camera_position, float)
        to_nadir = C[:2][None] - xy
        w = shares * self.config.base_thickness_in / np.maximum(C[2] - np.asarray(z, float), 1.0) * self.px_per_in
        # World +y is up the view (row 0 the far edge): the row's sign flips.
        return np.column_stack([to_nadir[:, 0] * w, -to_nadir[:, 1] * w])

    def _warned(self, sides) -> np.ndarray:
        """Per candidate, whether set-up warns its side's rims are close to the mat's
        colour: its edges are read above the mat's own evidence (_ray_edges ``mat_floor``)
        and its centre fitted with ``warned_prior_weight``."""
        return np.array([int(s) in self._rim_warned for s in sides], bool)

    def _prior_weight(self, sides) -> np.ndarray:
        """Per candidate, how many edge points its size's expected radius counts as in
        the fit of its centre."""
        return np.where(self._warned(sides), self.warned_prior_weight, self.radius_prior_weight)

    def _mat_floor(self, sides) -> np.ndarray | None:
        """_warned, or None when no side is (nothing to do)."""
        return self._warned(sides) if self._rim_warned else None

    def _painted(self, side: int) -> bool:
        """Whether this side's config says its bases' side walls carry the rim colour
        (and the camera's place, which the wall's apparent width needs, is known)."""
        spec = next((s for s in self.config.sides if s.index == side), None)
        return spec is not None and getattr(spec, "rim_style", "ring") == "painted_edge" \
            and getattr(self.camera, "camera_position", None) is not None

    def _wall_share(self, side: int) -> float:
        """The share of a painted wall's width this side's rims show as rim: the median
        of its whole rims' (_learn_edge_bias), ``wall_share_start`` until three."""
        if side not in self._wall_share_memo:  # (asked for by every fit of a look and every follow)
            seen = self._wall_share_seen.get(side)
            self._wall_share_memo[side] = float(np.clip(np.median(seen), 0.0, 1.0)) \
                if seen is not None and len(seen) >= 3 else self.wall_share_start
        return self._wall_share_memo[side]

    def learnt(self) -> dict[str, dict[int, list[float]]]:
        """What this detector has learnt from the rims it has seen: each side's edge
        offsets and wall shares (_learn_edge_bias). A copy looking elsewhere (the live
        page's worker) sends them back for ``adopt``."""
        return {"edge_bias": {s: list(v) for s, v in self._edge_bias_seen.items()},
                "wall_share": {s: list(v) for s, v in self._wall_share_seen.items()}}

    def adopt(self, learnt: dict[str, dict[int, list[float]]]) -> None:
        """Take what a copy of this detector learnt (``learnt()``) in place of its own:
        the copy started from this one's and has seen every look since."""
        self._edge_bias_seen = {s: deque(v, maxlen=64) for s, v in learnt["edge_bias"].items()}
        self._wall_share_seen = {s: deque(v, maxlen=64) for s, v in learnt["wall_share"].items()}
        self._edge_bias_memo.clear()
        self._wall_share_memo.clear()

    def _wall_learnable(self, side: int) -> bool:
        """Whether this side's rims stand out from the mat enough to learn its wall's
        share from: set-up does not warn about them (calibrate.rim_contrasts; a green rim
        on a green mat edges into the mat's own greens)."""
        return side not in self._rim_warned
