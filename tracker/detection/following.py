"""Following known fighters between whole looks.

In: a frame and the fighters known (place, size, side).
Out: each one's rim re-fitted in a small window round where it was (shaped stands by
``_follow_shape``), rims in the table's own shadow judged against the shadowed table
(``_out_of_shadow``); ``Detections`` of those seen.
"""

from __future__ import annotations

import time

import cv2
import numpy as np

from ..vision.colour import detector_lab as _lab
from ..vision.filters import (
    _correlate_many,
    _local_maxima,
    _nearest_peak_key,
    _subpixel_peaks,
    ring_kernel,
)
from ..vision.rim_fit import _fit_rims
from ..vision.views import PlaneView
from ..world import MM_PER_IN
from .detections import KIND_BASE, Detections
from .round_rims import _GREY_BGR


class Following:
    """Re-fits known fighters in small windows (a mixin of ``TableDetector``)."""

    def follow(self, frame: np.ndarray, fighters: list[tuple[float, float, float, int, float]], *,
               reach_in: float = 0.8, max_jump_in: float = 0.5, hands: bool = True) -> Detections:
        """Re-find known bases near where they were: ``fighters`` as (x, y, z, side,
        base_mm), oval and rectangular ones with (shape, width_mm, depth_mm, angle_deg)
        after, and optionally the (x, y) they were last seen at when (x, y) is where
        their motion should have carried them. Between full detections a base is looked
        for only in a window round its last place, in its own side's colour, at its own
        size: a few hundred pixels
        each instead of the whole table. Tokens are not looked at (``tokens_checked``
        is False, so the tracker keeps them as they were). ``hands`` False: the caller
        knows no hand can be over the table (none was, and nothing changed where an arm
        would come in), and none is looked for."""
        t0 = time.perf_counter()
        frame = self.relight(frame)
        hand = self._hand_mask(frame) if hands else np.zeros(self.floor.shape, bool)
        over_table = bool(hand.any())  # (asked once: every window below wants it)
        # A known base is looked for up to the skin itself, not the grown mask that keeps
        # a full look from finding new bases in a finger's edge: a fighter beside a hand
        # is still seen. (The tracker still takes the grown mask for what a hand hides.)
        skin = self._hand_mask(frame, core=True) if over_table else hand
        t1 = time.perf_counter()
        S = self.px_per_in
        rim_w = max(1.5, 0.09 * S)
        sides = [s for s, _, _ in self._side_lab()]
        # Oval and rectangular bases come as (x, y, z, side, base_mm, shape, width_mm,
        # depth_mm, angle_deg); their size for the closeness test below is their depth.
        small_mm = [f[7] if len(f) > 5 and f[5] != "round" else f[4] for f in fighters]
        # Those stands' windows: searched and fitted after the loop, all of a size together.
        shaped_stands: list[tuple[int, np.ndarray, PlaneView, np.ndarray, tuple[int, int]]] = []
        found: dict[int, dict] = {}
        # Round bases' rims are fitted after the search, all those of one size together:
        # (fighter, window origin, peak) by the radii the rays span.
        to_fit: dict[tuple[float, float], list[tuple[int, np.ndarray, tuple[int, int], float, float]]] = {}
        for i, f in enumerate(fighters):
            x, y, z, side, mm = f[:5]
            shaped = len(f) > 5 and f[5] != "round"
            vi, view = self._view_at(x, y, z)
            if view is None or side not in sides:
                continue
            c = view.to_pixel(np.array([[x, y]]))[0]
            r = (float(np.hypot(f[6], f[7])) if shaped else mm) / MM_PER_IN / 2 * S
            reach = int(r + reach_in * S + 4)  # a fighter glides well under 0.8 in a frame
            H, W = view.shape
            r0, r1 = max(int(c[1]) - reach, 0), min(int(c[1]) + reach + 1, H)
            c0, c1 = max(int(c[0]) - reach, 0), min(int(c[0]) + reach + 1, W)
            if r1 - r0 < 2 * r or c1 - c0 < 2 * r:
                continue
            win = (slice(r0, r1), slice(c0, c1))
            wb = cv2.remap(frame, view.map1[win], view.map2[win], cv2.INTER_LINEAR)
            if vi < 0 and over_table:
                wb = self._out_of_shadow(wb, win, c - np.array([c0, r0]), r)
            lab = _lab(wb)
            if vi < 0:
                usable = view.valid[win] & ~self._terrain_mask_floor[win] & ~skin[win]
                rims = self._rims_floor
            else:
                usable = view.valid[win] & self.platform_views[vi][2][win]
                rims = self._rims_platforms[vi]
            ev = rims.evidence(lab, win, only=sides.index(side))[0]
            ev[~usable] = 0.0
            if shaped:
                shaped_stands.append((i, ev, view, c - np.array([c0, r0]), (c0, r0)))
                continue
            resp = _correlate_many(ev, [ring_kernel(r, rim_w)], self._ring_spectra)[0]
            rows, cols = _local_maxima(resp, self.score_threshold, max(2, int(r * 0.6)))
            if not len(rows):
                continue
            prs, pcs = _subpixel_peaks(resp, rows, cols)
            # The ring's peak nearest where the fighter should be, unless another is much
            # stronger: a neighbour of its side in the window may ring more strongly (its
            # rim less hidden), and its peak is rejected below as a jump, losing this one.
            k = int(np.argmin(_nearest_peak_key(pcs, prs, resp[rows, cols], c - np.array([c0, r0]), r)))
            to_fit.setdefault((0.6 * r, r + 0.35 * S), []).append((i, ev, (c0, r0), float(pcs[k]), float(prs[k])))
        for (r_from, r_to), group in to_fit.items():
            ang = np.linspace(0, 2 * np.pi, 96, endpoint=False)
            cos, sin = np.cos(ang), np.sin(ang)
            rho = np.arange(r_from, r_to, 0.5, dtype=np.float32)
            # Each window's rays (as _fit_rim_at samples them), then one fit for all.
            profs = [cv2.remap(ev, (pc + rho[None, :] * cos[:, None]).astype(np.float32),
                               (pr + rho[None, :] * sin[:, None]).astype(np.float32), cv2.INTER_LINEAR,
                               borderMode=cv2.BORDER_CONSTANT, borderValue=0) for _, ev, _, pc, pr in group]
            # As in a full look, the centre from a fit expecting the fighter's own size.
            bias = [self._edge_bias(fighters[i][3]) for i, *_ in group]
            expect = np.array([[np.nan if b is None else fighters[i][4] / MM_PER_IN / 2 * S + b]
                               for (i, *_), b in zip(group, bias)])
            # Each fighter's painted wall, if its side's bases have one (zero where not).
            wall = self._wall_px([fighters[i][3] for i, *_ in group], [fighters[i][:2] for i, *_ in group],
                                 [fighters[i][2] for i, *_ in group])
            sides = [fighters[i][3] for i, *_ in group]
            fit_args = (np.stack(profs), rho, cos, sin, np.array([g[3] for g in group], float),
                        np.array([g[4] for g in group], float))
            fit_kw = dict(thin_px=0.2 * S, expect_r=expect, expect_weight=self._prior_weight(sides),
                          expect_min_score=self.min_coverage, wall=wall, mat_floor=self._mat_floor(sides))
            fits = _fit_rims(*fit_args, **fit_kw)

            def refused(k, fit):
                mm = fighters[group[k][0]][4]
                return fit is None or fit[3] < self.min_coverage or \
                    abs(fit[2] - mm / MM_PER_IN / 2 * S - self.edge_bias_px) > 2.0

            # A fighter of a side set-up warns about is fitted from its own arc (no radius
            # borrowed); its free fit, started from all its edge points, can settle on a
            # circle 6 px too large through a neighbour's edges and be refused (our unpaced
            # render's green 32 mm base: then looked for again every frame, 20 regional
            # looks in a row). Refused, it is fitted again from the edge points round its
            # own circle too (_fit_rims ``start_r``).
            warned = self._warned(sides)
            again = [k for k, fit in enumerate(fits) if warned[k] and refused(k, fit)]
            if again:
                start = np.full(len(group), np.nan)
                start[again] = [self._edge_radius(sides[k], fighters[group[k][0]][4]) for k in again]
                refits = _fit_rims(*fit_args, start_r=start, **fit_kw)
                fits = [refits[k] if k in again else fit for k, fit in enumerate(fits)]
            for k, ((i, _, (c0, r0), _, _), fit) in enumerate(zip(group, fits)):
                if refused(k, fit):
                    continue
                x, y, z, side, mm = fighters[i][:5]
                cx, cy, rad, score, _, _ = fit
                view = self._view_at(x, y, z)[1]
                xy = view.to_world(np.array([cx + c0]), np.array([cy + r0]))[0]
                # A jump, or a centre inside another known fighter's base, is a neighbour's
                # rim or a miniature's edge, not this fighter: leave it to the next full look.
                if np.hypot(xy[0] - x, xy[1] - y) > max_jump_in or any(
                        (o[0], o[1]) != (x, y) and np.hypot(xy[0] - o[0], xy[1] - o[1]) < (omm + mm) / MM_PER_IN / 2 * 0.85
                        for o, omm in zip(fighters, small_mm)):
                    continue
                found[i] = {"xyz": (xy[0], xy[1], z), "kind": KIND_BASE, "side": side, "base_mm": mm, "score": score}
        found.update(self._follow_shape(shaped_stands, fighters, small_mm))
        rows = [found[i] for i in sorted(found)]
        bases = Detections.from_rows(rows)
        self._add_sigma(bases, lift=self.config.base_thickness_in)
        self.timings_ms = {"rectify": (t1 - t0) * 1e3, "follow": (time.perf_counter() - t1) * 1e3}
        out = Detections.merge([bases], terrain=self.terrain, hand_mask=hand, hands=over_table,
                               hand_view=self.floor)
        out.tokens_checked = False
        out.sizes_found = False
        return out

    def _out_of_shadow(self, wb: np.ndarray, win: tuple[slice, slice], c: np.ndarray, r: float) -> np.ndarray:
        """A follow window (floor view, BGR) lifted out of a hand's shadow: the mat round
        the base (a ring 0.3-0.5 in past its rim) darker than on the empty table by over
        15 % is a shadow over the window, and the window is brightened by that ratio. A rim in a hand's soft shadow reads as no rim colour at all against
        the lit table (a yellow base put down under a hand was not found until the
        shadow moved off)."""
        bg = self._bg_floor_grey
        if bg is None:
            return wb
        # The ring read at 96 points (two circles of 48), not every pixel of the window:
        # this runs for every fighter followed while a hand is over the table. The
        # points' offsets are kept per base radius.
        S = self.px_per_in
        ring = self._shade_rings.get((r, S))
        if ring is None:
            rr = np.concatenate([np.full(48, r + 0.3 * S), np.full(48, r + 0.5 * S)])
            ang = np.tile(np.arange(48) * (2 * np.pi / 48), 2)
            ring = (np.rint(rr * np.cos(ang)).astype(np.intp), np.rint(rr * np.sin(ang)).astype(np.intp))
            self._shade_rings[(r, S)] = ring
        col, row = ring[0] + int(round(c[0])), ring[1] + int(round(c[1]))
        h, w = wb.shape[:2]
        inside = (col >= 0) & (col < w) & (row >= 0) & (row < h)
        col, row = col[inside], row[inside]
        b = bg[win][row, col]
        grey = wb[row, col] @ _GREY_BGR
        ok = b > 16
        if np.count_nonzero(ok) < 20:
            return wb
        q = grey[ok] / b[ok]
        ratio = float(np.partition(q, len(q) // 2)[len(q) // 2])  # (the median; np.median costs 4x)
        if not 0.25 < ratio < 0.85:
            return wb
        return np.clip(wb.astype(np.float32) / ratio, 0, 255).astype(np.uint8)
