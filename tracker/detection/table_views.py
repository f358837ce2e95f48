"""The table as the detector sees it: views, light, hands and the error of a place.

In: the camera, the empty table (``table.jpg``), terrain and a frame.
Out: ``PlaneView``s (the frame re-sampled top-down at the floor's and each platform's base-top
height, so rims are true circles of known size) and the empty table in each; the frame
re-lit to the empty table's light (``relight``); the mask of hands over the table
(``hand_mask``); each found place's 1-sigma error, calibration's and the fit's
(``calibration_sigma``, ``_add_sigma``).
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np
import shapely.geometry

from ..calibrate import RIM_CONTRAST_MIN, rim_contrasts
from ..vision.base_crops import camera_nadir
from ..vision.colour import TableLight, paper_white
from ..vision.colour import detector_lab as _lab
from ..vision.hands import hand_skin
from ..vision.rim_evidence import RimColours
from ..vision.rim_fit import rim_fit_sigma
from ..vision.tokens import TokenStyles
from ..vision.views import PlaneView, _plane_map
from ..world import MM_PER_IN, PATCH_SIGMA_IN, TerrainPiece
from .detections import KIND_BASE, Detections
from .patches import PURSUE_HAND_MARGIN_IN
from .tokens import TOKEN_COLOURS_BGR

PURSUED_SIGMA_PX = 1.5  # the 1-sigma of a stand found as foreground, per axis (see _add_sigma)
# ... and of a larger base found so (_pursued_outline): world.PATCH_SIGMA_IN.


# The hand mask is the skin found grown by this (the coarse skin test misses fingertips'
# and the arm's edges); follows mask only the skin itself.
HAND_MASK_GROWTH_IN = 0.3


#: Low terrain this thin (a felt area, a card template) is floor for the detector. A base
#: on it stands that much higher than the floor view assumes, which moves its found centre
#: by height x (distance from the camera's nadir / camera height): 1 mm of felt, under
#: 0.03 in; the most this allows, ~0.07 in at a 6 x 4 ft table's corner.
FLAT_TERRAIN_IN = 0.1


# A base stands on a platform with its middle over the platform's top, or it falls: a
# rim fitted in a platform's view whose centre lies further than this beyond the top's
# edge (three times a platform fit's error) is the edge, or the floor seen past it.
PLATFORM_TOP_MARGIN_IN = 0.15


class TableViews:
    """Set-up and per-frame views shared by every stage (a mixin of ``TableDetector``)."""

    def _native_px_per_in(self) -> float:
        """Sample the table about as finely as the camera sees it at the table centre."""
        W, D = self.config.table.play_area_in
        c = np.array([[W / 2, D / 2, 0.0], [W / 2 + 1.0, D / 2, 0.0], [W / 2, D / 2 + 1.0, 0.0]])
        uv = np.asarray(self.camera.project(c), float)
        native = 0.5 * (np.linalg.norm(uv[1] - uv[0]) + np.linalg.norm(uv[2] - uv[0]))
        return float(np.clip(round(native), 12, 40))

    def _build_views(self, resample_background: bool = True) -> None:
        self._last_relit = self._last_hand = None
        W, D = self.config.table.play_area_in
        t = self.config.base_thickness_in
        margin = 1.0
        rect = (-margin, -margin, W + margin, D + margin)
        self.floor = PlaneView.build(self.camera, t, rect, self.px_per_in, self.image_size)
        # Hands are big: they are looked for in a coarse view, the floor view's resolution
        # halved while it stays at 7.5 pixels an inch or more (a 1080p camera's 31: 7.75;
        # four times coarser, a sixteenth of the cost). Coarser still, the opening that
        # clears specks of skin colour took a hand coming in at a 720p table's edge away.
        div = 2
        while self.px_per_in / (2 * div) >= 7.5:
            div *= 2
        self.floor_hands = PlaneView.build(self.camera, t, rect, self.px_per_in / div, self.image_size)
        # Camera pixels spread over the play area (4 a square inch, at most 4000) to
        # measure the light by (relight): read one by one, no view re-sampled.
        w, h = max(1, int(W * 2)), max(1, int(D * 2))
        u, v = _plane_map(self.camera, t, 0.0, D, 2.0, w, h)
        Wi, Hi = self.image_size
        inside = np.flatnonzero(((u >= 0) & (u <= Wi - 1) & (v >= 0) & (v <= Hi - 1)).reshape(-1))
        inside = inside[np.linspace(0, len(inside) - 1, min(len(inside), 4000)).astype(int)] if len(inside) else inside
        self._probe_xy = (np.rint(v.reshape(-1)[inside]).astype(np.intp), np.rint(u.reshape(-1)[inside]).astype(np.intp))
        self._probe_size = (Hi, Wi)
        self.platform_views: list[tuple[TerrainPiece, PlaneView, np.ndarray]] = []
        self._terrain_mask_floor = np.zeros(self.floor.shape, bool)
        self._rebuild_terrain_views()
        if resample_background:
            self.set_background(self._background_bgr)

    def _rebuild_terrain_views(self) -> None:
        t = self.config.base_thickness_in
        self.platform_views = []
        self._platform_tops = []  # per platform view: where a base's centre may lie on it
        mask = np.zeros(self.floor.shape, np.uint8)
        for piece in self.terrain:
            fp = np.asarray(piece.footprint, float)
            if piece.type == "low" and piece.height_in <= FLAT_TERRAIN_IN:
                continue  # a felt wood or a rubble template: bases stand on it as on the floor
            if piece.type == "unknown":
                # Found untagged on the empty table, its height not known until a judge
                # types it: looked at as floor meanwhile. Masked, every base on it was
                # lost (a flat patch of the mat's print with straight edges, taken for
                # a piece, hid 17 of 27 fighters standing on such patches on tuning
                # tables); a tall one's bases are seen a little off their place instead.
                continue
            # Everything a terrain piece covers in the image is not floor: mask the image
            # region of its whole box (footprint from the floor to its top), seen from the
            # floor view.
            box = np.vstack([np.column_stack([fp, np.zeros(len(fp))]),
                             np.column_stack([fp, np.full(len(fp), piece.height_in)])])
            uv = np.asarray(self.camera.project(box), float)
            hull_img = cv2.convexHull(uv.astype(np.float32))
            img_mask = np.zeros((self.image_size[1], self.image_size[0]), np.uint8)
            cv2.fillConvexPoly(img_mask, np.round(hull_img).astype(np.int32), 255)
            mask |= self.floor.sample(img_mask)
            if piece.type == "platform":
                xs, ys = fp[:, 0], fp[:, 1]
                rect = (xs.min() - 0.2, ys.min() - 0.2, xs.max() + 0.2, ys.max() + 0.2)
                view = PlaneView.build(self.camera, piece.height_in + t, rect, self.px_per_in, self.image_size)
                inside = np.zeros(view.shape, np.uint8)
                cv2.fillPoly(inside, [np.round(view.to_pixel(fp)).astype(np.int32)], 255)
                self.platform_views.append((piece, view, inside > 0))
                self._platform_tops.append(shapely.geometry.Polygon(fp).buffer(PLATFORM_TOP_MARGIN_IN))
        self._terrain_mask_floor = mask > 0

    def set_terrain(self, terrain: tuple[TerrainPiece, ...]) -> None:
        self.terrain = tuple(terrain)
        self._rebuild_terrain_views()
        self.set_background(self._background_bgr)

    def set_camera(self, camera: Any) -> None:
        """Re-pose (after a camera bump): the views are rebuilt for the new camera, at the
        same table resolution. The empty table, already re-sampled into the world-aligned
        views, is kept as it is: re-sampling the old photograph through the new camera
        would misplace every colour by the bump."""
        kept = (self._bg_floor, self._bg_hands, self._bg_hands_bgr, self._bg_platforms, self._rims_floor,
                self._rims_platforms, self._gold)
        self.camera = camera
        self.tags.set_camera(camera)  # (close-ups taken through the old pose)
        self._build_views(resample_background=False)
        (self._bg_floor, self._bg_hands, self._bg_hands_bgr, self._bg_platforms, self._rims_floor, self._rims_platforms,
         self._gold) = kept

    def set_background(self, empty_table_bgr: np.ndarray | None) -> None:
        """The empty table, as the camera sees it (``table.jpg``). Without one, the first
        frame processed stands in (rims then read against a frame with bases on it,
        which costs recall where fighters stood)."""
        self._background_bgr = empty_table_bgr
        self._bg_probe = self._probe_ok = None
        # The table's white balance, from its markers' paper: rims and tokens are
        # compared with their paint colours as this camera renders them; the rims'
        # colours as seen start there.
        paper = None if empty_table_bgr is None else paper_white(empty_table_bgr, self.camera, self.config.table.markers)
        self.light = TableLight(paper)
        self._token_styles = TokenStyles.from_config(
            {k: spec.untagged_styles for k, spec in self.config.tokens.items() if spec.untagged_styles}, self.light)
        self._rim_paint = {s: lab.astype(np.float32) for s, lab, _ in self._side_lab()}
        self._rim_seen = {s: v.copy() for s, v in self._rim_paint.items()}
        self._rim_in_use = {s: v.copy() for s, v in self._rim_seen.items()}
        self._last_relit = self._last_hand = None
        if empty_table_bgr is not None and empty_table_bgr.shape[:2] == self._probe_size:
            bg = empty_table_bgr[self._probe_xy].astype(np.float32)
            ok = (bg.min(axis=1) >= 16) & (bg.max(axis=1) <= 240)
            if ok.sum() >= 200:
                self._bg_probe, self._probe_ok = bg, ok
        floor_bgr = None if empty_table_bgr is None else self.floor.sample(empty_table_bgr)
        self._bg_floor = None if floor_bgr is None else _lab(floor_bgr)
        self._bg_floor_grey = None if floor_bgr is None else \
            cv2.cvtColor(floor_bgr, cv2.COLOR_BGR2GRAY).astype(np.float32)
        self._bg_hands_bgr = None if empty_table_bgr is None else self.floor_hands.sample(empty_table_bgr)
        self._bg_hands = None if empty_table_bgr is None else _lab(self._bg_hands_bgr)
        self._bg_platforms = [] if empty_table_bgr is None else \
            [_lab(v.sample(empty_table_bgr)) for _, v, _ in self.platform_views]
        rims = [self._rim_seen[s] for s, _, _ in self._side_lab()]
        if self._bg_floor is not None:
            self._table_colour = np.median(self._bg_floor[self.floor.valid], axis=0).astype(np.float32)
        contrasts = {} if empty_table_bgr is None else rim_contrasts(self.config, self.camera, empty_table_bgr)
        self._rim_warned = {s.index for s in self.config.sides if contrasts.get(s.colour, np.inf) < RIM_CONTRAST_MIN}
        self._rims_floor = None if self._bg_floor is None else RimColours(self._bg_floor, rims)
        self._rims_platforms = [RimColours(b, rims) for b in self._bg_platforms]
        self._gold = None if self._bg_floor is None else \
            RimColours(self._bg_floor, [_lab(np.uint8([[self.light.as_seen(TOKEN_COLOURS_BGR["treasure"])]]))[0, 0]])

    def relight(self, frame: np.ndarray) -> np.ndarray:
        """``frame`` with the light put back as it was on the empty table: each colour
        channel scaled by the median ratio, over the play area, of the empty table's
        value to the frame's (fighters, tokens and hands cover a small part of the mat;
        the median does not see them). Rims, tokens and hands are all found by colour
        against the empty table: a lamp dimmed by a quarter after set-up had cost the
        eval sets 40 % of their bases (``benchmarks/robustness.py``). The frame itself
        when the light is within ``relight_within`` of the set-up's, per channel (``light_gain``:
        frame / empty table, as measured)."""
        if self._bg_probe is None or frame.shape[:2] != self._probe_size:
            return frame
        last = self._last_relit
        if last is not None and last[0] is frame:  # (the same frame again: followed, then looked at in part)
            return last[1]
        out = self._relight(frame)
        self._last_relit = (frame, out)
        return out

    def _relight(self, frame: np.ndarray) -> np.ndarray:
        now = frame[self._probe_xy].astype(np.float32)
        ok = self._probe_ok & (now.max(axis=1) < 250)  # clipped highlights say nothing
        if ok.sum() < 200:
            return frame
        now, bg = now[ok], self._bg_probe[ok]
        ratio = now / bg
        g = np.median(ratio, axis=0)
        # The median of ratios of whole levels is coarse (a dark mat's 60 levels: 2 %
        # steps): refined as the ratio of sums over the pixels within 10 % of it (both
        # images are noisy; a least-squares slope would lean low).
        inl = np.abs(ratio / g - 1.0) < 0.1
        g = np.where(inl.sum(axis=0) >= 100, (now * inl).sum(axis=0) / np.maximum((bg * inl).sum(axis=0), 1e-6), g)
        self.light_gain = g
        if np.all(np.abs(g - 1.0) < self.relight_within):
            return frame
        lut = np.clip(np.rint(np.arange(256, dtype=np.float32)[:, None] / np.maximum(g, 0.2)[None, :]), 0, 255)
        return cv2.LUT(frame, lut.astype(np.uint8).reshape(256, 1, 3))

    def _near_hand(self, hand: np.ndarray) -> np.ndarray:
        """The floor view's hand mask grown by ``PURSUE_HAND_MARGIN_IN``: a hand's shadow,
        dark mat of a base's size, is foreground too."""
        if not hand.any():
            return hand
        k = 2 * int(round(PURSUE_HAND_MARGIN_IN * self.px_per_in)) + 1
        return cv2.dilate(hand.astype(np.uint8), cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))) > 0

    def _view_at(self, x: float, y: float, z: float) -> tuple[int, PlaneView | None]:
        if z <= 0:
            return -1, self.floor
        for i, (piece, view, _) in enumerate(self.platform_views):
            if abs(piece.height_in - z) < 0.05:
                px = view.to_pixel(np.array([[x, y]]))[0]
                if 0 <= px[0] < view.shape[1] and 0 <= px[1] < view.shape[0]:
                    return i, view
        return -1, None

    def calibration_sigma(self, xyz: np.ndarray, lift: float = 0.0) -> np.ndarray | None:
        """(N,) 1-sigma horizontal error the calibration alone gives points ``xyz``
        seen ``lift`` above them (a base's top); None without a calibrated camera."""
        sig = getattr(self.camera, "position_sigma", None)
        if sig is None or not len(xyz):
            return None
        pts = np.array(xyz, float).reshape(-1, 3)
        pts[:, 2] += lift
        s = np.asarray(sig(pts), float).reshape(len(pts), -1)
        return np.linalg.norm(s, axis=1) if s.shape[1] > 1 else s[:, 0]

    def _add_sigma(self, dets: Detections, lift: float = 0.0) -> None:
        """1-sigma horizontal error of each detection: from the calibration, and for a
        round base (``lift``: its thickness) also from how much of its rim was seen
        (``rim_fit_sigma``)."""
        calib = self.calibration_sigma(dets.xyz, lift)
        if calib is None:
            return
        dets.sigma_in = calib
        # A stand found as foreground is placed by its patch (or by a rim fit it allowed,
        # a pixel or two away): 1.2-1.3 px RMS per axis against the truth on tuning tables.
        stand = (dets.shape != 0) & (dets.size_mm[:, 1] / MM_PER_IN * self.px_per_in < self.pursue_max_depth_px)
        fg = dets.from_foreground & stand
        if fg.any():
            dets.sigma_in[fg] = np.hypot(dets.sigma_in[fg], PURSUED_SIGMA_PX / self.px_per_in)
        fg = dets.from_foreground & ~stand
        if fg.any():
            dets.sigma_in[fg] = np.hypot(dets.sigma_in[fg], PATCH_SIGMA_IN)
        position = getattr(self.camera, "camera_position", None)
        round_ = (dets.kind == KIND_BASE) & (dets.shape == 0)
        if lift > 0 and position is not None and round_.any():
            fit = rim_fit_sigma(dets.xyz[round_], dets.score[round_], np.asarray(position, float), lift,
                                self.radius_prior_weight)
            dets.sigma_in[round_] = np.hypot(dets.sigma_in[round_], fit)

    def _surface_height(self, xy: np.ndarray) -> float:
        """Height of the surface at a world point: the highest platform whose footprint
        holds it, else the floor."""
        from shapely.geometry import Point, Polygon

        z = 0.0
        for piece in self.terrain:
            if piece.type == "platform" and Polygon(piece.footprint).contains(Point(float(xy[0]), float(xy[1]))):
                z = max(z, piece.height_in)
        return z

    def hand_mask(self, frame: np.ndarray) -> np.ndarray:
        """Where hands and arms cover the table in ``frame`` (floor view pixels; kept
        for the frame's own look or follow that comes next)."""
        return self._hand_mask(self.relight(frame))

    def _hand_mask(self, frame: np.ndarray, core: bool = False) -> np.ndarray:
        """Skin-coloured regions far larger than any base: hands and arms. Found in the
        coarse ``floor_hands`` view, returned at the floor view's, grown
        HAND_MASK_GROWTH_IN round the skin found (``core``: not grown). The last frame's
        is kept: a frame both followed and looked at in part (a regional look) is
        searched once."""
        last = self._last_hand
        if last is None or last[0] is not frame or last[1] != self.floor.shape:
            grown, skin = self._find_hands(frame)
            grown.setflags(write=False)
            skin.setflags(write=False)
            last = self._last_hand = (frame, self.floor.shape, grown, skin)  # (the frame held: its id cannot be reused)
        return last[3] if core else last[2]

    def _find_hands(self, frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The hand mask grown, and the skin itself (both at the floor view's size):
        ``vision.hands.hand_skin`` in the coarse view."""
        H, W = self.floor.shape
        skin = hand_skin(self.floor_hands.sample(frame), self._bg_hands, self.floor_hands.valid,
                         self.floor_hands.px_per_in, self._bg_hands_bgr)
        if not skin.any():
            none = np.zeros((H, W), bool)
            return none, none
        skin = skin.astype(np.uint8)
        g = int(self.floor_hands.px_per_in * 2 * HAND_MASK_GROWTH_IN) | 1
        mask = cv2.dilate(skin, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (g, g)))
        return (cv2.resize(mask, (W, H), interpolation=cv2.INTER_NEAREST) > 0,
                cv2.resize(skin, (W, H), interpolation=cv2.INTER_NEAREST) > 0)

    def _toward_camera(self, view: int, col: float, row: float) -> float | None:
        """The direction (radians, in ``view``'s pixels) from (``col``, ``row``) toward the
        point under the camera, or None for a camera known only as a homography or
        right over that point."""
        centre = camera_nadir(self.camera)
        if centre is None:
            return None
        v, _ = self._view_and_height(view)
        nadir = v.to_pixel(centre[None, :2])[0]
        d = nadir - (col, row)
        return None if np.hypot(*d) < 1.0 else float(np.arctan2(d[1], d[0]))

    def _empty_view(self, view: int) -> np.ndarray | None:
        """The empty table seen in ``view`` (-1 the floor, else a platform's top), as the
        frame is (Lab); None where there is none."""
        if view < 0:
            return self._bg_floor
        return self._bg_platforms[view] if view < len(self._bg_platforms) else None

    def _view_and_height(self, view: int) -> tuple[PlaneView, float]:
        """The floor view and 0 (``view`` -1), or a platform's view and its top's height."""
        if view < 0:
            return self.floor, 0.0
        piece, v, _ = self.platform_views[view]
        return v, float(piece.height_in)
