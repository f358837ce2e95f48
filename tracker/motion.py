"""Change gate: does this frame differ from the last one the pipeline looked at, and where?

At a real table most frames show a still scene (one fighter moves at a time, often
none). Each frame is reduced to a small, blurred grey image (``cv2.resize`` with
INTER_AREA to 1/``factor`` of its size: each cell is the mean of factor² pixels, so
sensor noise shrinks by ``factor``) and compared with the *reference*: the small image
of the last frame whose changes the pipeline handled. A cell has changed when its grey
level differs by more than ``k`` times the noise of the difference, estimated robustly
from the whole difference image (its median absolute value) and smoothed over frames;
a global brightness shift (exposure, an mp4 key frame) is taken out first.

``check(frame)`` compares without changing anything; then ``accept(change)`` makes the
handled cells the reference (or all of them), and cells that did not change drift
slowly toward the frame (slow lighting changes never build up into a "change").

>>> gate = MotionGate((1920, 1080))                       # doctest: +SKIP
>>> change = gate.check(frame)                             # doctest: +SKIP
>>> change.any, change.boxes()                             # doctest: +SKIP
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from .world import MM_PER_IN

__all__ = ["Change", "MotionGate", "GateMap", "Plan", "RegionMap", "held_detections", "follow_some",
           "cylinder_boxes", "unchanged_in", "change_since", "clear_of", "apart", "narrowest_radius_in"]

# |N(0, s)| has median 0.6745 s.
_MAD_TO_SIGMA = 1.0 / 0.6745


@dataclass(frozen=True)
class Change:
    """Where one frame differs from the reference. ``mask`` is per cell (one cell is
    ``factor`` x ``factor`` image pixels); ``everything``: the whole picture changed (a
    camera bump, a light switched on), so ``mask`` is all True."""

    mask: np.ndarray
    factor: int
    threshold: float   # grey levels (0-255) of the cell difference counted as change
    noise: float       # the difference's noise sigma used for it
    everything: bool = False
    small: np.ndarray | None = None  # the frame as the gate saw it (for accept)

    @property
    def any(self) -> bool:
        return bool(self.everything or self.mask.any())

    @property
    def fraction(self) -> float:
        return float(self.mask.mean())

    def cells_in_box(self, box: tuple[float, float, float, float]) -> tuple[slice, slice]:
        """Image box (x0, y0, x1, y1) in pixels → the (rows, cols) slices of cells it touches."""
        x0, y0, x1, y1 = box
        f = self.factor
        h, w = self.mask.shape
        # Plain Python on four numbers (np.clip on scalars cost ~2 ms a frame: the gate
        # asks this of every fighter, token and marker box).
        c0, c1 = math.floor(min(max(x0 / f, 0), w)), math.ceil(min(max(x1 / f, 0), w))
        r0, r1 = math.floor(min(max(y0 / f, 0), h)), math.ceil(min(max(y1 / f, 0), h))
        return slice(r0, r1), slice(c0, c1)

    def in_box(self, box: tuple[float, float, float, float]) -> bool:
        """Whether any changed cell touches the image box (x0, y0, x1, y1)."""
        return bool(self.mask[self.cells_in_box(box)].any())

    def unchanged(self, boxes: list[tuple[float, ...]]) -> list[bool]:
        """Whether nothing changed in each image box (a whole new picture changed them all)."""
        return [not self.everything and not self.in_box(b) for b in boxes]

    def boxes(self, min_cells: int = 1) -> list[tuple[int, int, int, int]]:
        """The changed regions (8-connected) as image-pixel boxes (x0, y0, x1, y1)."""
        n, _, stats, _ = cv2.connectedComponentsWithStats(self.mask.astype(np.uint8), connectivity=8)
        f = self.factor
        out = []
        for x, y, w, h, area in stats[1:]:
            if area >= min_cells:
                out.append((int(x * f), int(y * f), int((x + w) * f), int((y + h) * f)))
        return out


class MotionGate:
    """Cheap per-frame change detection against a reference frame (see the module doc).

    ``factor``: downscale (8: 1920x1080 → 240x135 cells); ``k``: threshold in noise
    sigmas; ``min_level``: the threshold never goes below this many grey levels;
    ``drift``: per-frame pull of unchanged cells toward the frame (lighting drift);
    ``grow``: cells made the reference are widened by this many cells round what
    changed (a moving edge's blur, just under the threshold, is taken in too);
    ``everything_fraction``: this share of cells changed is a new picture (camera bump).
    """

    def __init__(self, *, factor: int = 8, k: float = 8.0, min_level: float = 2.0, drift: float = 0.02,
                 grow: int = 1, everything_fraction: float = 0.5):
        self.factor = int(factor)
        self.k = float(k)
        self.min_level = float(min_level)
        self.drift = float(drift)
        self.grow = int(grow)
        self.everything_fraction = float(everything_fraction)
        self.reference: np.ndarray | None = None
        self.noise: float | None = None  # smoothed noise sigma of the cell difference

    def reset(self) -> None:
        self.reference = None
        self.noise = None

    def small(self, frame: np.ndarray) -> np.ndarray:
        """The frame as the gate compares it: grey, 1/factor size (area mean), blurred."""
        grey = frame if frame.ndim == 2 else cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        h, w = grey.shape
        size = (max(1, w // self.factor), max(1, h // self.factor))
        s = cv2.resize(grey, size, interpolation=cv2.INTER_AREA).astype(np.float32)
        return cv2.GaussianBlur(s, (3, 3), 0)

    def check(self, frame: np.ndarray | None, small: np.ndarray | None = None) -> Change:
        """Compare ``frame`` (BGR or grey) with the reference. The first frame (no
        reference yet) is all change. ``small``: the frame as ``small`` made it already
        (another gate's, of the same factor), instead of ``frame``."""
        cur = self.small(frame) if small is None else small
        if self.reference is None or self.reference.shape != cur.shape:
            return Change(np.ones(cur.shape, bool), self.factor, 0.0, float("nan"), True, cur)
        d = cur - self.reference
        d -= float(np.median(d))  # a global brightness step is not a change
        a = np.abs(d)
        sigma_now = float(np.median(a)) * _MAD_TO_SIGMA
        noise = sigma_now if self.noise is None else self.noise
        threshold = max(self.min_level, self.k * noise)
        mask = a > threshold
        everything = bool(mask.mean() >= self.everything_fraction)
        if everything:
            mask = np.ones_like(mask)
        elif self.noise is None or sigma_now < 3.0 * self.noise:
            # The noise estimate follows the quiet part of the picture, slowly.
            self.noise = sigma_now if self.noise is None else 0.9 * self.noise + 0.1 * sigma_now
        return Change(mask, self.factor, threshold, noise, everything, cur)

    def accept(self, change: Change, where: np.ndarray | None = None) -> None:
        """The pipeline handled ``change``: the cells in ``where`` (default: all of them)
        become the reference; the rest only drift toward the frame. ``where`` = the
        change's own mask for "only what changed was looked at"."""
        cur = change.small
        if cur is None:
            return
        if self.reference is None or self.reference.shape != cur.shape or where is None:
            self.reference = cur.copy()
            return
        if self.grow > 0 and where.any():  # and the blurred edge round what changed
            g = 2 * self.grow + 1
            where = cv2.dilate(where.astype(np.uint8), np.ones((g, g), np.uint8)) > 0
        ref = self.reference
        ref += self.drift * (cur - ref)
        ref[where] = cur[where]

    def drift_only(self, change: Change) -> None:
        """Nothing was looked at (a still frame): the reference only drifts toward it."""
        self.accept(change, np.zeros(change.mask.shape, bool))


def cylinder_boxes(camera, xyz: np.ndarray, radius_in: np.ndarray, height_in: float) -> list[tuple[float, ...]]:
    """Image boxes (x0, y0, x1, y1) of upright cylinders (centre xyz, radius, height) seen by the camera."""
    if not len(xyz):
        return []
    xyz = np.asarray(xyz, float).reshape(-1, 3)
    a = np.linspace(0, 2 * np.pi, 8, endpoint=False)
    # Per cylinder: 8 points round its foot, then 8 round its top, all projected at once.
    r = np.asarray(radius_in, float).reshape(-1, 1, 1)
    pts = np.empty((len(xyz), 2, 8, 3))
    pts[..., 0] = xyz[:, None, None, 0] + r * np.cos(a)
    pts[..., 1] = xyz[:, None, None, 1] + r * np.sin(a)
    pts[..., 2] = xyz[:, None, None, 2] + np.array([0.0, height_in])[None, :, None]
    uv = np.asarray(camera.project(pts.reshape(-1, 3)), float).reshape(len(xyz), 16, 2)
    lo, hi = uv.min(axis=1), uv.max(axis=1)
    return list(zip(lo[:, 0].tolist(), lo[:, 1].tolist(), hi[:, 0].tolist(), hi[:, 1].tolist()))


def unchanged_in(gate: MotionGate, then_small: np.ndarray, frame: np.ndarray,
                 boxes: list[tuple[float, ...]]) -> list[bool]:
    """Whether nothing changed in each image box between the frame ``then_small`` was
    made from (``gate.small``) and ``frame``, judged as ``gate`` judges change (its
    threshold, its noise estimate from this difference); a new picture has changed
    everywhere. ``gate`` itself is not touched."""
    return change_since(gate, then_small, frame).unchanged(boxes)


def change_since(gate: MotionGate, then_small: np.ndarray, frame: np.ndarray) -> Change:
    """What changed between the frame ``then_small`` was made from (``gate.small``) and
    ``frame``, judged as ``gate`` judges change (its threshold, its noise estimate from
    this difference). ``gate`` itself is not touched."""
    probe = MotionGate(factor=gate.factor, k=gate.k, min_level=gate.min_level,
                       everything_fraction=gate.everything_fraction)
    probe.reference = then_small
    return probe.check(frame)


# ----------------------------------------------------------------------------------
# What a change means for the pipeline


@dataclass(frozen=True)
class Plan:
    """What to do with a frame whose change is known: ``pose``: re-check the camera pose
    (something changed round a table marker); ``follow``: indices (into the tracker's
    tracks) of fighters to re-find, the others held where they are; ``full``: look at
    the whole table (a change where no known fighter is); ``tokens``: and look for
    tokens in it (a change at a token); ``elsewhere``: some change lies where no known
    fighter is. All False / empty: a still frame."""

    pose: bool = False
    follow: tuple[int, ...] = ()
    tokens: bool = False
    elsewhere: bool = False

    @property
    def full(self) -> bool:
        return self.tokens or self.elsewhere

    @property
    def kind(self) -> str:
        return "full" if self.full else "follow" if self.follow else "pose" if self.pose else "still"


class GateMap:
    """Where the table, its markers, the fighters and the tokens lie in the gate's cells,
    for one camera pose.

    ``top_in``: the highest surface (terrain) a base stands on; ``figure_in``: a
    miniature's height above its base; ``reach_in``: how far beyond its base a change
    still belongs to a fighter (the detector's follow window reaches 0.8 in).
    """

    def __init__(self, camera, table, image_size: tuple[int, int], factor: int, *, top_in: float = 0.0,
                 figure_in: float = 2.5, reach_in: float = 0.8, base_in: float = 0.16):
        from calibration.table import table_object_points

        self.camera = camera
        self.factor = int(factor)
        self.figure_in = figure_in
        self.reach_in = reach_in
        self.base_in = base_in
        W, H = image_size
        shape = (max(1, H // self.factor), max(1, W // self.factor))
        # The play area (1 in margin) from the floor to a miniature's head on the highest piece.
        w, d = table.play_area_in
        rect = np.array([[-1, -1], [w + 1, -1], [w + 1, d + 1], [-1, d + 1]], float)
        box = np.vstack([np.c_[rect, np.zeros(4)], np.c_[rect, np.full(4, top_in + base_in + figure_in)]])
        uv = np.asarray(camera.project(box), np.float64) / self.factor
        cells = np.zeros(shape, np.uint8)
        cv2.fillConvexPoly(cells, np.round(cv2.convexHull(uv.astype(np.float32))).astype(np.int32).reshape(-1, 2), 1)
        self.table_cells = cells > 0
        # Each table marker's own image box and a quarter of its size round it: what
        # changes there moves or hides the marker (a camera bump moves its pixels; a hand
        # or its shadow over it). Widened by its whole size (as PoseTracker searches), a
        # hand passing beside a marker had the pose checked in 56 of the bundled clip's
        # 360 frames, at 10 ms each.
        ids = [m.id for m in table.markers]
        quads = np.asarray(camera.project(table_object_points(table, ids).reshape(-1, 3)), float).reshape(-1, 4, 2)
        self.marker_boxes = []
        for q in quads:
            m = 0.25 * float(np.ptp(q, axis=0).max())
            (x0, y0), (x1, y1) = q.min(0) - m, q.max(0) + m
            self.marker_boxes.append((x0, y0, x1, y1))

    def _boxes(self, xyz: np.ndarray, radius_in: np.ndarray, height_in: float) -> list[tuple[float, ...]]:
        return cylinder_boxes(self.camera, xyz, radius_in, height_in)

    def fighter_boxes(self, tracks) -> list[tuple[float, ...]]:
        """Each fighter's image box: where it is and, while it moves, where it should be
        next (the change a unit sliding across the table makes ahead of it is its own)."""
        xyz = np.array([t.xyz for t in tracks], float).reshape(-1, 3)
        r = np.array([t.reach_in + self.reach_in for t in tracks])
        boxes = self._boxes(xyz, r, self.base_in + self.figure_in)
        moving = [i for i, t in enumerate(tracks) if np.any(t.vel)]
        if moving:
            ahead = self._boxes(np.array([tracks[i].predict(1) for i in moving], float), r[moving],
                                self.base_in + self.figure_in)
            for i, b in zip(moving, ahead):
                a = boxes[i]
                boxes[i] = (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
        return boxes

    def token_boxes(self, tokens) -> list[tuple[float, ...]]:
        xyz = np.array([(t.x, t.y, t.z) for t in tokens], float).reshape(-1, 3)
        return self._boxes(xyz, np.array([t.diameter_in / 2 + 0.3 for t in tokens]), 0.2)

    def plan(self, change: Change, tracks, tokens) -> Plan:
        """Decide from where ``change`` lies: markers → pose; only at known fighters →
        follow those; at a token or where no fighter is (on the table) → full look.
        Change off the table and away from the markers (people, the room) is ignored."""
        pose = any(change.in_box(b) for b in self.marker_boxes)
        on_table = change.mask & self.table_cells
        if not on_table.any():
            return Plan(pose=pose)
        explained = np.zeros_like(on_table)
        follow = []
        for i, b in enumerate(self.fighter_boxes(tracks)):
            sl = change.cells_in_box(b)
            if on_table[sl].any():
                follow.append(i)
                explained[sl] = True
        at_token = any(on_table[change.cells_in_box(b)].any() for b in self.token_boxes(tokens))
        elsewhere = bool((on_table & ~explained).any())
        return Plan(pose, tuple(follow), at_token, elsewhere)


class RegionMap:
    """Which windows of a top-down view (the detector's floor view) a change in the
    gate's cells calls for, for one camera pose: each view pixel (every ``step``-th)
    knows the gate cell it is seen in, so changed cells light up view pixels; those,
    widened by ``margin_in``, grouped into boxes (on a ``step`` grid), are the windows.

    >>> rm = RegionMap(camera, detector.floor, 8, (1920, 1080), margin_in=2.5)   # doctest: +SKIP
    >>> windows, covered = rm.windows(change.mask)                                # doctest: +SKIP
    """

    def __init__(self, camera, view, factor: int, image_size: tuple[int, int], *, margin_in: float = 2.5,
                 max_share: float = 0.6, step: int = 16):
        self.camera = camera
        self.step = int(step)
        self.shape = view.shape
        W, H = image_size
        ch, cw = max(1, H // factor), max(1, W // factor)
        # Where each sampled view pixel is in the camera image (the map's whole pixels).
        m1 = np.asarray(view.map1[step // 2::step, step // 2::step]).astype(np.int64)
        u, v = m1[..., 0], m1[..., 1]
        self.ok = np.asarray(view.valid[step // 2::step, step // 2::step]) & (u >= 0) & (v >= 0)
        self.cell_r = np.clip(v // factor, 0, ch - 1)
        self.cell_c = np.clip(u // factor, 0, cw - 1)
        self.grow = int(np.ceil(margin_in * view.px_per_in / step))
        # World x, y of the sampled pixels (spots, below).
        rows, cols = self.ok.shape
        self.sample_x = view.x0 + (np.arange(cols) * step + step // 2 + 0.5) / view.px_per_in
        self.sample_y = view.y1 - (np.arange(rows) * step + step // 2 + 0.5) / view.px_per_in
        self.max_share = float(max_share)

    def windows(self, cells: np.ndarray, skip: np.ndarray | None = None, spots=()
                ) -> tuple[list[tuple[slice, slice]] | None, np.ndarray | None]:
        """(windows, covered) for the changed ``cells``: view windows (rows, cols), none
        overlapping, and the cells those windows see (to be accepted as looked at).
        ``spots``: (x, y, radius) on the table (inches) to look at as well. ``skip``:
        view pixels (the view's shape) that call for no look (a hand over them: nothing
        under it can be seen). (None, None) when they would cover over ``max_share`` of
        the view."""
        covered = np.zeros(cells.shape, bool)
        # A changed cell between two sampled pixels still counts (cells a pixel wider).
        cells = cv2.dilate(cells.astype(np.uint8), np.ones((3, 3), np.uint8)) > 0
        hit = self.ok & cells[self.cell_r, self.cell_c]
        for x, y, r in spots:
            hit |= self.ok & (((self.sample_x[None, :] - x) ** 2 + (self.sample_y[:, None] - y) ** 2) <= r * r)
        if skip is not None:
            s2 = self.step // 2
            seen_skip = np.asarray(skip)[s2::self.step, s2::self.step][:hit.shape[0], :hit.shape[1]]
            hit &= ~seen_skip
        if not hit.any():
            return [], covered
        g = 2 * self.grow + 1
        grown = cv2.dilate(hit.astype(np.uint8), cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (g, g)))
        _, _, stats, _ = cv2.connectedComponentsWithStats(grown, connectivity=8)
        boxes = [[int(x), int(y), int(x + w), int(y + h)] for x, y, w, h, _ in stats[1:]]
        merged = True
        while merged and len(boxes) > 1:  # overlapping boxes become one (no base looked at twice)
            merged = False
            for i in range(len(boxes)):
                for j in range(i + 1, len(boxes)):
                    a, b = boxes[i], boxes[j]
                    if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]:
                        boxes[i] = [min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])]
                        del boxes[j]
                        merged = True
                        break
                if merged:
                    break
        rows, cols = hit.shape
        if sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in boxes) > self.max_share * rows * cols:
            return None, None
        s = self.step
        H, W = self.shape
        out = []
        for x0, y0, x1, y1 in boxes:
            out.append((slice(y0 * s, min(y1 * s, H)), slice(x0 * s, min(x1 * s, W))))
            ok = self.ok[y0:y1, x0:x1] if skip is None else self.ok[y0:y1, x0:x1] & ~seen_skip[y0:y1, x0:x1]
            covered[self.cell_r[y0:y1, x0:x1][ok], self.cell_c[y0:y1, x0:x1][ok]] = True
        return out, covered


def _track_row(t) -> dict:
    from .base_shapes import SHAPE_CODES
    from .detection import KIND_BASE

    return {"xyz": tuple(float(v) for v in t.xyz), "kind": KIND_BASE, "side": t.side, "base_mm": t.base_mm,
            "score": t.fit_score, "sigma_in": t.sigma_in, "shape": SHAPE_CODES[t.shape],
            "size_mm": t.size_mm if t.shape != "round" else (t.base_mm, t.base_mm), "angle_deg": t.angle_deg}


def held_detections(tracks, terrain=()):
    """Detections that say "each of these fighters is exactly where it was": what a
    frame identical to the last one looked at would show. Tokens are not looked at."""
    from .detection import Detections

    out = Detections.merge([Detections.from_rows([_track_row(t) for t in tracks])], terrain=terrain)
    out.tokens_checked = False
    out.sizes_found = False
    return out


def clear_of(bases, xy: np.ndarray, radius_in: np.ndarray) -> np.ndarray:
    """Which of ``bases`` (Detections) lie clear of the bases at ``xy`` (N, 2) with radii
    ``radius_in``: bases never overlap, so one closer to another than their radii allow
    (less measurement error) is that other base seen again, or its rim."""
    return apart(bases.xyz[:, :2], bases.base_mm / MM_PER_IN / 2, xy, radius_in)


def narrowest_radius_in(bases) -> np.ndarray:
    """Half of each base's narrowest width, inches: a round base's radius, half an oval
    or rectangular stand's depth. How near another base's centre may come: stands packed
    long edge to long edge stand a depth apart (Epic stands 0.79 in, where half their
    40 mm width each would call them one)."""
    r = bases.base_mm / MM_PER_IN / 2
    if len(bases.shape):
        r = np.where(bases.shape > 0, bases.size_mm.min(axis=1) / MM_PER_IN / 2, r)
    return r


def apart(xy: np.ndarray, radius_in: np.ndarray, other_xy: np.ndarray, other_radius_in: np.ndarray) -> np.ndarray:
    """clear_of for places given as arrays: which of the bases at ``xy`` (M, 2) with radii
    ``radius_in`` lie clear of every one at ``other_xy`` with ``other_radius_in``."""
    keep = np.ones(len(xy), bool)
    if len(xy) and len(other_xy):
        d = np.hypot(xy[:, None, 0] - other_xy[None, :, 0], xy[:, None, 1] - other_xy[None, :, 1])
        keep = np.all(d >= 0.85 * (np.asarray(radius_in)[:, None] + np.asarray(other_radius_in)[None, :]), axis=1)
    return keep


def follow_some(followed, follow_tracks, held_tracks):
    """``followed`` (detector.follow on ``follow_tracks`` only) merged with the others held.
    A re-found base whose centre lies inside a held fighter's base is that neighbour's
    rim, not the fighter (the detector checks this only among the fighters it follows)."""
    from .detection import Detections

    held = held_detections(held_tracks, followed.terrain)
    keep = apart(followed.xyz[:, :2], narrowest_radius_in(followed), held.xyz[:, :2], narrowest_radius_in(held))
    out = Detections.merge([followed[keep], held], terrain=followed.terrain, hand_mask=followed.hand_mask,
                           hands=followed.hands, hand_view=followed.hand_view)
    out.tokens_checked = False
    out.sizes_found = False
    return out
