"""From candidates to bases: which fits are kept.

In: every candidate fit of a look (round and shaped), ranked.
Out: ``Detections`` rows of bases that can stand together: on the table (and on a platform's
top), overlapping none kept, not explained away by a kept base's rim, held against each side's
roster (``_roster_short``, ``_roster_swap``); platform overhangs dropped.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import shapely.geometry

from ..base_shapes import SHAPE_CODES, SHAPE_NAMES, depth_inside, shape_polygon
from ..vision.rim_fit import _inside_rims
from ..world import MM_PER_IN
from .detections import KIND_BASE, Detections

if TYPE_CHECKING:
    from .detector import TableDetector


class _Placement:
    """The bases kept so far by TableDetector._bases_from_candidates: their rows, and
    their centres, radii and outlines to hold the next candidate against."""

    def __init__(self, det: "TableDetector", n: int):
        self.det = det
        self.rows: list[dict] = []
        self.kept_index: list[int] = []  # each kept base's index among the candidates
        self.kept: list[tuple[np.ndarray, float, Any]] = []
        # The kept bases' centres and radii as arrays too: a candidate is compared
        # (_overlap) only with those near enough to overlap it at all, and its outline
        # polygon is made only then or when it is kept (most candidates of a packed
        # Epic table are far from most kept stands; shapely costs ~0.3 ms a polygon).
        self.kept_xy = np.zeros((n, 2))
        self.kept_r = np.zeros(n)
        self.kept_rims: list[tuple[int, float, float, float]] = []  # round kept: view, col, row, radius (px)

    def add(self, k: int, c: dict) -> bool:
        """Keep candidate ``c`` (index ``k``) if it can stand: on the table, over no
        kept base, not explained away by one."""
        det = self.det
        code = c.get("shape", 0)
        if c["view"] < 0:
            view, z = det.floor, 0.0
        else:
            piece, view, _ = det.platform_views[c["view"]]
            z = piece.height_in
        xy = view.to_world(np.array([c["col"]]), np.array([c["row"]]))[0]
        W_in, D_in = det.config.table.play_area_in
        if not (0.0 <= xy[0] <= W_in and 0.0 <= xy[1] <= D_in):
            return False  # a fighter stands on the table: this is a hand's or the edge's outline
        if c["view"] >= 0 and not det._platform_tops[c["view"]].contains(shapely.geometry.Point(*xy)):
            return False  # (PLATFORM_TOP_MARGIN_IN: off the top it would fall)
        r_in = c["base_mm"] / MM_PER_IN / 2
        row = {"xyz": (xy[0], xy[1], z), "kind": KIND_BASE, "side": c["side"], "base_mm": c["base_mm"],
               "score": c["score"]}
        if code:
            row.update(shape=code, size_mm=c["size_mm"], angle_deg=float(-np.degrees(c["theta"])) % 180.0)
        if c.get("from_foreground", False):
            row["from_foreground"] = True
        if c.get("rivals", 0):
            row["rivals"] = c["rivals"]
        # Bases cannot overlap: two closer than their radii allow (less measurement
        # error) are one base, the better-fitted one. Oval and rectangular bases are
        # compared by their outlines: stands in base contact touch, they do not overlap.
        # _overlap is False for any pair at least r + kr apart (a margin of 1e-6
        # keeps this test from ever ruling out a pair _overlap would not).
        n = len(self.kept)
        d2 = ((self.kept_xy[:n] - xy) ** 2).sum(axis=1)
        near = np.flatnonzero(d2 < ((self.kept_r[:n] + r_in) * (1 + 1e-6)) ** 2).tolist()
        poly = None
        if code and near:
            poly = det._polygon(row, c, xy)
        if any(_overlap(xy, r_in, poly, *self.kept[j]) for j in near):
            return False
        if "edges" in c and det._explained_away(c, self.kept_rims):
            return False
        if code and poly is None:
            poly = det._polygon(row, c, xy)
        self.kept_xy[n], self.kept_r[n] = xy, r_in
        self.kept.append((xy, r_in, poly))
        if not code:
            self.kept_rims.append((c["view"], c["col"], c["row"], c["radius_px"]))
            if "edges" in c and len(c["edges"]):
                e = np.asarray(c["edges"], float).reshape(-1, 2)
                det._weak_edges[tuple(float(v) for v in row["xyz"])] = view.to_world(e[:, 0], e[:, 1])
        self.rows.append(row)
        self.kept_index.append(k)
        return True


def _groups(items: list, key: Callable) -> dict:
    """``items`` by ``key(item)``, in first-seen order."""
    out: dict = {}
    for it in items:
        out.setdefault(key(it), []).append(it)
    return out


def _overlap(xy: np.ndarray, r: float, poly: Any, kxy: np.ndarray, kr: float, kpoly: Any) -> bool:
    """Whether two fitted bases overlap more than measurement error allows: round ones
    by their centres' distance, any pair with an oval or rectangle by the overlap of
    their outlines (over 15 % of the smaller one)."""
    if poly is None and kpoly is None:
        return bool(np.linalg.norm(xy - kxy) < 0.95 * (r + kr))
    if np.linalg.norm(xy - kxy) >= r + kr:
        return False
    from shapely.geometry import Point

    a = poly if poly is not None else Point(*xy).buffer(r, 16)
    b = kpoly if kpoly is not None else Point(*kxy).buffer(kr, 16)
    return a.intersection(b).area > 0.15 * min(a.area, b.area)


class Placement:
    """Keeps the candidates that can be bases together (a mixin of ``TableDetector``)."""

    def _drop_platform_overhang(self, bases: Detections) -> Detections:
        """A fighter on a platform stands tall above it: its miniature projects beyond
        the platform's outline in the image, over the floor. A floor detection lying on
        such a fighter's image column (from its base up to 2.5 in above it) is that
        miniature, not another fighter."""
        high = bases[bases.xyz[:, 2] > 0]
        if not len(high) or not len(bases):
            return bases
        t = self.config.base_thickness_in
        floor_idx = np.flatnonzero(bases.xyz[:, 2] == 0)
        if not len(floor_idx):
            return bases
        fl = bases.xyz[floor_idx].copy()
        fl[:, 2] = t
        p = np.asarray(self.camera.project(fl), float)
        keep = np.ones(len(bases), bool)
        for c, mm in zip(high.xyz, high.base_mm):
            a = np.asarray(self.camera.project(np.array([[c[0], c[1], c[2] + t], [c[0], c[1], c[2] + 2.5]])), float)
            ab = a[1] - a[0]
            u = np.clip(((p - a[0]) @ ab) / max(ab @ ab, 1e-9), 0, 1)
            dist = np.linalg.norm(p - (a[0] + u[:, None] * ab), axis=1)
            r_px = mm / MM_PER_IN / 2 * self.px_per_in
            keep[floor_idx[dist < 1.5 * r_px]] = False
        return bases[keep]

    def _ranks(self, fits: list[dict]) -> np.ndarray:
        """The order in which fits claim their place: their score (or shape rank), except
        that a round rim lying inside a larger one of its side nearly as well seen (score
        at least ``inner_rim_share`` of its own) ranks just below it. A base's rim is its
        outermost edge: a smaller circle within it is its miniature's outline or part of
        its rim (a 50 mm base all but hidden by its monster fitted better as 40 mm)."""
        rank = np.array([c.get("rank", c["score"]) for c in fits], float)
        if not fits or self.inner_rim_share >= 1.0:
            return rank
        S = self.px_per_in
        rnd = np.array([not c.get("shape", 0) for c in fits])
        side = np.array([c["side"] for c in fits])
        view = np.array([c["view"] for c in fits])
        mm = np.array([c["base_mm"] for c in fits], float)
        score = np.array([c["score"] for c in fits], float)
        xy = np.array([(c["col"], c["row"]) for c in fits], float)
        dist = np.linalg.norm(xy[:, None] - xy[None], axis=2)
        gap = (mm[None, :] - mm[:, None]) / MM_PER_IN / 2 * S  # [inner, outer]
        rad = np.array([c.get("radius_px", 0.0) for c in fits], float)
        # A crescent taken at a size it did not fit by itself (_refine) sees as much of a
        # circle as that size allows, whatever the circle is: inside a larger rim it gives
        # way however much less of that rim is seen.
        yields = np.array([c.get("at_size", False) for c in fits])
        # So does a circle seen under ``inside_check_below`` with base more than table just
        # beyond it (``bare``, _bare_beyond): a blotch of a miniature painted in the rim's
        # colour closes one as readily as its rim does.
        bare = np.array([c.get("bare", 1.0) for c in fits], float)
        yields |= (score < self.inside_check_below) & (bare < self.inside_gives_way_bare)
        # For such a circle the larger rim need only be seen as much as a base of its size
        # must be to stand at all (_min_score): a 60 mm base under a miniature of its rim's
        # colour shows less of its rim than a circle in the miniature does. (Not for any
        # circle: under heavy JPEG a red 32 mm base's crescent closes circles of 40 and
        # 50 mm on it too, each seen nearly as well as the last.)
        least = np.where(yields[:, None], self._min_score(mm)[None, :], self.min_coverage)
        # Inside: within the outer circle (give or take inner_rim_margin_in), and a circle
        # truly larger by half the sizes' gap at least. Two fits of one and the same circle
        # (radii a pixel apart, either side of the line between two sizes under noise)
        # are not a rim and its miniature: the better-seen one stands.
        outer = (rnd[:, None] & rnd[None, :] & (side[:, None] == side[None, :]) & (view[:, None] == view[None, :])
                 & (mm[None, :] > mm[:, None]) & (score[None, :] >= least)
                 & (dist <= gap + self.inner_rim_margin_in * S) & (rad[None, :] - rad[:, None] >= 0.5 * gap)
                 & ((score[None, :] >= self.inner_rim_share * score[:, None]) | yields[:, None]))
        below = np.where(outer, rank[None, :] - 1e-6, np.inf).min(axis=1)
        return np.minimum(rank, below)

    def _bases_from_candidates(self, fits: list[dict], roster: bool = False) -> Detections:
        """Non-maximum suppression across sides and sizes: bases never overlap, so of
        candidates closer than their radii allow, only the best-scoring stands.
        ``roster``: the look is of the whole table, so each side's round bases found are
        held against the ones its roster lists (_roster_swap, _roster_short)."""
        ranks = self._exclusive_ranks(fits, self._ranks(fits))
        fits = [fits[k] for k in np.argsort(-ranks, kind="stable")]
        self._weak_edges = {}
        dropped: set[int] = set()
        placed = self._placed(fits, dropped)
        placed, dropped = self._unstraddled(fits, placed, dropped)
        while roster and self.roster_swap_share <= 1.0 and len(dropped) < 4:
            swap = self._roster_swap(fits, placed) or self._roster_swap_outline(fits, placed)
            if swap is None:
                break
            surplus, rival = swap
            again = self._placed(fits, dropped | {surplus})
            if rival not in again.kept_index and not (
                    fits[surplus].get("shape", 0) and self._nearly_seen(fits[rival]) and again.add(rival, fits[rival])):
                break  # (something else keeps the rival out: the surplus base stays)
            dropped.add(surplus)
            placed = again
        if roster and self.roster_relax < 1.0:
            short = self._roster_short(placed.rows)
            nearly = [k for k, c in enumerate(fits) if short.get((c["side"], float(c["base_mm"])), 0) > 0
                      and k not in dropped and self._nearly_seen(c)]
            for k in self._outermost(fits, nearly, [k for k, c in enumerate(fits) if not c.get("shape", 0)]):
                key = (fits[k]["side"], float(fits[k]["base_mm"]))
                if short[key] > 0 and placed.add(k, fits[k]):
                    short[key] -= 1
        dets = Detections.from_rows(placed.rows)
        self._add_sigma(dets, lift=self.config.base_thickness_in)
        return dets

    def _unstraddled(self, fits: list[dict], placed: "_Placement", dropped: set[int]) -> tuple["_Placement", set[int]]:
        """Kept outlines (stands, ovals, rectangles) that keep out two candidates of their
        side and outline, one each way along their length, each seen at least
        ``straddle_share`` as well: the two stand, not the one (and the placement and
        the dropped candidates so changed). Bases never overlap, so an outline fitted
        across the join of two stands in a file, on half of each one's rim, keeps out
        both; the two, each on a stand's whole rim, explain more of what is seen."""
        if self.straddle_share > 1.0:
            return placed, dropped
        S = self.px_per_in
        for k in list(placed.kept_index):
            c = fits[k]
            if not c.get("shape", 0) or k not in placed.kept_index:
                continue
            axis = np.array([np.cos(c["theta"]), np.sin(c["theta"])])
            length, depth = (mm / MM_PER_IN * S for mm in c["size_mm"])
            kept, ends = set(placed.kept_index), ([], [])
            for j, o in enumerate(fits):
                if j in kept or j in dropped or o.get("shape", 0) != c["shape"] or o["side"] != c["side"] \
                        or o["view"] != c["view"] or tuple(o["size_mm"]) != tuple(c["size_mm"]) \
                        or o["score"] < self.straddle_share * c["score"]:
                    continue
                d = np.array([o["col"] - c["col"], o["row"] - c["row"]])
                along = float(d @ axis)
                if 0.0 < abs(along) < length and abs(float(d[0] * axis[1] - d[1] * axis[0])) < depth / 2:
                    ends[along > 0].append(j)
            if not (ends[0] and ends[1]):
                continue
            again = self._placed(fits, dropped | {k})
            if all(any(j in again.kept_index for j in end) for end in ends):
                placed, dropped = again, dropped | {k}
        return placed, dropped

    def _placed(self, fits: list[dict], dropped: set[int]) -> "_Placement":
        """The candidates ``fits`` (best first) that stand as bases, but for ``dropped``."""
        placed = _Placement(self, len(fits))
        for k, c in enumerate(fits):
            if k not in dropped and c["score"] >= (self.min_coverage if c.get("shape", 0) or c.get("from_foreground")
                                                   else self._min_score(c["base_mm"])):
                placed.add(k, c)
        return placed

    def _roster_short(self, rows: list[dict]) -> dict[tuple[int, float], int]:
        """(side, round base size) -> how many more of it the roster lists than ``rows``
        hold (negative: more found than listed)."""
        short: dict[tuple[int, float], int] = {}
        for s in self.config.sides:
            for mm in s.bases_mm:
                short[(s.index, float(mm))] = short.get((s.index, float(mm)), 0) + 1
        for r in rows:
            if not r.get("shape", 0):
                key = (r["side"], float(r["base_mm"]))
                short[key] = short.get(key, 0) - 1
        return short

    def _roster_swap(self, fits: list[dict], placed: "_Placement") -> tuple[int, int] | None:
        """A kept round base of a size its side has too many of, overlapped by a rim of
        a size the side is short of that is seen well enough to stand on its own and
        nearly as well (``roster_swap_share`` of its score): (the kept one, the rival),
        their indices in ``fits``, or None. A side fields the bases its roster lists: a
        pale miniature's top closes a 32 mm circle beside the 40 mm base it stands on,
        seen as well as that base's thin crescent."""
        short = self._roster_short(placed.rows)
        if not any(n > 0 for n in short.values()) or not any(n < 0 for n in short.values()):
            return None
        S = self.px_per_in
        kept = set(placed.kept_index)
        surplus = [k for k in placed.kept_index if not fits[k].get("shape", 0)
                   and short.get((fits[k]["side"], float(fits[k]["base_mm"])), 0) < 0]
        best, pick = 0.0, None
        for j, c in enumerate(fits):
            if c.get("shape", 0) or j in kept or short.get((c["side"], float(c["base_mm"])), 0) <= 0 \
                    or c["score"] < self._min_score(c["base_mm"]):
                continue
            for k in surplus:
                o = fits[k]
                if o["side"] != c["side"] or o["view"] != c["view"]:
                    continue
                reach = (o["base_mm"] + c["base_mm"]) / MM_PER_IN / 2 * S
                share = c["score"] / o["score"]
                if share >= self.roster_swap_share and share > best \
                        and np.hypot(o["col"] - c["col"], o["row"] - c["row"]) < reach:
                    best, pick = share, (k, j)
        return pick

    def _roster_swap_outline(self, fits: list[dict], placed: "_Placement") -> tuple[int, int] | None:
        """A kept oval or rectangle of an outline its side has more of than its roster
        lists, holding a round rim of a size the side is short of, seen at least nearly
        as well as a base must be (``roster_relax``, _nearly_seen): (the kept outline, the
        round), their indices in ``fits``, the pair whose round is seen best against its
        outline; or None. Of a side's two ovals where its roster lists one, one is a
        round base's rim with its miniature's edge taken for the oval's (a cream figure
        over a 32 mm base: the oval scores 0.39, the base's own rim 0.16 where a base
        must show 0.18). Not for Epic units (their stands have their own count)."""
        if self.config.epic is not None or not any(s.shaped_roster for s in self.config.sides):
            return None
        def outline(c: dict) -> tuple:
            return c["side"], c["shape"], float(c["size_mm"][0]), float(c["size_mm"][1])

        listed = Counter((sd.index, SHAPE_CODES[b.shape], float(b.width_mm), float(b.depth_mm))
                         for sd in self.config.sides for b in sd.shaped_roster)
        kept = set(placed.kept_index)
        outlines = [k for k in placed.kept_index if fits[k].get("shape", 0)]
        counts = Counter(outline(fits[k]) for k in outlines)
        surplus = [k for k in outlines if counts[outline(fits[k])] > listed[outline(fits[k])]]
        if not surplus:
            return None
        short = self._roster_short(placed.rows)
        S = self.px_per_in
        best, pick = 0.0, None
        for j, c in enumerate(fits):
            if c.get("shape", 0) or j in kept or short.get((c["side"], float(c["base_mm"])), 0) <= 0 \
                    or not (self._nearly_seen(c) or c["score"] >= self._min_score(c["base_mm"])):
                continue
            for k in surplus:
                o = fits[k]
                if o["side"] != c["side"] or o["view"] != c["view"] or depth_inside(
                        c["col"], c["row"], SHAPE_NAMES[o["shape"]], o["size_mm"][0] / MM_PER_IN * S,
                        o["size_mm"][1] / MM_PER_IN * S, o["col"], o["row"], float(np.degrees(o["theta"]))) <= 0:
                    continue
                if c["score"] / o["score"] > best:
                    best, pick = c["score"] / o["score"], (k, j)
        return pick

    def _outermost(self, fits: list[dict], ks: list[int], rivals: list[int]) -> list[int]:
        """``ks`` (indices in ``fits``, best first) but for the round rims whose centre
        lies within a larger round rim of ``rivals``, of their side, seen nearly as well
        (``inner_rim_share``, as in _ranks): bases do not overlap, so at most one of the
        two is a base, and a base's rim is its outermost edge. (With a roster short of
        both, a red 40 mm base's crescent lost to a 32 mm circle across it, 0.58 in off.)"""
        S = self.px_per_in
        out = []
        for k in ks:
            c = fits[k]
            if not any(o["side"] == c["side"] and o["view"] == c["view"] and o["base_mm"] > c["base_mm"]
                       and o["score"] >= self.inner_rim_share * c["score"]
                       and np.hypot(o["col"] - c["col"], o["row"] - c["row"]) < o["base_mm"] / MM_PER_IN / 2 * S
                       for o in (fits[j] for j in rivals)):
                out.append(k)
        return out

    def _nearly_seen(self, c: dict) -> bool:
        """A round rim a little short of what a base must show (``roster_relax`` of
        _min_score at least) whose own circle is its size's (``roster_radius_px``): for a
        side short of bases of that size (_bases_from_candidates), likelier that base
        than a blotch."""
        if c.get("shape", 0):
            return False
        least = self._min_score(c["base_mm"])
        return bool(self.roster_relax * least <= c["score"] < least
                    and abs(c["radius_px"] - self._edge_radius(c["side"], c["base_mm"])) <= self.roster_radius_px)

    def _exclusive_ranks(self, fits: list[dict], rank: np.ndarray) -> np.ndarray:
        """Of two poorly seen round rims of different sides that overlap (bases do not:
        one of them is no base), the one seeing more of its circle outside the other's
        claims its place first. A rim's edge points inside another's disc cannot be seen
        if that other is a base, so what tells them apart is what each sees on its own.
        (Under JPEG a green 32 mm base's crescent, 24 % of its circle, lost to a 25 mm
        circle in its red miniature's robe, 28 %, half of it along the green rim.)"""
        weak = [k for k, c in enumerate(fits) if "edges" in c and len(c["edges"])]
        if len(weak) < 2:
            return rank
        S = self.px_per_in
        xy = np.array([(fits[k]["col"], fits[k]["row"]) for k in weak], float)
        r = np.array([fits[k]["base_mm"] / MM_PER_IN / 2 * S for k in weak])
        side = np.array([fits[k]["side"] for k in weak])
        view = np.array([fits[k]["view"] for k in weak])
        dist = np.linalg.norm(xy[:, None] - xy[None], axis=2)
        clash = ((dist < 0.95 * (r[:, None] + r[None, :])) & (side[:, None] != side[None, :])
                 & (view[:, None] == view[None, :]))
        rank = rank.copy()
        for a, b in zip(*np.nonzero(np.triu(clash))):
            ka, kb = weak[a], weak[b]
            own = []
            for k, o in ((ka, kb), (kb, ka)):
                other = [(fits[o]["col"], fits[o]["row"], fits[o]["radius_px"])]
                own.append(fits[k]["score"] * (1.0 - _inside_rims(fits[k]["edges"], other, self.explained_margin_px).mean()))
            first, second = (ka, kb) if own[0] >= own[1] else (kb, ka)
            if rank[first] <= rank[second] and max(own) >= self._min_score(fits[first]["base_mm"]):
                rank[first] = rank[second] + 1e-6
        return rank

    def _explained_away(self, c: dict, kept_rims: list[tuple[int, float, float, float]]) -> bool:
        """Whether a poorly seen round rim stands only on evidence a better-seen base
        explains: its edge points (``c["edges"]``) on or inside a kept round base's rim,
        taken away, leave less of its circle than its size needs (_min_score). Bases do
        not overlap, so what lies on another's rim is that base's (a white 25 mm circle
        closed by a white base's rim and its miniature's spear beside it)."""
        pts = c["edges"]
        if not len(pts):
            return False
        mine = _inside_rims(pts, [(col, row, rad) for view, col, row, rad in kept_rims if view == c["view"]],
                            self.explained_margin_px)
        return bool(mine.any() and c["score"] * (1.0 - mine.mean()) < self._min_score(c["base_mm"]))

    @staticmethod
    def _polygon(row: dict, c: dict, xy: np.ndarray) -> Any:
        """An oval or rectangular fit's outline in world inches (_bases_from_candidates)."""
        return shape_polygon("oval" if row["shape"] == 1 else "rect", c["size_mm"][0] / MM_PER_IN,
                             c["size_mm"][1] / MM_PER_IN, xy[0], xy[1], row["angle_deg"])
