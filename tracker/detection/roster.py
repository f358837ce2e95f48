"""The rosters as priors: what each side fields against what was found.

In: the bases found and the config's rosters (``bases_mm`` / ``bases``; Epic units).
Out: the outlines each side still lacks (``_outlines_short``), bases beyond a side's roster
(``_beyond_roster``: rivals, not deletions; on Epic tables the least seen beyond the units'
stands dropped: ``_within_epic_roster``; stands its units lack placed by refused rim fits:
``_stands_units_lack``, or in the gaps of a stand's size between two of a file or a rank:
``_stands_in_gaps``), and round fits that are an oval or rectangle the roster lacks seen in
part (``_rounds_as_outline``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import shapely.geometry

from ..base_shapes import SHAPE_CODES, SHAPE_NAMES, depth_inside, shape_polygon
from ..vision.files import gap_slots
from ..vision.pursuit import roster_short
from ..vision.stands import Outline
from ..world import MM_PER_IN
from .detections import KIND_BASE, Detections
from .table_views import PURSUED_SIGMA_PX


def units_stands_per_side(config: Any) -> dict[int, int]:
    """Side -> how many stands its Epic units list in all (0 for a side with none)."""
    return {s.index: sum(u.stands for u in config.epic.units if u.side == s.index) for s in config.sides}


class Roster:
    """Holds what was found against the rosters (a mixin of ``TableDetector``)."""

    def _within_epic_roster(self, bases: Detections) -> tuple[np.ndarray, np.ndarray]:
        """Where a side has more stands found than its units have in all (the game's
        ``epic`` section; units lose stands in play, never gain them: a ceiling, not a
        target), those beyond it least like a stand: as many as the other sides together
        lack may be theirs, read as this side's (a purple unit under warm light read as
        red), and are kept with those sides as rivals (``Detections.rivals``); the rest
        are dropped. Least like a stand: least of its inside not the table (a stand holds
        figures; an outline fitted across the gap between two of a loose unit's borrows
        their rims and holds bare table), then least of its rim seen. Returns (which to
        keep, rival bits). (By the rim's score alone, a stand found only as foreground,
        scored the least any stand may be, went before such an outline: 48 Epic tuning
        tables, 2 frames each, over the ceiling: 12 stands dropped and 13 outlines in
        gaps kept; by the inside, none and 1.)"""
        keep = np.ones(len(bases), bool)
        rivals = np.zeros(len(bases), np.int64)
        stands = bases.kind == KIND_BASE
        most = units_stands_per_side(self.config)
        found = {si: int((stands & (bases.side == si)).sum()) for si in most}
        for si, n in most.items():
            mine = np.flatnonzero(stands & (bases.side == si))
            if not n or len(mine) <= n:
                continue
            lacking = {o: most[o] - found[o] for o in most if o != si and most[o] > found[o]}
            held = np.array([self._holds_figures_at(bases, i) for i in mine])
            extra = mine[np.lexsort((bases.score[mine], held))[:len(mine) - n]][::-1]  # (likest a stand first)
            maybe_theirs = min(len(extra), sum(lacking.values()))
            keep[extra[maybe_theirs:]] = False
            for o in lacking:
                rivals[extra[:maybe_theirs]] |= 1 << o
        return keep, rivals

    def _stands_units_lack(self, found: Detections) -> Detections:
        """Stands whose rim fit was refused for the little rim it saw (a pixel wide at
        720p, ``_refused_shapes``) where their side's units list more stands than were
        found: such a fit whose score is at least ``unit_relax_score``, whose inside holds
        figures (``_inside_held`` at least ``outline_filled``: not an outline in the gap
        between two stands), within ``unit_reach_in`` of a stand of its side (a unit's
        stands keep together) and overlapping nothing found (``found``: bases and
        tokens), best seen first, while the side is still short. As the roster's rounds
        nearly seen are (``roster_relax``): the count says a stand is missing, the
        picture where."""
        if self.unit_relax_score > 1.0 or not self._refused_shapes:
            return Detections()
        stands = found.kind == KIND_BASE
        short = self._units_short(found)
        mine = {si: found.xyz[stands & (found.side == si), :2] for si in short}
        polys = self._outlines_on_table(found)
        rows = []
        for f in sorted(self._refused_shapes, key=lambda f: -f["score"]):
            si = f["side"]
            if short.get(si, 0) <= 0 or f["score"] < self.unit_relax_score:
                continue
            view, z = self._view_and_height(f["view"])
            xy = view.to_world(np.array([f["col"]]), np.array([f["row"]]))[0]
            angle = float(-np.degrees(f["theta"])) % 180.0
            poly = shape_polygon(SHAPE_NAMES[f["shape"]], *(np.array(f["size_mm"]) / MM_PER_IN), *xy, angle)
            if any(poly.intersection(q).area > 0.05 * poly.area for q in polys) or not (
                    np.hypot(*(mine[si] - xy).T) <= self.unit_reach_in).any():
                continue
            if self._inside_held(f["view"], SHAPE_NAMES[f["shape"]], tuple(f["size_mm"]), f["theta"], f["col"],
                                 f["row"]) < self.outline_filled:
                continue
            polys.append(poly)
            short[si] -= 1
            rows.append({"xyz": (float(xy[0]), float(xy[1]), z), "kind": KIND_BASE, "side": si,
                         "base_mm": float(f["size_mm"][0]), "score": float(f["score"]), "shape": f["shape"],
                         "size_mm": tuple(f["size_mm"]), "angle_deg": angle})
        named = Detections.from_rows(rows)
        self._add_sigma(named, lift=self.config.base_thickness_in)
        if len(named) and len(named.sigma_in):
            # (placed by a faint rim: as honest as a stand placed by its patch)
            named.sigma_in = np.hypot(named.sigma_in, PURSUED_SIGMA_PX / self.px_per_in)
        return named

    def _lone_stand_rivals(self, bases: Detections) -> np.ndarray:
        """Rival bits (``Detections.rivals``) for Epic stands with no stand of their side
        within ``unit_reach_in`` (a unit keeps within it) and one of another side within
        it: that side's, whose unit it may be, read as this one's by its rim. A unit's
        stands stand together, so a lone stand beside another side's unit is likelier a
        stand of that unit misread than an enemy in contact: its side is unsure, not
        changed (the rims decide sides; the units only doubt them). (48 Epic tuning
        tables: 27 of 44 stands read as the wrong side were such, and 15 of 10,336 read
        right.)"""
        out = np.zeros(len(bases), np.int64)
        stands = np.flatnonzero((bases.kind == KIND_BASE) & (bases.shape == SHAPE_CODES["rect"]))
        if len(stands) < 2:
            return out
        xy = bases.xyz[stands, :2]
        near = np.hypot(*(xy[:, None] - xy[None]).transpose(2, 0, 1)) <= self.unit_reach_in
        np.fill_diagonal(near, False)
        side = bases.side[stands]
        same = side[:, None] == side[None]
        for k in np.flatnonzero(~(near & same).any(axis=1) & (near & ~same).any(axis=1)):
            for o in set(side[near[k] & ~same[k]].tolist()):
                out[stands[k]] |= 1 << int(o)
        return out

    def _units_short(self, found: Detections) -> dict[int, int]:
        """Side -> how many more stands its Epic units list than ``found`` holds."""
        stands = found.kind == KIND_BASE
        return {si: n - int((stands & (found.side == si)).sum()) for si, n in units_stands_per_side(self.config).items()}

    @staticmethod
    def _outlines_on_table(found: Detections) -> list[Any]:
        """Each of ``found``'s footprint on the table (world inches): a base's outline, a
        token's disc (half an inch round its centre)."""
        return [shape_polygon(SHAPE_NAMES[int(found.shape[i])], *(found.size_mm[i] / MM_PER_IN), *found.xyz[i, :2],
                              float(found.angle_deg[i])) if found.kind[i] == KIND_BASE else
                shapely.geometry.Point(*found.xyz[i, :2]).buffer(0.5) for i in range(len(found))]

    def _stands_in_gaps(self, found: Detections) -> Detections:
        """Stands missing from a file or a rank between two found (``vision.files.gap_slots``:
        a gap of one or up to ``gap_stands_most`` stands' length between two stands of
        one side and size turned alike, in line), where their side's units list more
        stands than were found: each gap's stand whose inside holds figures
        (``_inside_held`` at least ``outline_filled``: a unit's spacing leaves bare table)
        and overlapping nothing found (``found``: bases and tokens), fullest first, while
        the side is short. Placed without a rim of its own (a green rim on a green mat at
        720p shows none): its place is its neighbours', and its sigma a stand's placed by
        its patch. (48 Epic tuning tables: 79 of 121 stands missed lay in line between
        two of their side.)"""
        if self.gap_stands_most <= 0:
            return Detections()
        short = self._units_short(found)
        rect = (found.kind == KIND_BASE) & (found.shape == SHAPE_CODES["rect"])
        cands = []
        for si, w, d, z in sorted({(int(found.side[i]), *map(float, found.size_mm[i]), round(float(found.xyz[i, 2]), 1))
                                   for i in np.flatnonzero(rect)}):
            if short.get(si, 0) <= 0:
                continue
            idx = np.flatnonzero(rect & (found.side == si) & (found.size_mm[:, 0] == w) & (found.size_mm[:, 1] == d)
                                 & (np.abs(found.xyz[:, 2] - z) < 0.05))
            for xy, theta in gap_slots(found.xyz[idx, :2], np.radians(found.angle_deg[idx]), w / MM_PER_IN / 2,
                                       d / MM_PER_IN / 2, self.gap_stands_most):
                k, view = self._view_at(float(xy[0]), float(xy[1]), z)
                if view is None:
                    continue
                col, row = np.asarray(view.to_pixel(xy[None])).reshape(-1)[:2]
                held = self._inside_held(k, "rect", (w, d), -theta, col, row)
                if held >= self.outline_filled:
                    cands.append((held, si, xy, z, float(np.degrees(theta)) % 180.0, w, d))
        polys = self._outlines_on_table(found)
        rows = []
        for held, si, xy, z, angle, w, d in sorted(cands, key=lambda c: -c[0]):
            poly = shape_polygon("rect", w / MM_PER_IN, d / MM_PER_IN, *xy, angle)
            if short[si] <= 0 or any(poly.intersection(q).area > self.gap_overlap * poly.area for q in polys):
                continue
            polys.append(poly)
            short[si] -= 1
            rows.append({"xyz": (float(xy[0]), float(xy[1]), z), "kind": KIND_BASE, "side": si, "base_mm": w,
                         "score": self.min_coverage, "shape": SHAPE_CODES["rect"], "size_mm": (w, d),
                         "angle_deg": angle, "from_foreground": True})
        named = Detections.from_rows(rows)
        self._add_sigma(named, lift=self.config.base_thickness_in)
        return named

    def _holds_figures_at(self, bases: Detections, i: int) -> float:
        """How much of stand ``i``'s inside is not the table (``_inside_held``, in the view
        of the floor or the platform it stands on; 1 where no view says)."""
        x, y, z = map(float, bases.xyz[i])
        k, view = self._view_at(x, y, z)
        if view is None:
            return 1.0
        col, row = np.asarray(view.to_pixel(np.array([[x, y]]))).reshape(-1)[:2]
        return self._inside_held(k, SHAPE_NAMES[int(bases.shape[i])], tuple(bases.size_mm[i]),
                                 -np.radians(float(bases.angle_deg[i])), col, row)

    def _beyond_roster(self, bases: Detections) -> np.ndarray:
        """Rival bits (``Detections.rivals``) for bases a side has more of, of one outline
        (round, oval or rectangular, and size), than its roster lists, where another side
        lists more bases than were found (of that outline or another: a side is misread
        with the outline, a blue 40 mm base under a pale miniature read as a white 32 mm
        circle, a blue 90 x 52 mm oval as a white 60 x 35 mm one): the least seen of them
        beyond the roster may be that side's (a pale miniature filling a yellow 25 mm base
        up to its thin rim closes a white circle seen better than the yellow one). A side
        fields the bases its roster lists, so one of them is read wrong, and which the
        rims alone cannot say: its side is unsure. On 99 tuning tables, round bases: wrong control
        calls 47 -> 34, right ones flagged 178 -> 192 (same size only: 43 and 183); by
        outline, ovals and rectangles too: 32 -> 28 and 192 -> 199."""
        out = np.zeros(len(bases), np.int64)
        rostered = {s.index for s in self.config.sides if s.bases_mm or s.shaped_roster}
        if len(rostered) < 2:
            return out
        listed, seen = self._roster_and_found(bases)  # (seen: one per base, in order)
        rows = np.flatnonzero(bases.kind == KIND_BASE)
        short_sides = {si for si, _ in roster_short(listed, seen)}
        for (si, key), extra in roster_short(seen, listed).items():
            others = sorted(short_sides - {si})
            if si not in rostered or not others:
                continue
            mine = rows[[k for k, found in enumerate(seen) if found == (si, key)]]
            for i in mine[np.argsort(bases.score[mine], kind="stable")[:extra]]:
                out[i] |= sum(1 << o for o in others)
        return out

    def _suspect_rounds(self, found: Detections, short: dict) -> np.ndarray:
        """Which of ``found`` are round bases of a size their side has more of than its
        roster lists, where that side also lacks an oval or rectangle (``short``), fitted
        on under ``suspect_round_coverage`` of their rim: each may be that outline's end
        (_pursued_stands). (A circle lies along an oval's or rectangle's rim on its end
        alone, under half its own round: a round base seen more is a round base.)"""
        listed, seen = self._roster_and_found(found)
        beyond = roster_short(seen, listed)
        lacking = {si for si, k in short if k[0] != "round"}
        return np.array([k == KIND_BASE and not sh and int(si) in lacking and sc < self.suspect_round_coverage
                         and beyond.get((int(si), ("round", float(mm), float(mm))), 0) > 0
                         for si, mm, sh, k, sc in zip(found.side, found.base_mm, found.shape, found.kind, found.score)],
                        bool)

    def _suspects_in_view(self, found: Detections, suspect: np.ndarray, view: int) -> list[dict]:
        """The suspect round bases (``_suspect_rounds``) standing in ``view``: centre (view
        pixels), side and outline."""
        v, z = self._view_and_height(view)
        here = np.flatnonzero(suspect & (np.abs(found.xyz[:, 2] - z) < 0.05))
        S = self.px_per_in
        return [{"col": float(c), "row": float(r), "side": int(found.side[k]),
                 "outline": Outline("round", found.base_mm[k] / MM_PER_IN / 2 * S, found.base_mm[k] / MM_PER_IN / 2 * S)}
                for k, (c, r) in zip(here, v.to_pixel(found.xyz[here, :2]) if len(here) else [])]

    def _outlines_short(self, found: Detections) -> dict[tuple[int, tuple[str, float, float]], int]:
        """(side, outline (shape, width mm, depth mm)) -> how many more bases of it the
        side's roster lists than ``found`` holds, only those short: round bases of sides
        that list them one per fighter, oval and rectangular ones of sides that list
        theirs so (not Epic units: their stands have their own pursuit)."""
        return roster_short(*self._roster_and_found(found))

    def _unsure_within_short(self, cands: list[dict], short: dict, shapes: list[Outline],
                             keys: list[tuple[str, float, float]]) -> list[dict]:
        """``cands`` less the round bases given their side only as the one side short of
        their size (``rivals`` set: _pursued_outline) where more such patches than the
        side lacks were found: which of them is the fighter is not known (dice and damage
        counters beside the bases are such patches too), so each is a doubt of that side
        instead, for the learned refiner to name by what it sees (_doubts_read). The
        roster is a prior, never the only evidence of a fighter. (Ovals and rectangles
        keep theirs: no reader names their doubts yet.)"""
        def key(c: dict) -> tuple | None:  # (side, outline) of a round base the roster alone named
            return (c["side"], ("round", float(c["base_mm"]), float(c["base_mm"]))) \
                if c.get("rivals") and not c.get("shape") else None

        count = Counter(k for k in map(key, cands) if k is not None)
        over = {k for k, n in count.items() if n > short.get(k, 0)}
        if not over:
            return cands
        out = []
        for c in cands:
            if key(c) in over:
                self._doubt(c["col"], c["row"], shapes[keys.index(key(c)[1])], {c["side"]}, c["view"])  # (Patches)
            else:
                out.append(c)
        return out

    def _roster_and_found(self, found: Detections) -> tuple[list, list]:
        """(side, outline (shape, width mm, depth mm)) per base the sides' rosters list
        (ovals and rectangles not for Epic units), and per base ``found`` holds."""
        listed = [(s.index, ("round", float(mm), float(mm))) for s in self.config.sides for mm in s.bases_mm]
        if self.config.epic is None:
            listed += [(s.index, (b.shape, float(b.width_mm), float(b.depth_mm)))
                       for s in self.config.sides for b in s.shaped_roster]
        seen = [(int(si), ("round", float(mm), float(mm)) if not sh else (SHAPE_NAMES[int(sh)], float(w), float(d)))
                for si, mm, sh, (w, d), k in zip(found.side, found.base_mm, found.shape, found.size_mm, found.kind)
                if k == KIND_BASE]
        return listed, seen

    def _rounds_as_outline(self, fits: list[dict], found: Detections) -> list[dict] | None:
        """The fits again, where round bases a side has beyond its roster lie inside an
        oval or rectangle that side's roster lacks, fitted there at its size but refused
        (``_refused_shapes``: a miniature over one long side and an end leaves too little
        of its rim for _shape_fit_ok): that outline instead of every round fit of the side
        inside it, if none of them sees more of its rim than the outline does. One base
        explains the rim the roster cannot have two of (an oval's two ends read as two
        round bases). Round bases the roster has room for give way too where the outline
        sees ``outline_over_round`` times more of its rim than each (a 90 x 52 mm oval's
        end curves as a 30 mm circle: a round rim fits it, on a sliver). None when
        nothing changes."""
        listed, seen = self._roster_and_found(found)
        lacking, beyond = roster_short(listed, seen), roster_short(seen, listed)
        if not lacking or not beyond:
            return None
        out, changed = list(fits), False
        for c in sorted(self._refused_shapes, key=lambda c: -c["score"]):
            key = (c["side"], (SHAPE_NAMES[c["shape"]], float(c["size_mm"][0]), float(c["size_mm"][1])))
            if lacking.get(key, 0) <= 0:
                continue
            w, d = (v / MM_PER_IN * self.px_per_in for v in c["size_mm"])

            def inside(f: dict, c: dict = c, w: float = w, d: float = d) -> bool:  # (in view pixels)
                return depth_inside(f["col"], f["row"], SHAPE_NAMES[c["shape"]], w, d, c["col"], c["row"],
                                    float(np.degrees(c["theta"]))) > 0

            rounds = [f for f in out if not f.get("shape", 0) and f["side"] == c["side"] and f["view"] == c["view"]]
            kept = [k for k in range(len(found)) if found.kind[k] == KIND_BASE and not found.shape[k]
                    and found.side[k] == c["side"]]
            view, z = self._view_and_height(c["view"])
            px = view.to_pixel(found.xyz[kept, :2]) if kept else np.zeros((0, 2))
            held = [k for k, (col, row) in zip(kept, px)
                    if abs(found.xyz[k, 2] - z) < 0.05 and inside({"col": col, "row": row})]
            sizes = Counter(("round", float(found.base_mm[k]), float(found.base_mm[k])) for k in held)
            if not held:
                continue
            gone = [f for f in rounds if inside(f)]
            if any(f["score"] > c["score"] for f in gone):
                continue  # (a round base seen better than the outline's rim is: that base)
            if self._filled(c["view"], SHAPE_NAMES[c["shape"]], w / 2, d / 2, c["theta"], c["col"],
                            c["row"]) < self.outline_filled:
                # Its inside mostly bare table: no base under a miniature, but a round
                # base's rim borrowed by a longer outline.
                continue
            if any(n > beyond.get((c["side"], o), 0) for o, n in sizes.items()) and \
                    any(self.outline_over_round * f["score"] > c["score"] for f in gone):
                # A round base the roster has room for may be just that, unless the
                # outline's rim is seen far better (a 90 x 52 mm oval's end curves as a
                # 30 mm circle: a round rim fits it, seen on a sliver).
                continue
            out = [f for f in out if all(f is not g for g in gone)] + [c]
            lacking[key] -= 1
            for o, n in sizes.items():
                beyond[(c["side"], o)] = beyond.get((c["side"], o), 0) - n
            changed = True
        return out if changed else None

    def _units_stands(self) -> Counter:
        """(side, stand width mm, depth mm) -> how many stands the Epic units list."""
        listed: Counter = Counter()
        for u in self.config.epic.units:
            listed[(u.side, float(max(u.stand_mm)), float(min(u.stand_mm)))] += u.stands
        return listed

    def _roster_short_of_shaped(self, bases: Detections) -> bool:
        """Whether some side has fewer bases of one of its oval or rectangular sizes among
        ``bases`` than its roster lists: an Epic roster's units (stands of a size each),
        else the sides' bases listed one per fighter (a side listing only its sizes:
        always)."""
        epic = self.config.epic
        listed: Counter = Counter()
        if epic is not None and epic.units:
            listed = self._units_stands()
        else:
            sides = [s for s in self.config.sides if s.shaped]
            if any(not s.shaped_roster for s in sides):
                return True
            listed.update((s.index, float(b.width_mm), float(b.depth_mm)) for s in sides for b in s.shaped_roster)
        found = Counter((int(si), float(w), float(d)) for si, sh, (w, d) in
                        zip(bases.side, bases.shape, bases.size_mm) if sh)
        return any(found[key] < n for key, n in listed.items())
