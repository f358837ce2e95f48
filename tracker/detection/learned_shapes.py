"""The learned shape reader's uses on Warcry tables whose sides field ovals or rectangles
(``vision.shape_reader``: a 6 in crop round a guess -> shape, sizes, centre, turn).

In: the frame as the camera gave it, the bases found.
Out: a base the reader reads surely as another outline of its side's roster made that one
(``_shapes_read``), two touching rounds read between them as an outline their side lacks
made that base (``_ends_read_as_outline``), every other base placed and turned between its
fit and the reading, weighed by each one's error (``_shapes_weighed``).
"""

from __future__ import annotations

import math

import numpy as np

from ..base_shapes import SHAPE_CODES, depth_inside
from ..vision.pursuit import roster_short
from ..vision.shape_reader import SHAPES, ShapeReading
from ..vision.stand_refiner import wrap_turn
from ..world import MM_PER_IN
from .detections import KIND_BASE, Detections
from .learned import ONE_HEIGHT_IN

# The shape reader's error placing a base it gives another shape: its validation RMS on
# the detector's own guesses, rounded up (see _shapes_read).
SHAPE_READ_SIGMA_IN = 0.08
# ... and its error placing any base: its validation RMS on the detector's guesses (0.058
# in), as which its place is weighed against a fit's (see _shapes_weighed).
SHAPE_READER_ERROR_IN = 0.05



