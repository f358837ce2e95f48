"""The learned base refiner's uses: places, sides and bases the rules saw too little of.

In: the frame, the bases found, the patches the rules left unnamed (doubts, and round-size
patches no base explains: ``_proposed_rounds``).
Out: round bases placed from little rim moved toward where ``vision.refiner`` reads them,
weighed by each place's error, and sized by it where it is sure (``_refined``); a weak base it
reads as another side's alone given that side (``_sides_read``); a patch it reads as a base of
one side alone made that base where it overlaps none (``_doubts_read``); the rest shown as
doubts (``_as_doubts``); of two round bases the refiner left overlapping, the larger
(``_overlaps_parted``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..base_shapes import SHAPE_NAMES, depth_inside
from ..vision.base_crops import camera_nadir
from ..vision.foreground import foreground, shadow
from ..vision.pursuit import roster_short
from ..vision.refiner import SIZES_MM
from ..vision.stands import Outline, pursue, response_at
from ..world import MM_PER_IN, PATCH_SIGMA_IN, Doubt
from .detections import KIND_BASE, Detections

# The learned refiner's error per base: its validation RMS (0.040 in, tuning tables and our
# own renders it was not trained on), as which its place is weighed; and the sigma a base
# it placed is stated with at least (its RMS on crescents at 720p on unseen tuning
# tables, 0.09 in, rounded up: an honest margin for "too close to call"). See _refined.
REFINER_ERROR_IN, REFINED_SIGMA_IN = 0.04, 0.1


# Two bases' centres lie at least this share of their radii's sum apart (_doubts_read, _overlaps_parted).
BASES_APART = 0.8
ONE_HEIGHT_IN = 0.5  # two bases' heights this near: on one surface (a platform's top is an inch up or more)


class _Patch(NamedTuple):
    """A base-sized patch of a look the rules could not name (``TableDetector._doubts``):
    world place and the height of the plane it lies on, half its long size (in), the
    sides it could be, its outline's shape, and whether it is shown as a world.Doubt
    (False: only offered to the learned refiner, ``_proposed_rounds``)."""

    x: float
    y: float
    z: float
    r: float
    sides: list[int]
    shape: str
    shown: bool


class LearnedReads:
    """Uses the learned refiner where the rules saw too little (a mixin of ``TableDetector``)."""

    def _reader_nadir(self, reader: object | None) -> np.ndarray | None:
        """The point under the camera, where a learned refiner (``reader``) can read this
        table (a model, an empty table, a camera not known only as a homography); else None."""
        if reader is None or self._background_bgr is None:
            return None
        return camera_nadir(self.camera)

    def _rims_as_seen(self) -> list[tuple[int, np.ndarray]]:
        """(index, rim colour as this table's light shows it, BGR) per side."""
        return [(s.index, self.light.as_seen(s.rim_bgr)) for s in self.config.sides]

    def _tops_and_rims(self, bases: Detections, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """What a learned reader is given for ``bases[idx]``: their tops' places (x, y,
        height of the base's top) and each one's side's rim colour as this table's light
        shows it (BGR; grey for a side not configured)."""
        colour = dict(self._rims_as_seen())
        top = bases.xyz[idx].copy()
        top[:, 2] += self.config.base_thickness_in
        return top, np.array([colour.get(int(bases.side[i]), (128, 128, 128)) for i in idx], float).reshape(-1, 3)

    def _little_rim(self, bases: Detections, below: float | None = None) -> np.ndarray:
        """Which ``bases`` were placed from little rim: fitted under ``below`` of it
        (``refine_below`` unless said), or found as a patch."""
        return (bases.score < (self.refine_below if below is None else below)) | bases.from_foreground

    def _weak_rounds(self, bases: Detections, below: float | None = None) -> tuple[np.ndarray, np.ndarray] | None:
        """The round bases placed from little rim (under ``below`` of it fitted,
        ``refine_below`` unless said, or found as a patch), by index, and the point under
        the camera; None where there are none or the refiner cannot read them (no model,
        no empty table, a camera known only as a homography)."""
        nadir = self._reader_nadir(self.refiner) if len(bases) else None
        if nadir is None:
            return None
        weak = (bases.kind == KIND_BASE) & (bases.shape == 0) & self._little_rim(bases, below)
        idx = np.flatnonzero(weak)
        return (idx, nadir) if len(idx) else None

    def _refined(self, frame: np.ndarray, bases: Detections) -> None:
        """Round bases placed from little rim (a crescent under ``refine_below`` of their
        circle, or a patch of foreground) placed again, in place, where the learned refiner
        (``vision.refiner``, reading the frame as the camera gave it) puts them, read a
        second time centred where its first read put them (``refine_reads``), where its
        first read moves them ``refine_min_in`` to ``refine_reach_in``; with
        ``refine_weighed``, between its place and theirs, each weighed by its error (their
        stated sigma, with the difference of their radius and the one it reads;
        ``REFINER_ERROR_IN``); their sigma then at least ``REFINED_SIGMA_IN``
        with the calibration's; and sized as its last read reads them where it gives a
        size of their side's roster ``refine_size_p`` or more.
        (A patch's miniature pulls its outline off the base, and a crescent fits circles
        of several sizes: 720p tuning tables the refiner never saw, patches' RMS error
        0.210 -> 0.175 in, median 0.110 -> 0.047 in; crescents' 0.134 -> 0.093 in. The
        refiner was taught steps of up to half an inch: from a guess further off, its
        first read lands near the base, its second, centred there, on it.)"""
        weak = self._weak_rounds(bases)
        if weak is None:
            return
        idx, nadir = weak
        lift = self.config.base_thickness_in
        top, rim = self._tops_and_rims(bases, idx)
        xy, p = self.refiner.refine(self.camera, frame, self._background_bgr, top, nadir, rim)
        shift = np.hypot(*(xy - bases.xyz[idx, :2]).T)
        ok = (shift <= self.refine_reach_in) & (shift >= self.refine_min_in)
        if self.refine_reads > 1 and ok.any():
            again = top[ok].copy()
            again[:, :2] = xy[ok]
            xy[ok], p[ok] = self.refiner.refine(self.camera, frame, self._background_bgr, again, nadir, rim[ok])
        fit_mm = bases.base_mm[idx].copy()
        if self.refine_size_p < 1.0:
            sizes = {si: set(sz) for si, _, sz in self._side_lab()}
            k = p.argmax(axis=1)
            for i, kk, pk in zip(idx, k, p[np.arange(len(k)), k]):
                mm = SIZES_MM[int(kk)]
                if pk >= self.refine_size_p and mm != bases.base_mm[i] and mm in sizes.get(int(bases.side[i]), ()):
                    bases.base_mm[i] = mm
                    if len(bases.size_mm) == len(bases.kind):
                        bases.size_mm[i] = (mm, mm)
        moved = idx[ok]
        stated = len(bases.sigma_in) == len(bases.kind)  # (no sigma without a calibrated camera's)
        if stated and self.refine_weighed:
            # The two places weighed each by its own error: the refiner's, and the fit's
            # stated sigma with its size's doubt: a crescent fitted as a circle of another
            # size than the refiner reads lies the radii's difference off.
            read_mm = np.array(SIZES_MM)[p[ok].argmax(axis=1)]
            fit_sigma = np.hypot(bases.sigma_in[moved], np.abs(read_mm - fit_mm[ok]) / 2 / MM_PER_IN)
            w = REFINER_ERROR_IN ** 2 / (REFINER_ERROR_IN ** 2 + np.square(fit_sigma))
            bases.xyz[moved, :2] = w[:, None] * bases.xyz[moved, :2] + (1 - w[:, None]) * xy[ok]
        else:
            bases.xyz[moved, :2] = xy[ok]
        calib = self.calibration_sigma(bases.xyz[moved], lift)
        if calib is not None and stated:
            bases.sigma_in[moved] = np.maximum(bases.sigma_in[moved], np.hypot(calib, REFINED_SIGMA_IN))

    def _size_doubted(self, frame: np.ndarray, bases: Detections) -> None:
        """Each round base fitted on under ``size_doubt_below`` of its rim (or found as a
        patch) read by the refiner where it lies: its sigma, in place, made at least the
        spread of its radius under the sizes its side fields, each as likely as the
        refiner reads it. (A crescent fits circles of several sizes about as well, each
        centred elsewhere; a rule measuring to the base's edge is off by the radii's
        difference where the size is wrong: a 32 mm base read as 25 mm lies 0.14 in
        nearer or further than stated. The sigma says so, and the rules' margin with it.)"""
        if self.size_doubt_below <= 0:
            return
        weak = self._weak_rounds(bases, self.size_doubt_below)
        if weak is None or len(bases.sigma_in) != len(bases.kind):
            return
        idx, nadir = weak
        top, rim = self._tops_and_rims(bases, idx)
        _, p = self.refiner.refine(self.camera, frame, self._background_bgr, top, nadir, rim)
        fields = {si: set(sz) for si, _, sz in self._side_lab()}
        sizes = np.array(SIZES_MM)
        for i, pi in zip(idx, p):
            own = np.array([mm in fields.get(int(bases.side[i]), ()) for mm in SIZES_MM])
            if own.sum() < 2 or pi[own].sum() <= 0:
                continue
            q = pi * own / pi[own].sum()
            spread = float(np.sqrt(np.sum(q * np.square((sizes - bases.base_mm[i]) / 2 / MM_PER_IN))))
            bases.sigma_in[i] = float(np.hypot(bases.sigma_in[i], spread))

    def _overlaps_parted(self, bases: Detections) -> Detections:
        """``bases`` less each round base that, after the refiner moved and sized them,
        overlaps a larger one on the same surface (centres under ``BASES_APART`` of their
        radii's sum apart; alike in size, the lower scored goes). Bases never overlap, so
        the two are one base seen twice: a patch of miniature and base split in two, or an
        arc of a large rim fitted by a small circle; the smaller, which part of the larger
        explains, goes. (Tuning tables: in each of 12 such pairs on 32 Warcry tables the
        smaller was the phantom, up to 0.77 in off a true base the larger was on.)"""
        idx = np.flatnonzero((bases.kind == KIND_BASE) & (bases.shape == 0))
        if not self.part_overlaps or len(idx) < 2:
            return bases
        r = bases.base_mm[idx] / MM_PER_IN / 2
        kept: list[int] = []
        drop = np.zeros(len(bases), bool)
        for k in sorted(range(len(idx)), key=lambda k: (-r[k], -bases.score[idx[k]])):  # larger, better first
            xyz = bases.xyz[idx[k]]
            if any(np.hypot(*(xyz[:2] - bases.xyz[idx[j], :2])) < BASES_APART * (r[k] + r[j])
                   and abs(xyz[2] - bases.xyz[idx[j], 2]) < ONE_HEIGHT_IN for j in kept):
                drop[idx[k]] = True
            else:
                kept.append(k)
        return bases[~drop] if drop.any() else bases

    def _lit_foreground(self, view: int, lab: np.ndarray, bg: np.ndarray, fg: np.ndarray | None,
                        usable: np.ndarray | None = None) -> np.ndarray:
        """A view's foreground (``fg``, or made from ``usable``) less the table's shadows,
        made once a look per view (floor -1 or a platform): the round pursuit and the
        patches offered to the refiner read the same (``usable`` away from hands both)."""
        if view not in self._lit_fg:
            if fg is None:
                fg = foreground(lab, bg, usable)
            self._lit_fg[view] = np.where(shadow(lab, bg, pattern=True), 0.0, fg).astype(np.float32)
        return self._lit_fg[view]

    def _proposed_rounds(self, lab: np.ndarray, usable: np.ndarray, hand: np.ndarray, bases: Detections,
                         platform_labs: dict[int, np.ndarray] | None = None) -> None:
        """Patches of the floor's foreground (less the table's shadows, away from hands),
        and of each platform top's in ``platform_labs`` (its view of the frame), of any
        round size a side fields that the bases found leave unexplained, noted as doubts
        not to be shown (``_doubts``): the learned refiner names those it reads as a base
        (``_doubts_read``), the rest go. (The pursuit's own doubts are only of the
        outlines some side's roster lacks.)"""
        S = self.px_per_in
        sizes = sorted({float(mm) for _, _, sz in self._side_lab() for mm in sz})
        if not sizes:
            return
        usable = usable & ~self._near_hand(hand)
        shapes = [Outline("round", mm / MM_PER_IN / 2 * S, mm / MM_PER_IN / 2 * S) for mm in sizes]
        looks = [(-1, lab, self._bg_floor, usable)]
        for i, plab in (platform_labs or {}).items():
            if i < len(self._bg_platforms) and self._bg_platforms[i] is not None:
                looks.append((i, plab, self._bg_platforms[i], self._usable[i]))
        for vi, vlab, bg, vusable in looks:
            fg_lit = self._lit_foreground(vi, vlab, bg, None, vusable)
            v, z = self._view_and_height(vi)
            for p in pursue(fg_lit, shapes, threshold=self.doubt_threshold, explained=self._footprints(bases, vi)):
                xy = v.to_world(np.array([p.col]), np.array([p.row]))[0]
                self._doubts.append(_Patch(float(xy[0]), float(xy[1]), z, shapes[p.outline].hx / S, [], "round", False))

    def _sides_read(self, frame: np.ndarray, bases: Detections) -> None:
        """Round bases (every one with ``read_sides_all``, else those placed from little rim,
        as ``_refined`` picks them) whose side the learned refiner reads as another's: under ``side_own_p`` for their own side's rim
        colour, ``doubt_base_p`` or more for one other's and under ``doubt_rival_p`` for
        the rest. They take that side, in place, their old one a rival. (Those it reads as
        no side's at all are kept: dropped, 53 tuning tables it never saw lost more true
        bases than false ones, recall 96.6 -> 95.8 %, precision 98.5 -> 98.8 %.)"""
        weak = self._weak_rounds(bases, math.inf if self.read_sides_all else None) if self.read_sides else None
        if weak is None:
            return
        idx, nadir = weak
        colour = self._rims_as_seen()
        top = np.repeat(bases.xyz[idx], len(colour), axis=0)
        top[:, 2] += self.config.base_thickness_in
        _, _, present = self.refiner.read(self.camera, frame, self._background_bgr, top, nadir,
                                          np.array([c for _ in idx for _, c in colour], float))
        if present is None:
            return
        present = present.reshape(len(idx), len(colour))
        at = {si: j for j, (si, _) in enumerate(colour)}
        every = sum(1 << int(si) for si, _ in colour)
        little_rim = self._little_rim(bases)
        for n, i in enumerate(idx):
            own = at.get(int(bases.side[i]))
            if own is None or present[n, own] >= self.side_own_p:
                continue
            order = [j for j in np.argsort(-present[n]) if j != own]
            if not order or present[n, order[0]] < self.doubt_base_p or (len(order) > 1 and present[n, order[1]] >= self.doubt_rival_p):
                if self.absent_side_unsure and little_rim[i]:
                    bases.rivals[i] |= every & ~(1 << int(bases.side[i]))
                continue
            bases.rivals[i] |= 1 << int(bases.side[i])
            bases.side[i] = colour[order[0]][0]
            bases.rivals[i] &= ~(1 << int(bases.side[i]))

    def _unnamed(self, bases: Detections, tokens: Detections | None) -> list[int]:
        """This look's patches of a base's size and shape that the pursuit could not name
        (``_doubts``, by index), but for those a base or a token found took: a base
        whose centre lies within the patch's outline or the patch's centre within the
        base's, a token on the patch's middle (a look that did not look for tokens keeps
        none: a token may lie there). (A base or token merely beside it takes nothing: a
        tag token beside an oval whose miniature hides most of its rim took that oval's
        doubt.)"""
        if tokens is None:
            return []
        b = bases[bases.kind == KIND_BASE]
        rb = np.where(b.shape > 0, b.size_mm[:, 0], b.base_mm) / MM_PER_IN / 2
        token_r = max((t.diameter_in for t in self.config.tokens.values()), default=1.0) / 2
        out = []
        for k, q in enumerate(self._doubts):
            if len(b) and np.any(np.hypot(b.xyz[:, 0] - q.x, b.xyz[:, 1] - q.y) < np.maximum(rb, q.r)):
                continue
            if len(tokens) and np.any(np.hypot(tokens.xyz[:, 0] - q.x, tokens.xyz[:, 1] - q.y) < token_r):
                continue
            out.append(k)
        return out

    def _doubts_read(self, frame: np.ndarray, bases: Detections, open_: list[int]) -> tuple[Detections, list[int]]:
        """Round patches the pursuit could not name (``_doubts``, by index: ``open_``) that
        the learned refiner (``vision.refiner``) reads, under each side's rim colour, as a
        round base of one side alone (``doubt_base_p`` or more for it, under
        ``doubt_rival_p`` for every other), where it overlaps no base found: a base there,
        placed and sized as it reads it (a second read centred where the first put it),
        found as foreground, whether or not its side's roster lacks it (the roster is a
        prior, the picture the evidence). Also the doubts left.
        (A person sees a fighter whose miniature covers nearly all of its base; the
        pursuit's rules can name its side only by a clear crescent of rim.)"""
        nadir = self._reader_nadir(self.refiner) if open_ and self.config.epic is None else None
        rounds = [k for k in open_ if self._doubts[k].shape == "round"] if nadir is not None else []
        if not rounds:
            return Detections(), open_
        colour = self._rims_as_seen()
        lift = self.config.base_thickness_in
        guesses = np.array([[self._doubts[k].x, self._doubts[k].y, self._doubts[k].z + lift]
                            for k in rounds for _ in colour])
        rims = np.array([c for _ in rounds for _, c in colour], float)
        xy, size_p, present = self.refiner.read(self.camera, frame, self._background_bgr, guesses, nadir, rims)
        if present is None:
            return Detections(), open_
        present = present.reshape(len(rounds), len(colour))
        read_mm = np.asarray(SIZES_MM)[np.argmax(size_p, axis=1)].reshape(len(rounds), len(colour))
        taken, rows = set(), []
        placed = [(x, y, r) for (x, y), r in zip(bases.xyz[:, :2], np.where(
            bases.shape > 0, bases.size_mm[:, 0], bases.base_mm) / MM_PER_IN / 2)] if len(bases) else []
        sizes = {s.index: set(s.bases_mm) for s in self.config.sides}
        room, used = roster_short(*self._roster_and_found(bases)), set()  # (what each side's roster still lacks)
        for n, k in enumerate(rounds):
            best = self._doubt_side(present[n], read_mm[n], colour, sizes)
            if best is None:
                continue
            side = colour[best][0]
            q = self._doubts[k]
            first = xy[n * len(colour) + best]
            xy2, p2, pr2 = self.refiner.read(self.camera, frame, self._background_bgr, np.array([[*first, q.z + lift]]),
                                             nadir, np.array([colour[best][1]], float))
            if pr2[0] < self.doubt_base_p:
                continue
            at = xy2[0]
            kk = int(np.argmax(p2[0]))
            mm = SIZES_MM[kk] if SIZES_MM[kk] in sizes.get(side, ()) else min(
                sizes.get(side) or {2 * q.r * MM_PER_IN}, key=lambda v: abs(v - 2 * q.r * MM_PER_IN))
            r_new = mm / MM_PER_IN / 2
            if any(np.hypot(at[0] - x, at[1] - y) < BASES_APART * (r + r_new) for x, y, r in placed):
                continue  # (bases do not overlap: a base found already, or named from another patch of it)
            row = {"xyz": (at[0], at[1], q.z), "kind": KIND_BASE, "side": side, "base_mm": mm,
                   "score": self.min_coverage, "from_foreground": True}
            if room.get((side, ("round", mm, mm)), 0) <= 0:
                row = self._outline_read_as_round(row, room, used) or row
            key = (side, ("round", mm, mm) if "shape" not in row else
                   (SHAPE_NAMES[row["shape"]], float(row["size_mm"][0]), float(row["size_mm"][1])))
            room[key] = room.get(key, 0) - 1
            placed.append((row["xyz"][0], row["xyz"][1], r_new))
            taken.add(k)
            rows.append(row)
        named = Detections.from_rows(rows)
        calib = self.calibration_sigma(named.xyz, lift)
        if calib is not None and len(named):
            named.sigma_in = np.hypot(calib, PATCH_SIGMA_IN)
        return named, [k for k in open_ if k not in taken]

    def _doubt_side(self, present: np.ndarray, read_mm: np.ndarray, colour: list, sizes: dict) -> int | None:
        """Which of ``colour`` (the sides' rims as seen) a doubt the refiner read under each
        is a base of: the one it reads ``doubt_base_p`` or more with every other under
        ``doubt_rival_p``; or, of those it reads ``doubt_rival_p`` or more, the one alone
        whose roster (``sizes``) lists the size it reads under that rim (``read_mm``) and
        that it reads ``doubt_base_p`` or more. (Two rims of near colours under a
        miniature, blue and purple, read alike; a 32 mm base is not of a side that fields
        none.) None when it is no side's."""
        order = np.argsort(-present)
        best = int(order[0])
        if present[best] < self.doubt_base_p:
            return None
        if len(order) < 2 or present[order[1]] < self.doubt_rival_p:
            return best
        if not self.doubt_side_by_size:
            return None
        fits = [int(j) for j in order if present[j] >= self.doubt_rival_p and read_mm[j] in sizes.get(colour[j][0], ())]
        return fits[0] if len(fits) == 1 and present[fits[0]] >= self.doubt_base_p else None

    def _outline_read_as_round(self, row: dict, room: dict, used: set[int]) -> dict | None:
        """A round base the refiner reads (``row``) that its side's roster has no room
        for, where the side lacks an oval or rectangle (``room``: what each side's roster
        still lacks): that outline instead, placed by its rim fit refused for the little
        rim it saw (``_refused_shapes``; by index, not in ``used``), where the round lies
        inside the fit, the fit's inside is mostly not the table (``_filled``) and its
        outline explains the patch of foreground better than the round's circle does.
        The refiner knows round bases only: an oval whose miniature hides all but one
        end's crescent reads to it as a round base there (24 mixed tuning tables: 21 of
        24 such rounds lay in an oval or rectangle the side lacked). None otherwise."""
        side, (x, y, z), mm = row["side"], row["xyz"], row["base_mm"]
        best = None
        for j, f in enumerate(self._refused_shapes):
            key = (SHAPE_NAMES[f["shape"]], float(f["size_mm"][0]), float(f["size_mm"][1]))
            view, height = self._view_and_height(f["view"])
            if j in used or f["side"] != side or room.get((side, key), 0) <= 0 or abs(height - z) > 0.05:
                continue
            col, row_px = view.to_pixel(np.array([[x, y]]))[0]
            hx, hy = (v / MM_PER_IN * self.px_per_in / 2 for v in f["size_mm"])
            if depth_inside(col, row_px, key[0], 2 * hx, 2 * hy, f["col"], f["row"], math.degrees(f["theta"])) <= 0:
                continue
            near = self._fg_near(f["view"], f["col"], f["row"], math.hypot(hx, hy) + 3)
            if near is None:
                continue
            fg, c0, r0 = near
            r_px = mm / MM_PER_IN * self.px_per_in / 2
            mine = response_at(fg, Outline(key[0], hx, hy), f["theta"], f["col"] - c0, f["row"] - r0)
            if self._filled(f["view"], key[0], hx, hy, f["theta"], f["col"], f["row"]) < self.outline_read_filled \
                    or mine <= response_at(fg, Outline("round", r_px, r_px), 0.0, col - c0, row_px - r0):
                continue
            if best is None or f["score"] > self._refused_shapes[best]["score"]:
                best = j
        if best is None:
            return None
        used.add(best)
        f = self._refused_shapes[best]
        view, height = self._view_and_height(f["view"])
        xy = view.to_world(np.array([f["col"]]), np.array([f["row"]]))[0]
        return {**row, "xyz": (float(xy[0]), float(xy[1]), height), "base_mm": float(f["size_mm"][0]),
                "shape": f["shape"], "size_mm": tuple(f["size_mm"]),
                "angle_deg": float(-math.degrees(f["theta"])) % 180.0}

    def _as_doubts(self, open_: list[int]) -> tuple[Doubt, ...]:
        """The doubts left (``_doubts`` by index) as world.Doubt."""
        return tuple(Doubt(q.x, q.y, float(q.z), q.r, tuple(int(si) for si in q.sides))
                     for q in (self._doubts[k] for k in open_) if q.shown)
