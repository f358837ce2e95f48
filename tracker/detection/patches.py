"""Bases found as foreground: patches of change the bases found leave unexplained.

In: a view's foreground against the empty table (``vision.foreground``), the bases found, the
outlines each side lacks.
Out: bases placed, sized and turned by the outline running along their patch's boundary
(``_pursued_stands`` for small stands, ``_pursued_outline`` for any outline a roster is short
of), sided by their rim's colour or by their Epic unit (``_sided_by_unit``); patches no side
can be named for kept as doubts (``_doubt``: world ``Doubt``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import cv2
import numpy as np

from ..base_shapes import SHAPE_CODES, SHAPE_NAMES, depth_inside, shape_polygon
from ..vision.boundary import boundary, boundary_offset, outline_on_boundary
from ..vision.foreground import foreground, shadow
from ..vision.pursuit import along_outline, read_at, rim_offsets, side_of_patch
from ..vision.stands import Outline, covered, ends_filled, in_file, inside_mean, pursue, response_at
from ..world import MM_PER_IN
from .detections import KIND_BASE, Detections
from .learned import _Patch

TOKEN_LIKE = 0.15  # a round outline within this share of a token's size is a token's as much
PURSUE_HAND_MARGIN_IN = 1.0  # a hand's shadow reaches about this far past it on renders


class Patches:
    """Explains foreground by the table's base outlines (a mixin of ``TableDetector``)."""

    def _pursued_stands(self, lab: np.ndarray, usable: np.ndarray, evs: dict[tuple[int, int], np.ndarray],
                        found: Detections, whole_look: bool = False,
                        platform_labs: dict[int, np.ndarray] | None = None,
                        hand: np.ndarray | None = None) -> list[dict]:
        """Oval and rectangular bases on the floor found as foreground of their outline
        (vision.stands.pursue; every base outline the roster lists competes, so that a
        round base's patch is not taken for a stand), each given to the side whose rim
        evidence along its outline is clearly the strongest. They rank below every base
        fitted by the usual search: where that found a base, it places it.
        ``whole_look``: any base too, while a
        side's roster lists more of an outline than were found (_pursued_outline), on the
        floor and on each platform's top (``platform_labs``: its view of the frame).
        ``hand``: where hands are, whose arms' foreground holds no stand."""
        S = self.px_per_in
        specs = sorted({spec for _, spec in self._shaped}, key=str)
        short = self._outlines_short(found) if whole_look else {}
        if self._bg_floor is None or not (short or any(
                sp.depth_mm / MM_PER_IN * S < self.pursue_max_depth_px for sp in specs)):
            return []
        fg = foreground(lab, self._bg_floor, usable)
        explained = self._footprints(found)
        rounds = sorted({float(mm) for _, _, sizes in self._side_lab() for mm in sizes})
        outlines = [Outline(sp.shape, sp.width_mm / MM_PER_IN / 2 * S, sp.depth_mm / MM_PER_IN / 2 * S) for sp in specs]
        outlines += [Outline("round", mm / MM_PER_IN / 2 * S, mm / MM_PER_IN / 2 * S) for mm in rounds]
        discs = [Outline("round", t.diameter_in / 2 * S, t.diameter_in / 2 * S) for t in self.config.tokens.values()]
        out: list[dict] = []
        undecided: list[tuple[dict, dict[int, float]]] = []
        lit = None  # (the foreground less the table's shadows, made once if needed)
        if short:
            # Patches of the outlines some side is short of, in the foreground less the
            # table's shadows (a miniature's shadow on the mat is a patch of a base's size
            # too), on the floor and on each platform's top. (A 25 mm base's patch may be
            # a 1 in token's: the token search after the bases decides, _settle_discs,
            # and a token found there is the token.)
            keys = sorted({k for _, k in short}, key=str)
            shapes = [Outline(k[0], k[1] / MM_PER_IN / 2 * S, k[2] / MM_PER_IN / 2 * S) for k in keys]
            # Round bases a side has beyond its roster, where it lacks an oval or
            # rectangle, fitted on under half their rim: each may be that outline's end,
            # its rim seen there alone (a miniature over the rest). Their patches are
            # looked at again, as not yet explained; an outline of their side that
            # explains one better than its circle does takes it (50 mixed tuning tables:
            # 8 ovals of 78 read as a round base at one end placed right, 4 of those
            # missed found; recall 93.77 -> 93.83 %, precision 97.20 -> 97.37 %).
            suspect = self._suspect_rounds(found, short)
            known = found[~suspect]
            looks = [(-1, lab, self._bg_floor, fg, self._footprints(known) if suspect.any() else explained)] \
                if shapes else []
            for i, plab in (platform_labs or {}).items() if looks and self.pursue_platforms else ():
                bg = self._bg_platforms[i] if i < len(self._bg_platforms) else None
                if bg is not None:
                    looks.append((i, plab, bg, foreground(plab, bg, self._usable[i]), self._footprints(known, i)))
            offset = None
            for vi, vlab, bg, vfg, vexplained in looks:
                fg_lit = self._lit_foreground(vi, vlab, bg, vfg)
                edge = boundary(fg_lit)
                if offset is None:  # (measured on the floor's bases; a platform holds too few)
                    offset = self._boundary_offset(edge, found)
                held = self._suspects_in_view(found, suspect, vi)
                placed = pursue(fg_lit, shapes, threshold=self.pursue_threshold, explained=vexplained)
                if self.doubt_threshold < self.pursue_threshold:
                    # Then the patches too faint to be a base, once those placed are
                    # taken: doubts (``doubt_threshold``).
                    for p in pursue(fg_lit, shapes, threshold=self.doubt_threshold,
                                    explained=vexplained | covered(vexplained.shape, shapes, placed)):
                        self._doubt(p.col, p.row, shapes[p.outline], {si for si, k in short if k == keys[p.outline]}, vi)
                for p in placed:
                    c = self._pursued_outline(p, keys, shapes, fg_lit, edge, evs, short, discs, offset, vi)
                    if c is None:
                        continue
                    o = shapes[p.outline]
                    inside = [h for h in held if depth_inside(h["col"], h["row"], o.shape, 2 * o.hx, 2 * o.hy,
                                                              p.col, p.row, math.degrees(p.theta)) > 0]
                    if inside:
                        # Over a suspect round base: the outline of its side that explains
                        # the patch better than the round does takes it; else the round stays.
                        mine = [h for h in inside if h["side"] == c["side"]]
                        if not (c.get("shape", 0) and mine and all(
                                response_at(fg_lit, h["outline"], 0.0, h["col"], h["row"]) < p.response for h in mine)):
                            continue
                        c["replaces"] = [(h["col"], h["row"]) for h in mine]
                    out.append(c)
            if self.roster_side_guard:
                out = self._unsure_within_short(out, short, shapes, keys)
        rims = [evs[k] for k in sorted(evs) if k[0] == -1] if self.pursue_rim_weight > 0 else []
        fg_stands = fg
        if rims and hand is not None and hand.any():
            # Not on a hand's arm either (the patch of foreground that holds the hand):
            # a sleeve's edge is a stand-wide strip of foreground, and its shading a rim.
            _, labels = cv2.connectedComponents(((fg >= 0.5) | hand).astype(np.uint8), connectivity=8)
            fg_stands = np.where(np.isin(labels, np.unique(labels[hand])), 0.0, fg).astype(np.float32)
        stands = pursue(fg_stands, outlines, threshold=self.pursue_stand_threshold, explained=explained, rims=rims,
                        rim_w=max(1.5, 0.09 * S), rim_weight=self.pursue_rim_weight) if any(
            sp.depth_mm / MM_PER_IN * S < self.pursue_max_depth_px for sp in specs) else []
        for p in stands:
            if p.outline >= len(specs) or 2 * outlines[p.outline].hy >= self.pursue_max_depth_px:
                continue  # a round base's patch, or a base large enough for its rim to be fitted
            # A token's disc responds to a stand's outline too: a patch its own disc
            # explains better is that disc, not a stand.
            if any(response_at(fg, d, 0.0, p.col, p.row) >= p.response for d in discs):
                # (A patch longer than any disc, both the stand's ends filled, or end to end
                # with another stand placed, is a stand: in a file, its neighbours fill its
                # outer band and a disc fits as well.)
                o = outlines[p.outline]
                p = self._stand_by_its_rim(p, specs[p.outline], o, fg, discs) \
                    or self._stand_by_its_boundary(p, o, fg, discs) \
                    or (p if ends_filled(fg, o, p.theta, p.col, p.row, max(d.hx for d in discs))
                        >= self.stand_ends_filled or in_file(p, stands, o, self.stand_file_tol_in * S) else None)
                if p is None:
                    continue
            spec, o = specs[p.outline], outlines[p.outline]
            sides = [si for si, sp in self._shaped if sp == spec and (-1, si) in evs]
            rim = rim_offsets(o, p.theta)
            ev = sorted(((float(read_at(evs[(-1, si)], p.col, p.row, *rim).mean()), si) for si in sides), reverse=True)
            # A side whose rims set-up warns are near the mat's colour shows none here: where
            # such a side fields this outline too, another side's faint evidence (its colour
            # in a shadow or a miniature) does not tell the stand is not that side's.
            least = self.pursue_side_min_warned if any(si in self._rim_warned for _, si in ev[1:]) \
                else self.pursue_side_min
            cand = {"row": p.row, "col": p.col, "side": ev[0][1] if ev else -1, "base_mm": spec.width_mm,
                    "view": -1, "score": self.min_coverage, "shape": SHAPE_CODES[spec.shape],
                    "size_mm": (spec.width_mm, spec.depth_mm), "theta": p.theta, "resid": 0.0,
                    "corr": p.response, "sides": 0, "rank": -1.0 + 0.01 * p.response, "from_foreground": True,
                    "spec": spec}
            if not ev or ev[0][0] < least or (len(ev) > 1 and ev[0][0] < self.pursue_side_ratio * ev[1][0]):
                if ev and self.config.epic is not None:
                    if lit is None:
                        # (A shadow keeps the mat's pattern; dark miniatures on a pale mat,
                        # their rims near the mat's colour, do not.)
                        lit = np.where(shadow(lab, self._bg_floor, scaled=True, pattern=True), 0.0, fg).astype(np.float32)
                    seen = max(inside_mean(fg, o, p.theta, p.col, p.row), 1e-6)
                    cand["lit"] = inside_mean(lit, o, p.theta, p.col, p.row) / seen
                    undecided.append((cand, dict((si, e) for e, si in ev)))
                continue
            out.append(cand)
        out += self._sided_by_unit(undecided, found, out)
        # (They were once moved onto a rim fit landing within 2 px; since the pursuit
        # reads the rims itself that only cost: 50 Epic tuning tables, recall 97.2 ->
        # 97.6 % and floor RMS 0.110 -> 0.109 in without it, 96.0 % within 4 px.)
        return out

    def _boundary_offset(self, edge: np.ndarray, found: Detections) -> float:
        """How far outside a base's edge its foreground ends on this table (view pixels),
        measured on the round bases this look fitted by their rims on the floor
        (``boundary_offset``); ``pursue_round_offset_px`` without any."""
        keep = (found.kind == KIND_BASE) & (found.shape == 0) & ~found.from_foreground & (np.abs(found.xyz[:, 2]) < 0.05)
        S = self.px_per_in
        centres = self.floor.to_pixel(found.xyz[keep, :2])
        off = boundary_offset(edge, centres, found.base_mm[keep] / MM_PER_IN / 2 * S)
        return self.pursue_round_offset_px if off is None else off

    def _doubt(self, col: float, row: float, o: Outline, sides: set[int], view: int = -1) -> None:
        """Note a patch of outline ``o`` the pursuit could not name (_unnamed), on the
        floor or (``view``) a platform's top."""
        v, z = self._view_and_height(view)
        xy = v.to_world(np.array([col]), np.array([row]))[0]
        self._doubts.append(_Patch(float(xy[0]), float(xy[1]), z, o.hx / self.px_per_in, sorted(sides), o.shape, True))

    def _pursued_outline(self, p: Any, keys: list[tuple[str, float, float]], shapes: list[Outline], fg: np.ndarray,
                         edge: np.ndarray, evs: dict[tuple[int, int], np.ndarray], short: dict, discs: list,
                         offset: float, view: int = -1) -> dict | None:
        """A base's patch of foreground (``pursue``), its outline, centre and turn those of
        the roster outline running along the patch's boundary (``outline_on_boundary``;
        ``keys``: the outlines as (shape, width mm, depth mm), ``shapes`` in view
        pixels; ``edge``: the boundary of ``fg``), as a base of that outline when its rim names a side short of it, or,
        where no rim shows (a rim of the mat's colour), when one side alone is short of
        an outline near it and no other side's rim colour shows there
        (``vision.pursuit.side_of_patch``); where the rims name no side but one side alone
        lacks this outline, a base of that side with every other as a rival (its side
        unsure); None otherwise (a doubt). ``view``: the floor's (-1) or a platform's."""
        o = shapes[p.outline]
        if any(response_at(fg, d, 0.0, p.col, p.row) >= p.response for d in discs
               if abs(d.hx - o.hx) > TOKEN_LIKE * d.hx or o.turns):
            # A disc of a token's own size: the token search after decides (_settle_discs);
            # a doubt till then, that a token found there takes away (_unnamed).
            self._doubt(p.col, p.row, o, {si for si, _ in short}, view)
            return None
        S = self.px_per_in
        anchored = self._rim_in_patch(fg, view, keys, shapes, short, p.col, p.row) if self.pursue_rim_anchor else None
        if anchored is not None:
            k, cx, cy, theta, side = anchored
            return self._patch_base(p, view, keys[k], shapes[k], cx, cy, theta, side, 0)
        k, cx, cy, theta, share = outline_on_boundary(edge, p.col, p.row, shapes, reach=self.pursue_round_reach_in * S,
                                                      offset=offset, facing=self._toward_camera(view, p.col, p.row)
                                                      if self.pursue_facing else None)
        if k < 0 or share < self.pursue_round_share_named:
            self._doubt(p.col, p.row, shapes[p.outline], {si for si, _ in short}, view)
            return None
        key, o = keys[k], shapes[k]
        sides = {si for si, kk in short if kk == key and (view, si) in evs}
        if not sides:
            return None
        ev = along_outline({si: evs[(view, si)] for si, _, _ in self._side_lab() if (view, si) in evs}, o, cx, cy, theta,
                           facing=self._toward_camera(view, cx, cy) if self.pursue_facing else None)
        side = side_of_patch(ev, key, short, self._rim_warned, least=self.pursue_side_min,
                             ratio=self.pursue_side_ratio, least_warned=self.pursue_side_min_warned,
                             size_step_mm=self.pursue_round_size_step_mm)
        rivals = 0
        if side is None:
            if len(sides) != 1 or share < self.pursue_round_share:
                self._doubt(cx, cy, o, set(sides), view)
                return None
            # One side alone lacks this outline, its rims not clearly seen: a base of that
            # side, its side unsure (every other side a rival), not a doubt. On tuning
            # tables 31 of 33 such patches were a fighter the state lacked, 22 of that side.
            side = next(iter(sides))
            rivals = sum(1 << s.index for s in self.config.sides if s.index != side)
        return self._patch_base(p, view, key, o, cx, cy, theta, side, rivals)

    def _patch_base(self, p: Any, view: int, key: tuple[str, float, float], o: Outline, cx: float, cy: float,
                    theta: float, side: int, rivals: int) -> dict:
        """The candidate row of a base of outline ``key`` (``o`` in view pixels) placed
        in the patch ``p`` at (``cx``, ``cy``) turned ``theta``: ranked below every base
        fitted by its rim."""
        cand = {"row": cy, "col": cx, "side": side, "base_mm": key[1], "view": view, "score": self.min_coverage,
                "theta": theta, "resid": 0.0, "corr": p.response, "sides": 0, "rank": -1.0 + 0.01 * p.response,
                "from_foreground": True, "rivals": rivals}
        if key[0] == "round":
            cand.update(shape=0, radius_px=o.hx)
        else:
            cand.update(shape=SHAPE_CODES[key[0]], size_mm=(key[1], key[2]),
                        spec=next(sp for si, sp in self._shaped if (sp.shape, sp.width_mm, sp.depth_mm) == key))
        return cand

    def _fg_near(self, view: int, col: float, row: float, reach: float) -> tuple[np.ndarray, int, int] | None:
        """``view``'s foreground less the table's shadows within ``reach`` px of (``col``,
        ``row``), as the whole view's is there (the blur and the pattern's window read a
        few pixels beyond), and the window's origin (col, row); None without the empty
        table's view. (A window: the whole view's costs a look tens of milliseconds.)"""
        v, _ = self._view_and_height(view)
        bg = self._empty_view(view)
        lab = self._ring_labs.get(view)
        if bg is None or lab is None:
            return None
        usable = self._usable.get(view, v.valid)
        H, W = lab.shape[:2]
        m = int(reach) + 4
        c0, c1, r0, r1 = max(int(col) - m, 0), min(int(col) + m + 1, W), max(int(row) - m, 0), min(int(row) + m + 1, H)
        if c0 >= c1 or r0 >= r1:
            return None
        wl, wb = lab[r0:r1, c0:c1], bg[r0:r1, c0:c1]
        fg = np.where(shadow(wl, wb, pattern=True), 0.0, foreground(wl, wb, usable[r0:r1, c0:c1])).astype(np.float32)
        return fg, c0, r0

    def _inside_held(self, view: int, shape: str, size_mm: tuple[float, float], theta: float, col: float,
                     row: float) -> float:
        """How much of a base outline's inside (``size_mm``, at (``col``, ``row``) in
        ``view``, turned ``theta``) is not the table: the mean of the foreground less the
        table's shadows there (1 without the empty table's view). A stand holds figures;
        an outline in the gap between two stands holds bare table."""
        hx, hy = (float(m) / MM_PER_IN * self.px_per_in / 2 for m in size_mm)
        near = self._fg_near(view, col, row, np.hypot(hx, hy) + 3)
        if near is None:
            return 1.0
        fg, c0, r0 = near
        return inside_mean(fg, Outline(shape, hx, hy), theta, col - c0, row - r0)

    def _filled(self, view: int, shape: str, hx: float, hy: float, theta: float, col: float, row: float,
                fg: np.ndarray | None = None) -> float:
        """How much of an outline (half-axes ``hx``, ``hy`` view pixels, at (``col``,
        ``row``) in ``view``, turned ``theta``) lies on what is not the table: the share of
        its rim's points on the view's foreground less the table's shadows (``fg``, else
        ``_fg_near``). A base's rim is foreground where seen and where a miniature hides
        it; an outline borrowing another base's rim runs over bare table."""
        c0 = r0 = 0
        if fg is None:
            near = self._fg_near(view, col, row, max(hx, hy) + 2)
            if near is None:
                return 0.0
            fg, c0, r0 = near
        return float((read_at(fg, col - c0, row - r0, *rim_offsets(Outline(shape, hx, hy), theta)) >= 0.5).mean())

    def _rim_in_patch(self, fg: np.ndarray, view: int, keys: list[tuple[str, float, float]], shapes: list[Outline],
                      short: dict, col: float, row: float) -> tuple[int, float, float, float, int] | None:
        """A rim fit of an oval or rectangle (of ``keys``, in view pixels ``shapes``) its
        side is ``short`` of, refused for the little of its rim it saw
        (``_refused_shapes``), lying in this patch of foreground ``fg`` (its centre within
        half its length of the patch's placement (``col``, ``row``), its inside mostly not
        the table: the rest of its outline is hidden under a miniature, not bare, as
        ``_filled`` measures):
        (outline index, col, row, theta, side) of the best seen such fit, or None. A
        miniature overhanging its base makes the patch's boundary the miniature's; the
        rim's crescent is the base's own edge."""
        best = None
        for r in self._refused_shapes:
            if r["view"] != view:
                continue
            key = (SHAPE_NAMES[r["shape"]], float(r["size_mm"][0]), float(r["size_mm"][1]))
            if key not in keys or short.get((r["side"], key), 0) <= 0 or r.get("anchored"):
                continue
            k = keys.index(key)
            if np.hypot(r["col"] - col, r["row"] - row) > shapes[k].hx \
                    or self._filled(view, key[0], shapes[k].hx, shapes[k].hy, r["theta"], r["col"], r["row"],
                                    fg) < self.outline_filled:
                continue
            if best is None or r["score"] > best[0]["score"]:
                best = (r, k)
        if best is not None:
            best[0]["anchored"] = True  # (one patch's base)
        return None if best is None else (best[1], best[0]["col"], best[0]["row"], best[0]["theta"], best[0]["side"])

    def _stand_by_its_rim(self, p: Any, spec: Any, o: Outline, fg: np.ndarray, discs: list[Outline]) -> Any:
        """A patch that a token's disc explains better than the stand the pursuit placed
        there may still be a stand, placed wrong: its shadow pulls the patch's outline off
        it (a lone blue stand on a pale mat, 0.57 in off and 11 degrees turned). A rim fit
        of its outline, refused for the little rim it saw (its size right), whose centre
        lies in the placement's outline and which explains the patch better than a disc
        does, at the fit's centre and at the placement's: that stand, placed by its rim
        (a pixel wide at 720p, too faint to make a base on its own). Else None: the disc.
        (On 48 Epic tuning tables, 5 stands found that were missed, none lost, no token
        read as a stand: of the placements a disc explains better, 128 in 133 are tokens.)"""
        best = None
        for f in self._refused_shapes:
            if f["view"] != -1 or tuple(f["size_mm"]) != (spec.width_mm, spec.depth_mm) \
                    or depth_inside(f["col"], f["row"], o.shape, 2 * o.hx, 2 * o.hy, p.col, p.row,
                                    math.degrees(p.theta)) <= 0:
                continue
            r = response_at(fg, o, f["theta"], f["col"], f["row"])
            disc = max(response_at(fg, d, 0.0, c, w) for d in discs for c, w in ((f["col"], f["row"]), (p.col, p.row)))
            if r > disc and (best is None or r > best.response):
                best = dataclasses.replace(p, col=f["col"], row=f["row"], theta=f["theta"], response=r)
        return best

    def _stand_by_its_boundary(self, p: Any, o: Outline, fg: np.ndarray, discs: list[Outline]) -> Any:
        """A patch that a token's disc explains better than the stand the pursuit placed
        there, where the stand's outline runs along the patch's boundary
        (``outline_on_boundary`` within half its length, on ``stand_boundary_share`` of it
        at least) and there explains it better than a disc does: that stand, placed
        there. The pursuit's placement takes in the stand's shadow (a lone white-rimmed
        stand on an orange mat placed 0.46 in off along it, where a disc explained its
        patch better); the outline along the patch's edge does not. Else None."""
        m = int(3 * o.hx) + 2
        c0, r0 = max(int(p.col) - m, 0), max(int(p.row) - m, 0)
        win = fg[r0:int(p.row) + m + 1, c0:int(p.col) + m + 1]
        if win.size == 0:
            return None
        k, cx, cy, theta, share = outline_on_boundary(boundary(win), p.col - c0, p.row - r0, [o], reach=o.hx,
                                                      offset=self.pursue_round_offset_px)
        if k < 0 or share < self.stand_boundary_share:
            return None
        r = response_at(win, o, theta, cx, cy)
        if r <= max(response_at(win, d, 0.0, cx, cy) for d in discs):
            return None
        return dataclasses.replace(p, col=cx + c0, row=cy + r0, theta=theta, response=r)

    def _sided_by_unit(self, undecided: list[tuple[dict, dict[int, float]]], found: Detections,
                       sided: list[dict]) -> list[dict]:
        """Epic stands found as foreground whose rim evidence names no side clearly (a rim
        a pixel wide at 720p), given the side of the unit they stand in: an Epic unit's
        stands keep within 5 cm of each other, and units are one side's. A stand whose
        nearest stand of known side (a fitted base, or a foreground stand whose rims
        named its side) is within ``unit_reach_in`` takes that side, if its own rim
        evidence for it is at least ``unit_side_share`` of the best side's (the
        evidence does not say otherwise) and no stand of another side is as near (in
        close combat units touch).

        Any other is still a stand (on the Epic tuning tables 79 in 84 such patches were
        one), its side unsure: every other side that fields its outline is a rival
        (``Detections.rivals``), which the rulings name, rather than a stand the state
        lacks with nothing said. Its side is the roster's guess: the side lacking most
        stands of its outline (the units' stands less those found), ties to the side
        its rims lean to. (Right for 75 of those 79; the rims' lean alone, 43.) With no
        rim nor unit to say it is a stand, a patch that is mostly the table in shadow
        (``shadow(..., scaled=True, pattern=True)``: darker, its colour and the mat's
        pattern kept; under ``unsure_stand_lit`` of its foreground lit: an arm's shadow)
        is none. (Without the pattern, a unit of white-rimmed stands round dark
        miniatures on a pale mat read as shadow and was dropped whole: 50 Epic tuning
        tables, recall 96.9 -> 97.2 %, precision 99.4 % both.)"""
        if not undecided:
            return []
        known = [(xy, int(si)) for xy, si, k in zip(found.xyz[:, :2], found.side, found.kind) if k == KIND_BASE]
        known += [(self.floor.to_world(np.array([c["col"]]), np.array([c["row"]]))[0], c["side"]) for c in sided]
        pts = np.array([xy for xy, _ in known]).reshape(-1, 2)
        out, unsure = [], []
        for cand, ev in undecided:
            xy = self.floor.to_world(np.array([cand["col"]]), np.array([cand["row"]]))[0]
            d = np.hypot(*(pts - xy).T)
            if len(d):
                j = int(np.argmin(d))
                side = known[j][1]
                if d[j] <= self.unit_reach_in and side in ev and ev[side] >= self.unit_side_share * max(ev.values()) \
                        and not any(dk <= self.unit_reach_in and sk != side for dk, (_, sk) in zip(d, known)):
                    out.append({**cand, "side": side})
                    continue
            if cand.get("lit", 1.0) >= self.unsure_stand_lit:
                unsure.append((cand, ev))
        if unsure:
            lacking = self._units_stands()
            lacking.subtract((int(si), float(max(wd)), float(min(wd))) for si, sh, wd, k in
                             zip(found.side, found.shape, found.size_mm, found.kind) if sh and k == KIND_BASE)
            lacking.subtract((c["side"], float(max(c["size_mm"])), float(min(c["size_mm"])))
                             for c in [*sided, *out] if "size_mm" in c)
            for cand, ev in sorted(unsure, key=lambda ce: -ce[0]["corr"]):  # (best seen first)
                dims = (float(max(cand["size_mm"])), float(min(cand["size_mm"])))
                side = max(ev, key=lambda si: (lacking[(si, *dims)], ev[si]))
                lacking[(side, *dims)] -= 1
                out.append({**cand, "side": side, "rivals": sum(1 << si for si in ev if si != side)})
        return out

    def _not_token_places(self, bases: Detections) -> tuple[np.ndarray, np.ndarray | None]:
        """Where no token can be seen: under the bases found by their rims that no token
        could be mistaken for (rectangles and ovals, round bases half as wide again as a
        token), a pixel in from their edge. A stand's miniature is a patch of change of a
        token's size: on an Epic tuning table 12 of the token search's 14 discs were
        stands, and three of its five objectives were never looked at. Bases found only
        as foreground, small round ones, and round ones seen under ``token_hiding_score``
        of their rim (a blue objective's edge and a purple base's yellow crescent beside
        it made a 40 mm yellow rim) may be a token's disc itself (_settle_discs decides),
        so they are left to the search. A base on a platform hides the floor where its top's
        picture falls (``_lifted_footprints``, also returned: None if none): a plain disc
        seen there is that fighter."""
        paper = self._paper_diameter_in() * MM_PER_IN
        sure = (bases.kind == KIND_BASE) & ~bases.from_foreground \
            & ((bases.shape > 0) | ((bases.base_mm >= 1.5 * paper) & (bases.score >= self.token_hiding_score)))
        mask = self._footprints(bases[sure]).astype(np.uint8)
        lifted = (bases.kind == KIND_BASE) & (bases.xyz[:, 2] > 0.05)
        hidden = self._lifted_footprints(bases[lifted]) if not self.tokens_under_lifted_bases and lifted.any() else None
        if hidden is not None:
            mask |= hidden
        return cv2.erode(mask, np.ones((3, 3), np.uint8)).astype(bool), hidden

    def _lifted_footprints(self, bases: Detections) -> np.ndarray:
        """Where the tops of ``bases`` (on platforms) fall in the floor view: each top's
        outline as the camera sees it, met with the floor's plane (a mask of the floor
        view's pixels, uint8). (A base 2 in up lies an inch or more from where its picture
        meets the floor.)"""
        mask = np.zeros(self.floor.shape, np.uint8)
        # (The floor's plane round each base as the camera sees it, a homography from picture
        # to floor fitted on a grid of floor points: any camera that projects will do.)
        grid = np.stack(np.meshgrid(np.linspace(-3, 3, 5), np.linspace(-3, 3, 5)), -1).reshape(-1, 2)
        lift = self.config.base_thickness_in
        for k in range(len(bases)):
            w, d = np.asarray(bases.size_mm[k], float) / MM_PER_IN
            outline = shape_polygon(SHAPE_NAMES[int(bases.shape[k])], w, d, *bases.xyz[k, :2], float(bases.angle_deg[k]))
            xy = np.asarray(outline.exterior.coords)
            top = np.column_stack([xy, np.full(len(xy), bases.xyz[k, 2] + lift)])
            floor = grid + bases.xyz[k, :2]
            seen = np.asarray(self.camera.project(np.column_stack([floor, np.zeros(len(floor))])), np.float32)
            H, _ = cv2.findHomography(seen.reshape(-1, 2), floor.astype(np.float32))
            if H is None:
                continue
            pic = np.asarray(self.camera.project(top), np.float32).reshape(-1, 1, 2)
            on_floor = cv2.perspectiveTransform(pic, H).reshape(-1, 2)
            cv2.fillPoly(mask, [np.rint(self.floor.to_pixel(on_floor)).astype(np.int32)], 1)
        return mask

    def _footprints(self, bases: Detections, view: int = -1) -> np.ndarray:
        """Where ``bases`` on the floor cover the floor view (a mask of its pixels); with
        a platform's ``view``, where those on its top cover that view."""
        v, z = self._view_and_height(view)
        mask = np.zeros(v.shape, np.uint8)
        here = np.flatnonzero((bases.kind == KIND_BASE) & (np.abs(bases.xyz[:, 2] - z) < 0.05))
        if not len(here):
            return mask.astype(bool)
        S = self.px_per_in
        px = v.to_pixel(bases.xyz[here, :2])
        for k, (c, r) in zip(here, px):
            hx, hy = bases.size_mm[k] / MM_PER_IN / 2 * S
            deg = -float(bases.angle_deg[k])  # (world angles turn the other way in the view's rows)
            if bases.shape[k] == SHAPE_CODES["rect"]:
                box = cv2.boxPoints(((float(c), float(r)), (2 * hx, 2 * hy), deg))
                cv2.fillPoly(mask, [np.rint(box).astype(np.int32)], 1)
            else:
                cv2.ellipse(mask, ((float(c), float(r)), (2 * hx, 2 * hy), deg), 1, -1)
        return mask.astype(bool)