class ShapeReads:
    """The learned shape reader's uses (a mixin of ``TableDetector``; the reader's nadir and
    the rims as seen come from ``LearnedReads``)."""

    def _shapes_read(self, frame: np.ndarray, bases: Detections, since: int = 0) -> Detections:
        """On a Warcry table whose sides field ovals or rectangles, each base (from index
        ``since``: those ``_doubts_read`` made) read by the shape reader, again centred
        where that puts it: where the second read reads a round base as not round (or an
        oval or rectangle as round) with ``shape_read_p`` or more, as an outline the side's
        roster lists (its long size within ``shape_read_size_mm``; of two that size, the
        shape it finds likelier), the base is that one, placed and turned so, its sigma at
        least ``SHAPE_READ_SIGMA_IN`` with the calibration's; a round base of its side
        whose centre then lies inside it is the same base seen twice (an oval's two ends
        read as two rounds) and goes; where another side's base or an outline would, it is
        left as it was (the reader may have read that base). The bases kept.
        (A round rim fits an oval's end where a miniature hides the rest of its rim, a
        base's length off its centre; the rules see an arc, the network the footprint.)"""
        nadir = self._reader_nadir(self.shape_reader) if self._shaped and self.config.epic is None else None
        idx = np.flatnonzero(bases.kind[since:] == KIND_BASE) + since if nadir is not None and self.read_shapes else []
        if not len(idx):
            return bases
        top, rims = self._tops_and_rims(bases, idx)
        first = self.shape_reader.read(self.camera, frame, self._background_bgr, top, nadir, rims)
        p_round, was_round = first.shape_p[:, SHAPES.index("round")], bases.shape[idx] == SHAPE_CODES["round"]
        maybe = np.flatnonzero(np.where(was_round, 1.0 - p_round, p_round) >= self.shape_recentre_p)
        # (Centred again: read from an end, an oval's size and shape are read short, less surely.)
        centred = np.column_stack([first.xy, top[:, 2]])
        if self.shape_reads > 1:  # (every base read again: each placed as its second read puts it)
            second = self.shape_reader.read(self.camera, frame, self._background_bgr, centred, nadir, rims)
            again = ShapeReading(*(a[maybe] for a in second))
        else:
            second = None
            again = self.shape_reader.read(self.camera, frame, self._background_bgr, centred[maybe], nadir, rims[maybe])
        listed, _ = self._roster_and_found(bases)
        changes = []
        for m, n in enumerate(maybe):
            # Round or not is the question (an oval and a rectangle of one size differ by
            # their corners, which the rim fits see and a 16 px/in crop hardly does: 16
            # tuning tables, 82 of 161 rectangles read as ovals); which of its side's
            # outlines a base read as not round is, its size and then the reader's odds say.
            read, k = (again, m) if self.shape_read_centred else (first, n)
            pr, long_mm = float(read.shape_p[k, SHAPES.index("round")]), float(read.size_in[k, 0]) * MM_PER_IN
            if (1.0 - pr if was_round[n] else pr) < self.shape_read_p:
                continue
            options = [o for si, o in listed if si == int(bases.side[idx[n]]) and (o[0] == "round") != was_round[n]
                       and abs(max(o[1], o[2]) - long_mm) <= self.shape_read_size_mm]
            if options:
                best = min(options, key=lambda o: (abs(max(o[1], o[2]) - long_mm), -read.shape_p[k, SHAPES.index(o[0])]))
                changes.append((m, idx[n], best))
        self._shapes_weighed(bases, idx, first, {i for _, i, _ in changes}, second)
        if not changes:
            return bases
        drop = np.zeros(len(bases), bool)
        for m, i, (shape, w, d) in changes:
            if drop[i]:
                continue
            others = np.flatnonzero((bases.kind == KIND_BASE) & (np.arange(len(bases)) != i) & ~drop)
            inside = others[[depth_inside(*bases.xyz[o, :2], shape, max(w, d) / MM_PER_IN, min(w, d) / MM_PER_IN,
                                          *again.xy[m], float(again.angle_deg[m])) > 0 for o in others]] \
                if shape != "round" else others[:0]
            if np.any((bases.side[inside] != bases.side[i]) | (bases.shape[inside] != SHAPE_CODES["round"])):
                continue  # (another side's base there, or an outline: the reader may have read that one)
            drop[inside] = True
            self._made_shape(bases, i, (shape, w, d), again.xy[m], float(again.angle_deg[m]))
        return bases[~drop] if drop.any() else bases

    def _made_shape(self, bases: Detections, i: int, outline: tuple, xy: np.ndarray, angle_deg: float) -> None:
        """Base ``i`` made the ``outline`` (shape, width mm, depth mm) the shape reader
        read, placed and turned as it read it, its sigma at least ``SHAPE_READ_SIGMA_IN``
        with the calibration's."""
        shape, w, d = outline
        bases.shape[i], bases.base_mm[i] = SHAPE_CODES[shape], w
        if len(bases.size_mm) == len(bases.kind):
            bases.size_mm[i] = (w, d)
        bases.xyz[i, :2] = xy
        bases.angle_deg[i] = angle_deg if shape != "round" else 0.0
        if len(bases.sigma_in) == len(bases.kind):
            calib = self.calibration_sigma(bases.xyz[i:i + 1], self.config.base_thickness_in)
            floor = SHAPE_READ_SIGMA_IN if calib is None else math.hypot(float(calib[0]), SHAPE_READ_SIGMA_IN)
            bases.sigma_in[i] = max(float(bases.sigma_in[i]), floor)

    def _ends_read_as_outline(self, frame: np.ndarray, bases: Detections) -> Detections:
        """Two round bases on one surface touching (their rims under ``ends_gap_in``
        apart, whatever their sides), the better scored's side lacking an oval or
        rectangle its roster lists: where the shape reader, reading between them with
        that side's rim colour and again where it puts the base, reads one such outline
        (``shape_read_p``, long size within ``shape_read_size_mm``) holding both centres,
        the two are its two ends (a miniature over an oval's middle leaves an arc of rim
        at each end, one often too faint to name its side): that base instead. The
        bases kept. (``_shapes_read`` reads each round alone, centred on an end.)"""
        nadir = self._reader_nadir(self.shape_reader) if self.read_ends and self._shaped and self.config.epic is None \
            else None
        rnd = np.flatnonzero((bases.kind == KIND_BASE) & (bases.shape == 0)) if nadir is not None else []
        if len(rnd) < 2:
            return bases
        lacking = [k for k in roster_short(*self._roster_and_found(bases)) if k[1][0] != "round"]
        xyz, r = bases.xyz[rnd], bases.base_mm[rnd] / MM_PER_IN / 2
        gap = np.hypot(*(xyz[:, None, :2] - xyz[None, :, :2]).transpose(2, 0, 1)) - r[:, None] - r[None, :]
        touching = np.triu((gap < self.ends_gap_in) & (np.abs(xyz[:, None, 2] - xyz[None, :, 2]) < ONE_HEIGHT_IN), 1)
        colour, drop = dict(self._rims_as_seen()), np.zeros(len(bases), bool)
        for a, b in zip(rnd[np.nonzero(touching)[0]], rnd[np.nonzero(touching)[1]]):
            i, j = (a, b) if bases.score[a] >= bases.score[b] else (b, a)
            outlines = [o for si, o in lacking if si == int(bases.side[i])]
            if drop[i] or drop[j] or not outlines:
                continue
            xy = bases.xyz[[i, j], :2]
            at = np.array([*xy.mean(axis=0), bases.xyz[i, 2] + self.config.base_thickness_in])
            rim = np.array([colour.get(int(bases.side[i]), (128,) * 3)], float)
            read = self.shape_reader.read(self.camera, frame, self._background_bgr, at[None], nadir, rim)
            read = self.shape_reader.read(self.camera, frame, self._background_bgr, np.array([[*read.xy[0], at[2]]]),
                                          nadir, rim)
            long_mm = float(read.size_in[0, 0]) * MM_PER_IN
            fits = [o for o in outlines if abs(max(o[1], o[2]) - long_mm) <= self.shape_read_size_mm
                    and read.shape_p[0, SHAPES.index(o[0])] >= self.shape_read_p]
            if not fits:
                continue
            shape, w, d = max(fits, key=lambda o: read.shape_p[0, SHAPES.index(o[0])])
            if min(depth_inside(*p, shape, max(w, d) / MM_PER_IN, min(w, d) / MM_PER_IN, *read.xy[0],
                                float(read.angle_deg[0])) for p in xy) <= 0:
                continue
            self._made_shape(bases, i, (shape, w, d), read.xy[0], float(read.angle_deg[0]))
            drop[j] = True
            lacking.remove((int(bases.side[i]), (shape, w, d)))
        return bases[~drop] if drop.any() else bases

    def _shapes_weighed(self, bases: Detections, idx: np.ndarray, read: ShapeReading, changed: set[int],
                        second: ShapeReading | None = None) -> None:
        """Bases (``idx``, read as ``read``) whose shape the shape reader left as the rules
        found it (not in ``changed``), placed and, ovals and rectangles, turned between
        their fit and the reading (``second``, read centred where ``read`` put each, where
        given), each weighed by its error (their stated sigma; ``SHAPE_READER_ERROR_IN``),
        where the first reading lies within ``shape_reach_in``.
        (A fit that saw its whole rim keeps its place; one from a crescent or a patch
        moves most of the way: 16 mixed tuning tables it never saw, ovals 0.087 -> 0.051
        in RMS and 4.7 -> 2.4 degrees, rectangles 0.066 -> 0.050 in and 7.3 -> 3.5
        degrees, rounds 0.074 -> 0.043 in. Read a second time, centred, within 0.75 in
        rather than 0.5: 13 such tables at 720p and 1080p, rectangles at 720p 0.127 ->
        0.075 in (a fit turned a quarter, 0.7 in off, read back), ovals at 720p 0.067 ->
        0.050 in, rounds 0.072 -> 0.063 in.)"""
        if not self.shape_weighed or len(bases.sigma_in) != len(bases.kind):
            return
        keep = np.array([i not in changed for i in idx], bool)
        near = np.hypot(*(read.xy - bases.xyz[idx, :2]).T) <= self.shape_reach_in
        sel = keep & near
        read = second if second is not None else read
        i = idx[sel]
        w = SHAPE_READER_ERROR_IN ** 2 / (SHAPE_READER_ERROR_IN ** 2 + np.square(bases.sigma_in[i]))
        bases.xyz[i, :2] = w[:, None] * bases.xyz[i, :2] + (1 - w[:, None]) * read.xy[sel]
        shaped = bases.shape[i] != SHAPE_CODES["round"]
        turn = wrap_turn(read.angle_deg[sel] - bases.angle_deg[i])
        bases.angle_deg[i[shaped]] = np.mod(bases.angle_deg[i[shaped]] + ((1 - w) * turn)[shaped], 180.0)
