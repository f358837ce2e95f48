"""The learned readers of Epic stands: a stand turned a quarter across two made those two
(``_quarters_read``, ``vision.stand_refiner.QuarterReader``), and every stand placed and turned
where the stand refiner reads it (``_stands_refined``, ``vision.stand_refiner.StandRefiner``).

In: the frame as the camera gave it, the bases found (Epic games only).
Out: the bases with such stands replaced by the two they lie across; every stand moved and
turned toward the refiner's reading, weighed by each place's error (in place).
"""

from __future__ import annotations

import numpy as np

from ..base_shapes import SHAPE_CODES
from ..vision.stand_refiner import stand_axes, wrap_turn
from ..world import MM_PER_IN
from .detections import KIND_BASE, Detections

# The learned stand refiner's error per stand: its validation RMS (see _stands_refined).
STAND_REFINER_ERROR_IN = 0.04
# The sigma of two stands made from one read as turned a quarter across them (_quarters_read):
# the stand refiner's reach is their placing.
QUARTER_SIGMA_IN = 0.1


def _stand_cover(bases: Detections, xy: np.ndarray, angle_deg: float, hx: float, hy: float) -> np.ndarray:
    """Per base, the share of a stand (half sizes ``hx``, ``hy`` in) at ``xy`` turned
    ``angle_deg`` that it covers: for rectangles turned within 20 degrees of it, the product
    of their overlaps along and across; 0 for other bases."""
    along, across = stand_axes(angle_deg)
    d = bases.xyz[:, :2] - xy
    share = np.clip(1 - np.abs(d @ along) / (2 * hx), 0, 1) * np.clip(1 - np.abs(d @ across) / (2 * hy), 0, 1)
    alike = (bases.kind == KIND_BASE) & (bases.shape == SHAPE_CODES["rect"]) \
        & (np.abs(wrap_turn(bases.angle_deg - angle_deg)) <= 20.0)
    return np.where(alike, share, 0.0)


class LearnedStands:
    """The learned stand readers (a mixin of ``TableDetector``; the readers' nadir and the
    rims as seen come from ``LearnedReads``)."""

    def _stands_to_read(self, bases: Detections, reader: object | None) -> tuple:
        """What a stand reader is given: the stands' indices, the point under the camera
        (None, and the rest too: no Epic game, no ``reader``, or no stand to read), the
        stands' tops' places, and each one's side's rim colour as seen."""
        nadir = self._reader_nadir(reader) if self.config.epic is not None else None
        idx = np.flatnonzero((bases.kind == KIND_BASE) & (bases.shape == SHAPE_CODES["rect"]))
        if nadir is None or not len(idx):
            return idx, None, None, None
        return (idx, nadir, *self._tops_and_rims(bases, idx))

    def _quarters_read(self, frame: np.ndarray, bases: Detections) -> Detections:
        """Epic stands the learned quarter-turn reader (``vision.stand_refiner.QuarterReader``,
        the frame as the camera gave it) reads, ``quarter_p`` sure or more, as lying turned
        a quarter across two stands side by side, made those two: the square's centre lies
        a half depth to the side it reads, the two stands a half depth either way of it
        along the stand read, turned a quarter from it; every stand of that side centred
        within a depth of the square and turned as the one read (its partner, placed the same
        wrong way, or read twice) goes. Their sigma at least ``QUARTER_SIGMA_IN``; the stand
        refiner then places them. (Two stands side by side make a square that the same two
        turned a quarter tile as well; at 720p the rims' line between them, which
        ``vision.stands.retile`` reads, is a pixel wide; the miniatures, in a row along
        each stand, show the way.)"""
        idx, nadir, top, rims = self._stands_to_read(bases, self.quarter_reader if self.read_quarters else None)
        if nadir is None:
            return bases
        p = self.quarter_reader.read(self.camera, frame, self._background_bgr, top, bases.angle_deg[idx], nadir, rims)
        read = np.flatnonzero(p[:, 1] + p[:, 2] >= self.quarter_p)
        if not len(read):
            return bases
        drop = np.zeros(len(bases), bool)
        new = []
        for k in read:
            i = idx[k]
            if drop[i]:
                continue
            hx, hy = 0.5 * bases.size_mm[i] / MM_PER_IN
            along, across = stand_axes(bases.angle_deg[i])
            way = 1.0 if p[k, 1] >= p[k, 2] else -1.0
            square = bases.xyz[i, :2] + way * hy * across
            d = bases.xyz[:, :2] - square
            turn = np.abs(wrap_turn(bases.angle_deg - bases.angle_deg[i]))
            gone = (bases.kind == KIND_BASE) & (bases.shape == bases.shape[i]) & (bases.side == bases.side[i]) \
                & (np.hypot(*d.T) <= 2 * hy) & (turn <= 30.0) & ~drop
            drop |= gone
            turned = (bases.angle_deg[i] + 90.0) % 180.0
            for sign in (1.0, -1.0):
                at = square + sign * hy * along
                # Any stand of the side turned as this one that covers much of it is a
                # wrong fit of it (half on it, half beyond), or it, placed already.
                cover = _stand_cover(bases, at, turned, hx, hy) * (bases.side == bases.side[i]) * ~drop
                if (cover >= 0.75).any():
                    continue
                drop |= cover >= 0.4
                row = bases[np.array([i])]
                row.xyz[0, :2] = at
                row.angle_deg[0] = turned
                row.sigma_in[0] = max(float(row.sigma_in[0]), QUARTER_SIGMA_IN)
                new.append(row)
        return Detections.merge([bases[~drop], *new])

    def _stands_refined(self, frame: np.ndarray, bases: Detections) -> None:
        """Epic stands placed again, in place, where the learned stand refiner
        (``vision.stand_refiner``, reading the frame as the camera gave it) puts them and
        turns them, where it moves them at most ``stand_reach_in`` and turns them at most
        ``stand_turn_reach_deg``; between its place and theirs, each weighed by its error
        (their stated sigma; ``STAND_REFINER_ERROR_IN``)."""
        idx, nadir, top, rims = self._stands_to_read(bases, self.stand_refiner)
        if nadir is None:
            return
        xy, angle = self.stand_refiner.read(self.camera, frame, self._background_bgr, top, bases.angle_deg[idx], nadir,
                                            rims)
        turn = wrap_turn(angle - bases.angle_deg[idx])
        ok = (np.hypot(*(xy - bases.xyz[idx, :2]).T) <= self.stand_reach_in) & (np.abs(turn) <= self.stand_turn_reach_deg)
        moved = idx[ok]
        w = np.zeros(len(moved))
        if len(bases.sigma_in) == len(bases.kind) and self.stand_weighed:
            w = STAND_REFINER_ERROR_IN ** 2 / (STAND_REFINER_ERROR_IN ** 2 + np.square(bases.sigma_in[moved]))
        bases.xyz[moved, :2] = w[:, None] * bases.xyz[moved, :2] + (1 - w[:, None]) * xy[ok]
        bases.angle_deg[moved] = np.mod(bases.angle_deg[moved] + (1 - w) * turn[ok], 180.0)
