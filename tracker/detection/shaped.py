"""Oval and rectangular bases (and Epic stands) by their oriented outline.

In: each side's rim-colour evidence; in a follow, windows round known stands.
Out: shaped fits (centre, angle, size, share of the outline seen) that pass the outline's
checks (``_shape_fit_ok``: rim along each long side, none through the middle, ends seen); a
followed stand's new place (``_follow_shape``).
"""

from __future__ import annotations

from typing import Any, Callable

import cv2
import numpy as np

from ..base_shapes import (
    SHAPE_CODES,
    SHAPE_NAMES,
    depth_inside,
    fit_shapes,
    outline_kernel,
    outline_samples,
    shape_polygon,
)
from ..vision.files import file_shift, files
from ..vision.filters import (
    _blob_boxes,
    _filter_many,
    _local_maxima,
    _nearest_peak_key,
    _subpixel_peaks,
)
from ..vision.views import PlaneView
from ..world import MM_PER_IN
from .detections import KIND_BASE, Detections
from .placement import _groups


class ShapedBases:
    """Finds and follows oval and rectangular bases (a mixin of ``TableDetector``)."""

    def _shape_kernel(self, spec: Any, theta: float, half: bool) -> np.ndarray:
        key = (spec, round(float(theta) % np.pi, 3), half)
        k = self._shape_kernels.get(key)
        if k is None:
            S = self.px_per_in / (2 if half else 1)
            rim_w = max(1.5, 0.09 * self.px_per_in)
            hx, hy = spec.width_mm / MM_PER_IN / 2 * S, spec.depth_mm / MM_PER_IN / 2 * S
            k = outline_kernel(spec.shape, hx, hy, float(theta), max(1.0, rim_w / 2) if half else rim_w)
            self._shape_kernels[key] = k
        return k

    def _find_shapes(self, evs: dict[tuple[int, int], np.ndarray]) -> list[dict]:
        """Candidates for the sides' oval and rectangular bases: the side's evidence
        correlated with the base's outline turned every 15 degrees (half a turn covers
        both shapes); the best angle at each peak seeds the fit. At full resolution: an
        Epic-scale stand is only some 25 x 13 pixels, its rim a pixel wide; at half
        resolution the outlines of touching stands blur into one. Only round the patches
        of the side's colour (rims are sparse), so the cost follows the stands, not the
        table."""
        out = []
        angles = np.arange(12) * (np.pi / 12)
        for (view, side), ev in evs.items():
            specs = [spec for si, spec in self._shaped if si == side]
            if not specs:
                continue
            stats = _blob_boxes(ev, 0.12)
            H, W = ev.shape
            for spec in specs:
                R = self._shape_kernel(spec, 0.0, False).shape[0] // 2 + 1
                hy = spec.depth_mm / MM_PER_IN / 2 * self.px_per_in
                for x0, y0, bw, bh, area in stats:
                    # Smaller than the base's depth every way: a fleck, not a rim. (One way
                    # is enough: a miniature over both ends of an oval parts its rim into
                    # two arcs, each as long as the base but thin.)
                    if max(bw, bh) < 1.5 * hy:
                        continue
                    r0, r1, c0, c1 = max(y0 - R, 0), min(y0 + bh + R, H), max(x0 - R, 0), min(x0 + bw + R, W)
                    crop = ev[r0:r1, c0:c1]
                    best = np.full(crop.shape, -1.0, np.float32)
                    arg = np.zeros(crop.shape, np.uint8)
                    resps = _filter_many(crop, [self._shape_kernel(spec, a, False) for a in angles],
                                         cv2.BORDER_CONSTANT, self._shape_spectra)
                    for i, resp in enumerate(resps):
                        # The first angle with the largest response wins. Angles come in
                        # increasing index, so "arg = i where better" is a running max of
                        # i over the pixels that improve: no masked writes (which cost
                        # more than the filter here).
                        better = cv2.compare(resp, best, cv2.CMP_GT)  # 255 where better
                        cv2.max(resp, best, dst=best)
                        np.maximum(arg, np.minimum(better, np.uint8(i)), out=arg)
                    rows, cols = _local_maxima(best, self.score_threshold, max(1, int(hy * 0.8)))
                    # All the blob's peaks' sub-pixel places at once (a call per peak cost
                    # more than the rest of the search).
                    prs, pcs = _subpixel_peaks(best, rows, cols)
                    for rr, cc, pr, pc in zip(rows, cols, prs.tolist(), pcs.tolist()):
                        out.append({"row": pr + r0, "col": pc + c0, "side": side, "spec": spec, "view": view,
                                    "theta": float(angles[arg[rr, cc]]), "corr": float(best[rr, cc])})
        return out

    def _refine_shapes(self, cands: list[dict], evs: dict[tuple[int, int], np.ndarray]) -> list[dict]:
        """Fit each candidate's outline (base_shapes.fit_shapes); keep fits whose edge
        offset says the size is right."""
        out = []
        S = self.px_per_in
        for (view, side, spec), group in _groups(cands, lambda c: (c["view"], c["side"], c["spec"])).items():
            hx, hy = spec.width_mm / MM_PER_IN / 2 * S, spec.depth_mm / MM_PER_IN / 2 * S
            fits = self._fit_outlines(evs[(view, side)], spec, group)
            kept, faint_ends = [], []
            for c, fit in zip(group, fits):
                if fit is None:
                    continue
                row = {"row": fit.cy, "col": fit.cx, "side": side, "base_mm": spec.width_mm, "view": view,
                       "score": fit.score, "shape": SHAPE_CODES[spec.shape], "size_mm": (spec.width_mm, spec.depth_mm),
                       "theta": fit.theta, "resid": fit.resid, "corr": c["corr"], "sides": fit.sides,
                       # Touching stands: of overlapping fits, the one with a rim all along
                       # both long sides (not one lying across two stands) stands.
                       "rank": fit.score + min(fit.band[2], fit.band[3])}
                if not self._shape_fit_ok(fit, spec.shape,
                                          lambda fit=fit: self._long_side_covered(fit, spec.shape, hx, hy, view)):
                    if abs(fit.offset - self.edge_bias_px) <= 1.5:  # (its size right: _rounds_as_outline)
                        self._refused_shapes.append(row)
                        if fit.cross <= self.max_cross_clean and fit.score >= self.min_coverage_shaped \
                                and min(fit.band_mean[2], fit.band_mean[3]) >= self.min_band_shaped:
                            faint_ends.append(row)  # (refused for its ends alone)
                    continue
                kept.append((row, fit.cross))
            taken: set[int] = set()  # (each refused fit stands for one stand)
            clean = [row for row, cross in kept if cross < self.across_two_cross]
            out += [self._across_two(row, cross, faint_ends, hx, taken, clean) for row, cross in kept]
        return out

    def _across_two(self, row: dict, cross: float, faint_ends: list[dict], hx: float, taken: set[int],
                    clean: list[dict]) -> dict:
        """A kept fit with rim through its middle (``cross``) lying a quarter turn across a
        fit refused only for its faint ends (``faint_ends``: both long sides' rim seen,
        nothing through its middle), seen nearly as well: the latter instead, the nearest
        such not ``taken`` by another, overlapping no ``clean`` kept fit (bases do not
        overlap: a fit in the gap between two stands lies half on each), and holding
        figures (_holds_figures). Two stands touching long side to long side make a
        square whose shared rim a quarter-turned outline crosses; where the file's edge
        (their ends) shows faintly, each stand was refused and the outline across two
        kept."""
        if cross < self.across_two_cross:
            return row
        alts = [f for f in faint_ends if id(f) not in taken
                and np.hypot(f["col"] - row["col"], f["row"] - row["row"]) <= hx
                and abs((f["theta"] - row["theta"] + np.pi / 2) % np.pi - np.pi / 2) >= np.radians(60)
                and f["score"] >= self.across_two_score * row["score"] and self._holds_figures(f)
                and not self._overlaps_any(f, clean)]
        if not alts:
            return row
        alt = min(alts, key=lambda f: np.hypot(f["col"] - row["col"], f["row"] - row["row"]))
        taken.add(id(alt))
        return dict(alt)

    def _files_aligned(self, bases: Detections, evs: dict[tuple[int, int], np.ndarray]) -> Detections:
        """Epic stands on the floor in files (rectangles of one side and size end to end,
        ``vision.files``) placed along each file where its two ends' rims are
        (``file_shift``), where that puts ``file_ratio`` times the rim evidence on them
        that they have where the stands were fitted, and at least ``file_least``: a file's
        rim runs round it whole, its stands' own ends, where they meet, show little, so
        their fits slide along it together. (A file placed right has rim at its ends; one
        next to it, or a faint one, gains little or from nothing.) Where the ends' rims
        gain less than that, the file (or a lone stand) is moved only where its stands
        then hold ``file_fill_gain`` more figures (``_file_fill``)."""
        if self.config.epic is None or self.file_ratio <= 0:
            return bases
        floor = (bases.kind == KIND_BASE) & (bases.shape == SHAPE_CODES["rect"]) & (np.abs(bases.xyz[:, 2]) < 0.05)
        if floor.sum() < 2:
            return bases
        out = bases[np.ones(len(bases), bool)]  # (a copy)
        S = self.px_per_in
        for side, w, d in sorted({(int(si), float(a), float(b)) for si, (a, b) in
                                  zip(bases.side[floor], bases.size_mm[floor])}):
            rim = evs.get((-1, side))
            idx = np.flatnonzero(floor & (bases.side == side) & (bases.size_mm[:, 0] == w) & (bases.size_mm[:, 1] == d))
            if rim is None or len(idx) < 2:
                continue
            centres = np.asarray(self.floor.to_pixel(bases.xyz[idx, :2]), float).reshape(-1, 2)
            thetas = -np.radians(bases.angle_deg[idx])
            hx, hy = w / MM_PER_IN * S / 2, d / MM_PER_IN * S / 2
            chains = files(centres, thetas, hx, hy)
            if self.file_fill_gain > 0:
                chains += [[i] for i in range(len(idx)) if not any(i in c for c in chains)]
            for chain in chains:
                theta = float(thetas[chain[0]])
                shift, best, here = file_shift(rim, centres[chain], theta, hx, hy)
                if best < self.file_least or abs(shift) < 0.5 or best <= here:
                    continue
                moved = centres[chain] + shift * np.array([np.cos(theta), np.sin(theta)])
                # The ends' rims and the figures inside both say where a file lies: moved
                # where the rims say so strongly, or faintly and the figures agree. A lone
                # stand only where the figures agree: its ends' rims may be a neighbour's
                # long side, its own ends hidden under its figures.
                if best < self.file_ratio * here or len(chain) == 1:
                    gain = self._file_fill(centres[chain], moved, theta, (w, d), idx[chain], bases) \
                        if self.file_fill_gain > 0 else None
                    if gain is None or gain < self.file_fill_gain:
                        continue
                out.xyz[idx[chain], :2] = self.floor.to_world(moved[:, 0], moved[:, 1])
        return out

    def _file_fill(self, centres: np.ndarray, moved: np.ndarray, theta: float, size_mm: tuple[float, float],
                   members: np.ndarray, bases: Detections) -> float | None:
        """How much more of its stands' insides a file (or a lone stand) moved along
        itself from ``centres`` to ``moved`` (floor view pixels) holds figures (not the
        table, ``_inside_held``, the mean over its stands); None where it would then
        overlap another stand found. A stand fitted half a stand along its file (its long
        sides on the file's long rims anywhere along them) holds a stretch of bare table
        beyond the file's end and leaves figures it should cover bare; a stand moved off
        its figures by a rim beside it holds bare table."""
        w, d = (float(m) / MM_PER_IN for m in size_mm)
        angle = float(np.degrees(-theta))
        xy = np.asarray(self.floor.to_world(moved[:, 0], moved[:, 1])).reshape(-1, 2)
        mine = [shape_polygon("rect", w, d, float(x), float(y), angle) for x, y in xy]
        own = set(members.tolist())
        for k in np.flatnonzero((bases.kind == KIND_BASE) & (np.abs(bases.xyz[:, 2]) < 0.05)):
            ox, oy = bases.xyz[k, :2]
            if k in own or np.hypot(*(xy - (ox, oy)).T).min() > w + max(bases.size_mm[k]) / MM_PER_IN:
                continue
            theirs = shape_polygon(SHAPE_NAMES[int(bases.shape[k])], bases.size_mm[k, 0] / MM_PER_IN,
                                   bases.size_mm[k, 1] / MM_PER_IN, float(ox), float(oy), float(bases.angle_deg[k]))
            if any(m.intersection(theirs).area > self.across_two_overlap * m.area for m in mine):
                return None
        held = [np.mean([self._inside_held(-1, "rect", size_mm, theta, c, r) for c, r in pts])
                for pts in (centres, moved)]
        return float(held[1] - held[0])

    def _overlaps_any(self, f: dict, rows: list[dict]) -> bool:
        """Whether shaped fit ``f`` overlaps any of ``rows`` (shaped fits of its view) by
        ``across_two_overlap`` of its area or more."""
        def poly(r: dict) -> Any:
            w, d = r["size_mm"]
            return shape_polygon(SHAPE_NAMES[r["shape"]], w / MM_PER_IN * self.px_per_in, d / MM_PER_IN * self.px_per_in,
                                 r["col"], r["row"], float(np.degrees(r["theta"])))
        reach = max(f["size_mm"]) / MM_PER_IN * self.px_per_in
        near = [r for r in rows if r is not f and r["view"] == f["view"]
                and np.hypot(r["col"] - f["col"], r["row"] - f["row"]) < reach]
        if not near:
            return False
        p = poly(f)
        return any(p.intersection(poly(r)).area >= self.across_two_overlap * p.area for r in near)

    def _holds_figures(self, f: dict) -> bool:
        """Whether a shaped fit's inside is mostly not the table (``across_two_inside`` of
        the foreground less shadows, ``_inside_held``): a stand's figures. A fit in the gap
        between two stands borrows their long rims and shows bare table within."""
        return self._inside_held(f["view"], SHAPE_NAMES[f["shape"]], f["size_mm"], f["theta"], f["col"],
                                 f["row"]) >= self.across_two_inside

    def _fit_outlines(self, ev: np.ndarray, spec: Any, cands: list[dict]) -> list:
        """base_shapes.fit_shapes of the outline ``spec`` at each candidate (col, row,
        theta) in the evidence map ``ev``: one ShapeFit or None each."""
        S = self.px_per_in
        return fit_shapes(ev, spec.shape, spec.width_mm / MM_PER_IN / 2 * S, spec.depth_mm / MM_PER_IN / 2 * S,
                          np.array([c["col"] for c in cands]), np.array([c["row"] for c in cands]),
                          np.array([c["theta"] for c in cands]), px_per_in=S, bias=self.edge_bias_px)

    def _long_side_covered(self, fit: Any, shape: str, hx: float, hy: float, view: int) -> bool:
        """Whether the long side of a fit (base_shapes.ShapeFit in ``view``) that shows
        less rim lies mostly where nothing can be seen: under terrain, a hand or off the
        view (``_usable``, set by _find_bases). _shape_fit_ok asks it only of fits that
        would be turned away for that side alone."""
        usable = self._usable.get(view)
        if usable is None:
            return False
        p, _, part = outline_samples(shape, hx, hy, with_parts=True)
        q = p[part == (2 if fit.band_mean[2] < fit.band_mean[3] else 3)]
        c, s = np.cos(fit.theta), np.sin(fit.theta)
        col = np.rint(fit.cx + c * q[:, 0] - s * q[:, 1]).astype(int)
        row = np.rint(fit.cy + s * q[:, 0] + c * q[:, 1]).astype(int)
        H, W = usable.shape
        inside = (col >= 0) & (col < W) & (row >= 0) & (row < H)
        seen = np.zeros(len(q), bool)
        seen[inside] = usable[row[inside], col[inside]]
        return bool((~seen).mean() >= 0.5)

    def _shape_fit_ok(self, fit: Any, shape: str, side_covered: Callable[[], bool] | None = None) -> bool:
        """Whether a fitted oval or rectangle (base_shapes.ShapeFit) of ``shape`` is a
        base: enough of its outline seen as a clean edge at the size's offset, both long
        sides showing the rim (a fit borrowing one edge of a neighbour, or lying across
        two touching stands, has a bare one; not so a side covered by terrain or a hand:
        ``side_covered()``, _long_side_covered, asked only when that decides), and no rim
        through its middle."""
        if abs(fit.offset - self.edge_bias_px) > 1.5:
            return False
        # Both ends show some rim too: an outline borrowing one stand's long rim and
        # a paper marker's edge (nothing at its ends) is not a stand. Unless both long
        # sides show it well, most of the outline is seen and nothing lies through its
        # middle: in a file of white-rimmed stands touching long side to long side, the
        # file's edge (the stands' ends) shows faintly on one side, and an outline
        # turned a quarter across two stands, their shared rim through its middle, was
        # kept instead.
        if fit.band_mean[0] + fit.band_mean[1] < self.min_ends_shaped and not (
                fit.score >= self.min_coverage_clean and fit.cross <= self.max_cross_clean
                and min(fit.band_mean[2], fit.band_mean[3]) >= self.min_band_clean):
            return False
        # An outline seen nearly all round, both long sides well, is a base whatever lies
        # through its middle: a miniature painted near the rim's colour (a purple beast on
        # a blue-rimmed oval, a white head on a white-rimmed stand). A fit lying across
        # two touching stands sees its ends or its long sides poorly, where they cross
        # the stands' middles: a fifth to a third of its outline.
        if (fit.score >= self.min_coverage_seen_all_round
                and min(fit.band_mean[2], fit.band_mean[3]) >= self.min_band_seen_all_round):
            return True
        if fit.score >= self.min_coverage_shaped and fit.cross <= self.max_cross_shaped:
            if min(fit.band_mean[2], fit.band_mean[3]) >= self.min_band_shaped:
                return True
            # A white 40 x 20 mm stand half under a terrain piece: nothing can be seen
            # along its far long side, which is hidden, not bare.
            if (side_covered is not None and max(fit.band_mean[2], fit.band_mean[3]) >= self.min_band_shaped
                    and side_covered()):
                return True
            # An oval whose miniature hides one long side: both its curved ends and most
            # of its outline seen are no neighbour's straight edge borrowed (a cavalry
            # model's body over a 60 x 35 mm oval's side left its ends and other side
            # clear, and a circle was fitted in the model instead).
            if (shape == "oval" and fit.score >= self.min_coverage_oval_side_hidden
                    and min(fit.band_mean[0], fit.band_mean[1]) >= self.min_ends_oval_side_hidden):
                return True
        # The middle of a packed block (both long rims shared with its neighbours) or a
        # stand whose vehicle hides half its rim shows few clean edges, but rim evidence
        # all round its outline and little through its middle.
        # (A rect fitted inside a larger oval's rim has weaker evidence and sits at the
        # far end of the offsets allowed.)
        # Rim through the middle is what a fit lying across two stands shows (their shared
        # rim), its ends then crossing the stands' middles; a miniature painted like the rim
        # shows it too, but leaves the outline's rim strong all round: the stronger the
        # rim round the outline, the more through its middle is a miniature's paint.
        band = min(fit.band_mean)
        cross_most = self.max_cross_all_round if self.cross_below_rim is None \
            else max(self.max_cross_all_round, band - self.cross_below_rim)
        return (fit.score >= self.min_coverage_all_round and band >= self.min_band_all_round
                and fit.cross <= cross_most and abs(fit.offset - self.edge_bias_px) <= 1.0)

    def _follow_shape(self, stands: list[tuple[int, np.ndarray, "PlaneView", np.ndarray, tuple[int, int]]],
                      fighters: list, small_mm: list) -> dict[int, dict]:
        """follow() for oval and rectangular bases, ``stands`` as (fighter index, its
        window's evidence, view, last place in the window's pixels, window origin): per
        stand its outline, turned as last seen (and 15 degrees either way), correlated
        over its window; then the fit, all stands of one size in one fit_shapes call
        (each window sampled in its own pixels): a stand's fit is a few milliseconds of
        numpy's fixed costs, a dozen stands' together hardly more. Found rows by fighter."""
        S = self.px_per_in
        # Per stand: the outline, turned as last seen or 15 degrees either way, correlated
        # over its window. Responses are kept by the radius their peaks are looked for in.
        todo: list[tuple] = []  # (index, ev, view, c, origin, shape, hx, hy, angles, radius, first response)
        responses: dict[int, list[np.ndarray]] = {}
        for i, ev, view, c, origin in stands:
            x, y, z, side, mm, shape, w, d, ang = fighters[i][:9]
            spec = next((b for si, b in self._shaped if si == side and b.shape == shape
                         and abs(b.width_mm - w) < 0.5 and abs(b.depth_mm - d) < 0.5), None)
            if spec is None:
                continue
            th0 = np.radians(-ang) % np.pi
            hx, hy = w / MM_PER_IN / 2 * S, d / MM_PER_IN / 2 * S
            angles = (th0 - np.pi / 12, th0, th0 + np.pi / 12)
            rad = max(1, int(hy * 0.8))
            resps = responses.setdefault(rad, [])
            todo.append((i, ev, view, c, origin, shape, hx, hy, angles, rad, len(resps)))
            resps += _filter_many(ev, [self._shape_kernel(spec, a % np.pi, False) for a in angles],
                                  cv2.BORDER_REFLECT_101, self._follow_spectra)
        # All responses' peaks at once (a window holds a dozen or so; finding them costs
        # mostly numpy's fixed cost per call): the responses one under the other in one map,
        # ``rad`` rows of -inf between them (as outside a map, for the peaks' discs).
        peaks: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for rad, resps in responses.items():
            hs, ws = np.array([q.shape[0] for q in resps]), np.array([q.shape[1] for q in resps])
            top = np.concatenate([[0], np.cumsum(hs + rad)])
            big = np.full((int(top[-1]) - rad, int(ws.max())), -np.inf, np.float32)
            for t, q in zip(top, resps):
                big[t:t + q.shape[0], :q.shape[1]] = q
            rows, cols = _local_maxima(big, self.score_threshold, rad)
            pr, pc = _subpixel_peaks(big, rows, cols)
            k = np.searchsorted(top, rows, side="right") - 1
            r = rows - top[k]
            # A peak on its own response's edge keeps its whole-pixel place there (as
            # _subpixel_peaks on that response alone: no -inf from the rows between).
            pr = np.where((r == 0) | (r == hs[k] - 1), r, pr - top[k])
            pc = np.where((cols == 0) | (cols == ws[k] - 1), cols, pc)
            val = big[rows, cols]
            cut = np.searchsorted(k, np.arange(len(resps) + 1))  # rows (so k) come sorted
            for j in range(len(resps)):
                peaks[(rad, j)] = pc[cut[j]:cut[j + 1]], pr[cut[j]:cut[j + 1]], val[cut[j]:cut[j + 1]]
        # (shape, hx, hy) -> per stand: (index, ev, view, c, origin, starts' cols, rows, angles)
        groups: dict[tuple[str, float, float], list[tuple]] = {}
        for i, ev, view, c, origin, shape, hx, hy, angles, rad, j0 in todo:
            # Where the outline best matches the evidence: the peak nearest the last place
            # (stands in a unit touch, and the strongest peak in the window may be a
            # neighbour's).
            keys, pcs, prs, angs = [], [], [], []
            for j, a in enumerate(angles):
                pc, pr, val = peaks[(rad, j0 + j)]
                keys.append(_nearest_peak_key(pc, pr, val, c, hy))
                pcs.append(pc)
                prs.append(pr)
                angs.append(np.full(len(pc), a))
            key, pc, pr, a = (np.concatenate(q) for q in (keys, pcs, prs, angs))
            # The three best (ties broken as a sort of (key, col, row, angle) tuples would),
            # and the last place.
            best = np.lexsort((a, pr, pc, key))[:3]
            groups.setdefault((shape, hx, hy), []).append(
                (i, ev, view, c, origin, np.append(pc[best], c[0]), np.append(pr[best], c[1]), np.append(a[best], angles[1])))

        def judge(i: int, fits: list, view: "PlaneView", c: np.ndarray, origin: tuple[int, int]) -> dict | None:
            """One stand's row from its starts' fits, or None."""
            x, y, z, side, mm, shape, w, d, ang = fighters[i][:9]
            hy = d / MM_PER_IN / 2 * S
            ok = [fit for fit in fits if fit is not None and self._shape_fit_ok(fit, shape)]
            if not ok:
                return None
            # Of the fits that hold, the one nearest where the stand should be, unless
            # another is much better. Where it should be: anywhere from where it was last
            # seen to where its last step carries it (``c``), when the caller gives the
            # former: a unit slowing to a halt stops short of that step, and the fit
            # started there, its angle a few degrees off, can stay on a neighbour's rim.
            last = fighters[i][9] if len(fighters[i]) > 9 else None
            a = c if last is None else view.to_pixel(np.array([last]))[0] - np.array(origin, float)

            def off_course(q) -> float:
                seg = c - a
                u = float(np.clip(np.dot(np.array([q[0], q[1]]) - a, seg) / max(float(seg @ seg), 1e-9), 0.0, 1.0))
                return float(np.hypot(*(np.array([q[0], q[1]]) - a - u * seg)))

            # A fit a pixel further off must see 1 / (2 hy) more of its outline to win (it
            # was half that: a faint-rimmed stand's fit 2 px over on its neighbour's rim,
            # seeing 7 % more, won, and the still stand was then taken to be moving).
            fx, fy, th, d0, score, *_ = min(ok, key=lambda q: off_course(q) - 2 * hy * q[4])
            xy = view.to_world(np.array([fx + origin[0]]), np.array([fy + origin[1]]))[0]
            # A jump, or a centre well inside another known fighter's outline (where it
            # should be now), is a neighbour's rim, not this stand. By outlines, not centre
            # distances: stands touching long edge to long edge have centres only a depth
            # apart, and a moving neighbour's predicted place is off by a tenth of an inch.
            if np.hypot(xy[0] - x, xy[1] - y) > 0.5:
                return None
            for o in fighters:
                if (o[0], o[1]) == (x, y):
                    continue
                oshape = o[5] if len(o) > 5 else "round"
                ow, od = (o[6], o[7]) if oshape != "round" else (o[4], o[4])
                # Outside the circle round the other's outline the centre is not inside it
                # (depth_inside < 0): most of the table's fighters, skipped cheaply.
                reach = (ow * ow + od * od) / (2 * MM_PER_IN) ** 2 + 0.01
                if (xy[0] - o[0]) ** 2 + (xy[1] - o[1]) ** 2 > reach:
                    continue
                inside = depth_inside(xy[0], xy[1], oshape, ow / MM_PER_IN, od / MM_PER_IN, o[0], o[1],
                                      o[8] if oshape != "round" else 0.0)
                if inside > 0.25 * min(d, od) / MM_PER_IN:
                    return None
            return {"xyz": (xy[0], xy[1], z), "kind": KIND_BASE, "side": side, "base_mm": w, "score": score,
                    "shape": SHAPE_CODES[shape], "size_mm": (w, d), "angle_deg": float(-np.degrees(th)) % 180.0}

        found: dict[int, dict] = {}
        for (shape, hx, hy), group in groups.items():
            counts = [len(g[5]) for g in group]
            fits = fit_shapes([g[1] for g in group], shape, hx, hy, np.concatenate([g[5] for g in group]),
                              np.concatenate([g[6] for g in group]), np.concatenate([g[7] for g in group]),
                              px_per_in=S, bias=self.edge_bias_px, counts=counts)
            k = 0
            for (i, _, view, c, origin, *_), n in zip(group, counts):
                row = judge(i, fits[k:k + n], view, c, origin)
                k += n
                if row is not None:
                    found[i] = row
        return found
