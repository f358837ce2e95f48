"""``TableDetector``: one look at a frame, its stages in order.

In: a frame (BGR) from the calibrated camera.
Out: ``Detections`` (bases with their side, tokens, terrain, hand mask, doubts) in world inches.
``detect()`` is a whole look, ``detect_region()`` the same in a window of the floor view,
``follow()`` re-fits known fighters. The stages are the mixins it is made of, one module
each (see the package docstring); the thresholds they share, with the reason for each, are
set in ``__init__``.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from ..base_shapes import SHAPE_NAMES, depth_inside
from ..config import GameConfig
from ..vision.colour import TableLight
from ..vision.colour import detector_lab as _lab
from ..vision.refiner import BaseRefiner
from ..vision.shape_reader import ShapeReader
from ..vision.stand_refiner import QuarterReader, StandRefiner
from ..vision.tag_reader import TagReader
from ..vision.tokens import TokenStyles
from ..world import MM_PER_IN, TerrainPiece
from .detections import KIND_STATE, Detections
from .following import Following
from .learned import LearnedReads, _Patch
from .learned_shapes import ShapeReads
from .learned_stands import LearnedStands
from .patches import Patches
from .placement import Placement
from .roster import Roster
from .round_rims import RoundRims
from .shaped import ShapedBases
from .sides import Sides
from .table_views import TableViews
from .token_names import TokenNames
from .tokens import Tokens
from .tunables import Tunables


class TableDetector(Tunables, TableViews, RoundRims, ShapedBases, Placement, Sides, Roster, Patches, Tokens, TokenNames,
                    LearnedReads, ShapeReads, LearnedStands, Following):
    """Finds bases, tokens and terrain in frames from one calibrated camera.

    ``camera`` needs ``project(xyz) -> uv`` and ``unproject(uv, z) -> xy`` (see
    calibration.camera.CameraModel).
    """

    def __init__(self, config: GameConfig, camera: Any, *, image_size: tuple[int, int] | None = None,
                 px_per_in: float | None = None, background: np.ndarray | None = None,
                 terrain: tuple[TerrainPiece, ...] = (), blur_in: float | None = None):
        self.config = config
        self.camera = camera
        # The picture's softness on the table (TableSetup.blur_in, from the table markers'
        # printed edges): how much of a printed tag's contrast reaches the camera.
        self.blur_in = blur_in
        self.light = TableLight()  # the table's white balance (set_background reads it off the markers)
        self._token_styles = TokenStyles((), (), np.zeros((0, 3), np.float32))
        self.image_size = image_size or getattr(getattr(camera, "intrinsics", None), "image_size", None) \
            or config.image_size or (1280, 720)
        self.px_per_in = px_per_in or self._native_px_per_in()
        self.terrain: tuple[TerrainPiece, ...] = tuple(terrain)
        self.timings_ms: dict[str, float] = {}
        # Token discs not reported as tokens that are still paper, never bases: (xy, read)
        # a tag face not read (yet), or a state tag this table gives no meaning.
        self._paper_discs: list[tuple[np.ndarray, bool]] = []
        # Every plain disc the token search fitted this look: (xy, kind searched, radius
        # in inches of its edge as the fit saw it, less the blur's edge bias).
        self._disc_sizes: list[tuple[np.ndarray, str, float]] = []
        self._full_count = 0
        self._last_tokens = Detections()
        self.light_gain = np.ones(3, np.float32)  # the frame's light / the empty table's, per channel (relight)
        self._last_relit: tuple | None = None  # (frame, relit): relight's last
        self._last_hand: tuple | None = None  # (frame, view shape, mask): _hand_mask's last
        # This look's poorly seen round rims kept as bases: world xyz -> their edge points
        # (world inches), for _on_token_edges once the look's tokens are known.
        self._weak_edges: dict[tuple, np.ndarray] = {}
        self._ring_labs: dict[int, np.ndarray] = {}  # this frame in each view (_find_rings)
        self._halfs: dict[tuple[int, int], np.ndarray] = {}  # half-size evidence per (view, side)
        self._frame_background: np.ndarray | None = None  # a frame standing in for the empty table
        self._usable: dict[int, np.ndarray] = {}  # per view: where rims can be seen, this look (_find_bases)
        self._mini_seen: list[np.ndarray] = []  # small white-rimmed bases seen not to be paper (_paper_rim)
        self._edge_bias_seen: dict[int, Any] = {}  # each side's, from its whole rims (_edge_bias)
        self._edge_bias_memo: dict[int, float | None] = {}  # their medians, until the next rim is seen
        self._rim_warned: set[int] = set()  # sides whose rims set-up warns are close to the mat's colour
        self._wall_share_seen: dict[int, Any] = {}
        self._wall_share_memo: dict[int, float] = {}  # their medians, until the next is seen
        self._background_bgr = background
        self._tag_pos: dict[int, np.ndarray] = {}  # where each token tag was last read
        # State tokens share ids (every "activated" token is id 80): where each was read.
        self._state_tag_pos: list[tuple[int, np.ndarray]] = []
        # Discs named by likeness (_name_discs): [xy, candidate ids, summed Likeness,
        # looks, last look]. A token lies still: its looks are averaged, and after
        # ``name_looks`` of them it is not drawn again (~11 ms a look).
        self._name_votes: list[list] = []
        # Rim colours as this camera and light show them (_rim_paint, _rim_seen,
        # _rim_in_use): set with the table's light in set_background, then they follow
        # the rims fitted with confidence (see _learn_rims).
        self._table_colour = np.zeros(3, np.float32)
        # Oval and rectangular bases are only looked for where some side fields them.
        self._shaped = [(s.index, b) for s in config.sides for b in getattr(s, "shaped", ())]
        self.refiner = BaseRefiner.shipped()  # (vision.refiner; its uses: refine_below and on)
        self.stand_refiner = StandRefiner.shipped()  # (vision.stand_refiner: _stands_refined)
        self.quarter_reader = QuarterReader.shipped()  # (vision.stand_refiner: _quarters_read)
        self.shape_reader = ShapeReader.shipped()  # (vision.shape_reader: _shapes_read)
        self._shape_kernels: dict = {}
        # Token tags read up close, and what earlier looks read (vision.tag_reader).
        self.tags = TagReader(camera, self.px_per_in, self.image_size, config.table.dictionary, self._token_kind,
                              KIND_STATE, self._token_ids_key)
        self._ring_spectra: dict = {}  # ring kernels' spectra by image size (_correlate_many)
        # Outline kernels' spectra by image size (_filter_many), for full looks' blobs and
        # for follows' windows apart (a follow's angles are many, and would crowd them out).
        self._shape_spectra: dict = {}
        self._follow_spectra: dict = {}
        self._shade_rings: dict = {}  # (base radius, px/in) -> offsets round it (_out_of_shadow)
        self._disc_ev: tuple | None = None  # this look's token-disc evidence (_disc_evidence)
        self._doubts: list[_Patch] = []  # this look's patches the rules could not name (_unnamed)
        self._refused_shapes: list[dict] = []  # this look's shaped fits refused at their size (_rounds_as_outline)
        self._build_views()

    def __getstate__(self) -> dict:
        # (Sent to the look worker: the last frame's caches are not.)
        return {**self.__dict__, "_last_relit": None, "_last_hand": None, "_disc_ev": None,
                "_shape_spectra": {}, "_follow_spectra": {}, "_lit_fg": {}}

    def detect(self, frame: np.ndarray, markers: Any = None) -> Detections:
        """Bases, tokens and terrain in one frame. ``markers``: the frame's ArUco
        detections (calibration.markers.MarkerDetections) if the caller already has them
        (large token tags are then taken from them; small ones are always read up
        close from the token discs found)."""
        t0 = time.perf_counter()
        if self._background_bgr is None:
            self.set_background(frame)
            self._frame_background = frame
        raw = frame
        frame = self.relight(frame)
        floor_bgr = self.floor.sample(frame)
        lab = _lab(floor_bgr)
        t1 = time.perf_counter()
        hand = self._hand_mask(frame)
        self._doubts = []
        bases, t2 = self._find_bases(frame, lab, hand)
        t3 = time.perf_counter()
        # A tag not read yet (a shadow over it) is read again at every full look until it is.
        look_for_tokens = self.tokens_every <= 1 or self._full_count % self.tokens_every == 0 \
            or any(not read for _, read in self._paper_discs)
        self._full_count += 1
        if look_for_tokens:
            # Terrain is part of the empty table, so it leaves no token evidence: tokens
            # right beside a piece (inside its image outline) are still looked for.
            not_here, hidden = self._not_token_places(bases)
            tokens = self._tokens(frame, floor_bgr, lab, self.floor.valid & ~hand, markers, not_here, hidden)
            bases, tokens = self._settle_discs(bases, tokens, lab, frame)
            tokens = Detections.merge([tokens, self._tokens_by_terrain(lab, bases, tokens, self.floor.valid & ~hand)])
            self._last_tokens = tokens
        else:
            # Tokens not looked for: the ones last found still claim their discs.
            bases, _ = self._settle_discs(bases, self._last_tokens, lab, frame)
            tokens = Detections()
        if self.config.epic is not None:
            # A side's stands beyond its units' count, counted once the tokens have taken
            # their discs: a paper disc read as a white stand had taken a real stand's
            # place under the count (the token then took the phantom away). Stands turned a
            # quarter across two are those two first (each would count one).
            bases = self._quarters_read(raw, bases)
            keep, unsure = self._within_epic_roster(bases)
            bases = bases[keep]
            bases.rivals = bases.rivals | unsure[keep]
            for more_stands in (self._stands_units_lack, self._stands_in_gaps):
                more = more_stands(Detections.merge([bases, tokens if look_for_tokens else self._last_tokens]))
                if len(more):
                    bases = Detections.merge([bases, more])
            if self.lone_stands_unsure:
                bases.rivals = bases.rivals | self._lone_stand_rivals(bases)
        self._stands_refined(raw, bases)
        # (Sides first: a weak round's side is read from its rim whatever its shape, and
        # a round the shape reader makes an oval is no longer a weak round.)
        self._sides_read(raw, bases)
        bases = self._shapes_read(raw, bases)
        bases = self._ends_read_as_outline(raw, bases)
        self._refined(raw, bases)
        bases = self._overlaps_parted(bases)
        self._size_doubted(raw, bases)
        open_ = self._unnamed(bases, tokens if look_for_tokens else None)
        named, open_ = self._doubts_read(raw, bases, open_)
        if len(named):
            if look_for_tokens:
                tokens = tokens[~self._on_named_bases(tokens, named)]
            bases = Detections.merge([bases, named])
            if self.read_made_shapes:
                bases = self._shapes_read(raw, bases, since=len(bases) - len(named))
        t4 = time.perf_counter()
        self.timings_ms = {"rectify": (t1 - t0) * 1e3, "rings": (t2 - t1) * 1e3, "select": (t3 - t2) * 1e3,
                           "tokens": (t4 - t3) * 1e3}
        out = Detections.merge([bases, tokens], terrain=self.terrain, hand_mask=hand, hands=bool(hand.any()),
                               hand_view=self.floor, doubts=self._as_doubts(open_))
        out.tokens_checked = look_for_tokens
        return out

    def _find_bases(self, frame: np.ndarray, lab: np.ndarray, hand: np.ndarray,
                    platforms: list[int] | None = None) -> tuple[Detections, float]:
        """The bases of a look: rings, arcs and stands found and fitted in the floor view
        (``lab``: the frame in it, ``hand``: its hand mask) and in the platform views
        (``platforms``: only those, by index). Also the time the search ended (for the
        timings)."""
        usable = self.floor.valid & ~self._terrain_mask_floor & ~hand
        self._usable = {-1: usable}
        self._refused_shapes = []
        self._lit_fg: dict[int, np.ndarray] = {}  # (_lit_foreground, per view, this look)
        evs: dict[tuple[int, int], np.ndarray] = {}
        cands = self._find_rings(lab, self._rims_floor, usable, -1, evs)
        platform_labs = {}
        for i, (piece, view, inside) in enumerate(self.platform_views):
            if platforms is not None and i not in platforms:
                continue
            plab = _lab(view.sample(frame))
            platform_labs[i] = plab
            self._usable[i] = inside & view.valid
            cands += self._find_rings(plab, self._rims_platforms[i], self._usable[i], i, evs)
        t2 = time.perf_counter()
        fits = self._refine(cands, evs)
        if self.arc_candidates:  # rims seen only in part, where no rim was fitted
            arcs = [c for (v, side), half in self._halfs.items()
                    for c in self._arc_candidates(half, side, v, fits)]
            if arcs:
                fits += self._refine(arcs, evs)
        if self._shaped:
            fits += self._refine_shapes(self._find_shapes(evs), evs)
        if self.sides_by_colour:
            self._sides_by_colour(fits, evs)
        if self.learn_rim_colours and platforms is None:
            self._learn_rims(fits, {-1: lab, **platform_labs})
        bases = self._bases_from_candidates(fits, roster=platforms is None)
        if self.rounds_as_outlines and platforms is None and self._refused_shapes and self.config.epic is None:
            # (A whole look's bases against the roster: a window's say nothing of it.)
            explained = self._rounds_as_outline(fits, bases)
            if explained is not None:
                fits = explained
                bases = self._bases_from_candidates(fits, roster=True)
        # (Round bases only in a whole look: a window's bases say nothing of the roster.)
        whole_look = self.pursue_rounds and platforms is None
        if (self._shaped and self._roster_short_of_shaped(bases)) or (whole_look and self._outlines_short(bases)):
            # Stands too small for their rims to fit, where the bases found leave
            # foreground unexplained (_pursued_stands): the selection again, with them.
            # (Only while some side has fewer of its oval or rectangular bases found than
            # its roster lists: with every one found there is none left to look for.)
            # (Not near a hand: its shadow, dark mat in a stand's size, is foreground too.)
            near_hand = self._near_hand(hand)
            pursued = self._pursued_stands(lab, usable & ~near_hand, evs, bases, whole_look, platform_labs, near_hand)
            over = [(c, c.pop("replaces")) for c in pursued if "replaces" in c]
            if over:
                # Round bases an outline's pursuit explained better (_pursued_stands) go,
                # and with them any other round rim of that side inside the outline seen
                # under half its circle: the outline explains its patch, and a circle
                # along its rim would take the place again (a 50 mm arc on a 75 x 42 mm
                # oval's end, once the 32 mm one there was gone).
                S = self.px_per_in
                fits = [f for f in fits if f.get("shape", 0) or not any(
                    c["view"] == f["view"] and c["side"] == f["side"] and (
                        any(np.hypot(f["col"] - x, f["row"] - y) < 2.0 for x, y in xys)
                        or (f["score"] < self.suspect_round_coverage
                            and depth_inside(f["col"], f["row"], SHAPE_NAMES[c["shape"]], c["size_mm"][0] / MM_PER_IN * S,
                                             c["size_mm"][1] / MM_PER_IN * S, c["col"], c["row"],
                                             math.degrees(c["theta"])) > 0))
                    for c, xys in over)]
            if self.sides_by_colour:
                self._sides_by_colour(pursued, evs)
            if pursued:
                bases = self._bases_from_candidates(fits + pursued, roster=platforms is None)
        bases = self._drop_platform_overhang(bases)
        bases = self._files_aligned(bases, evs)
        if self.propose_rounds and whole_look and self.config.epic is None and self.refiner is not None \
                and self._bg_floor is not None:
            self._proposed_rounds(lab, usable, hand, bases, platform_labs)
        unsure = np.zeros(len(bases), np.int64)
        if platforms is None and self.config.epic is None:
            unsure = self._beyond_roster(bases)
        # (Epic stands beyond the units' count: once the tokens have taken their discs,
        # in detect.)
        bases.rivals = self._side_rivals(bases, evs) | unsure | bases.rivals
        return bases, t2

    def detect_region(self, frame: np.ndarray, window: tuple[slice, slice]) -> Detections:
        """Bases only, looked for as ``detect`` looks for them but only in ``window``
        (rows, cols of the floor view; the platforms that reach into it): where the
        picture changed since the last look, a fraction of a whole look's work. Tokens
        are not looked at (``tokens_checked`` False: the tracker keeps them), but the
        ones last found still claim their discs. Bases whose edge the window cuts are
        left out (half a rim fits anywhere): the caller widens the window round what it
        wants looked at. Coordinates are the whole table's, as ``detect`` gives them."""
        if self._background_bgr is None or self._rims_floor is None:
            return self.detect(frame)
        t0 = time.perf_counter()
        # Rings are searched at half resolution: the window starts on an even row and
        # column, so that its half-size pixels are the whole view's.
        (r0, r1, _), (c0, c1, _) = window[0].indices(self.floor.shape[0]), window[1].indices(self.floor.shape[1])
        window = (slice(r0 - r0 % 2, r1), slice(c0 - c0 % 2, c1))
        frame = self.relight(frame)
        hand = self._hand_mask(frame)
        whole = (self.floor, self._bg_floor, self._terrain_mask_floor, self._rims_floor)
        view = self.floor.crop(window)
        x0, y0, x1, y1 = view.x0, view.y0, view.x1, view.y1
        platforms = [i for i, (_, v, _) in enumerate(self.platform_views)
                     if v.x0 < x1 and v.x1 > x0 and v.y0 < y1 and v.y1 > y0]
        seen_before = list(self._mini_seen)
        self.floor, self._bg_floor = view, self._bg_floor[window]
        self._terrain_mask_floor, self._rims_floor = self._terrain_mask_floor[window], self._rims_floor.crop(window)
        try:
            lab = _lab(view.sample(frame))
            t1 = time.perf_counter()
            bases, t2 = self._find_bases(frame, lab, hand[window], platforms)
            bases, _ = self._settle_discs(bases, self._last_tokens, lab, frame)
        finally:
            self.floor, self._bg_floor, self._terrain_mask_floor, self._rims_floor = whole
            # Small white-rimmed bases known not to be paper: those outside the window still are.
            self._mini_seen = self._mini_seen + [p for p in seen_before
                                                 if not (x0 <= p[0] <= x1 and y0 <= p[1] <= y1)]
        if len(bases):
            r = np.where(bases.shape > 0, np.hypot(bases.size_mm[:, 0], bases.size_mm[:, 1]),
                         bases.base_mm) / MM_PER_IN / 2 + 0.1
            x, y = bases.xyz[:, 0], bases.xyz[:, 1]
            bases = bases[(x - r >= x0) & (x + r <= x1) & (y - r >= y0) & (y + r <= y1)]
        self.timings_ms = {"rectify": (t1 - t0) * 1e3, "rings": (t2 - t1) * 1e3,
                           "select": (time.perf_counter() - t2) * 1e3}
        out = Detections.merge([bases], terrain=self.terrain, hand_mask=hand, hands=bool(hand.any()),
                               hand_view=self.floor)
        out.tokens_checked = False
        out.sizes_found = False
        return out
