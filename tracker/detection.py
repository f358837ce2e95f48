"""Detection: bases (with their side), tokens and terrain in one frame, in world inches.

Why it works in a rectified view: every surface a base can stand on is a horizontal
plane at a known height (the floor, a platform top). Re-sampling the camera image onto
that plane (at the height of the base's top face, where the rim is) turns every rim into
a true circle of its known radius, centred exactly above the base's centre, whatever
the camera's tilt and lens. The rim is the signal: miniatures cover most of a base and
may share the rim's colour, so the detector looks for a thin ring of the side's colour
at one of the side's base radii, not for a blob.

Colour is judged against the empty table (``table.jpg``): each pixel is explained as a
mix of the background seen there and a side's rim colour; the mix fraction is the rim
evidence. That keeps a green rim on green grass, or a white rim on pale sand, visible.

Detections are one dataclass of parallel numpy arrays (the Roboflow supervision model),
filtered with boolean masks: ``dets[dets.side == 0]``.
"""

from __future__ import annotations

import functools
import math
import time
import warnings
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

import cv2
import numpy as np
import shapely.geometry

from .base_shapes import SHAPE_CODES, SHAPE_NAMES, depth_inside, fit_shapes, outline_kernel, outline_samples, shape_polygon
from .calibrate import RIM_CONTRAST_MIN, rim_contrasts
from .config import GameConfig
from .world import MM_PER_IN, PATCH_SIGMA_IN, Doubt, TerrainPiece
from .vision.bare import BARE_SHARE, change_evidence, changed_share
from .vision.base_crops import camera_nadir
from .vision.colour import TableLight, paper_white
from .vision.colour import detector_lab as _lab
from .vision.hands import hand_skin
from .vision.filters import (_blob_boxes, _correlate_many, _filter_many, _local_maxima, _nearest_peak_key,
                             _subpixel_peaks, ring_kernel)
from .vision.pursuit import along_outline, read_at, rim_offsets, rim_shares, roster_short, side_of_patch
from .vision.refiner import SIZES_MM, BaseRefiner
from .vision.remap import remap_rows
from .vision.rim_evidence import RimColours, _mix_evidence, _neutral_lift, rim_evidence  # noqa: F401 (re-exported)
from .vision.rim_fit import (_circle_at_radius, _fit_rims, _fit_rims_at, _inside_rims, _rim_edge_points,
                             _wall_share_of, rim_fit_sigma)
from .vision.rim_fit import _ray_edges  # noqa: F401 (re-exported)
from .vision.stands import (Outline, boundary, boundary_offset, covered, foreground, inside_mean,
                             outline_on_boundary, pursue, response_at, shadow)
from .vision.tags import _ellipse, _mean, _search_grids, _std  # noqa: F401 (re-exported)
from .vision.tag_match import Likeness, assign, likeness
from .vision.tag_reader import TOKEN_THICKNESS_IN, TagReader
from .vision.tokens import TokenStyles, face_samples, neutral_middle, objective_face
from .vision.views import PlaneView, _plane_map

KIND_BASE, KIND_OBJECTIVE, KIND_TREASURE = 0, 1, 2
# The learned refiner's error per base: its validation RMS (0.040 in, tuning tables and our
# own renders it was not trained on), as which its place is weighed; and the sigma a base
# it placed is stated with at least (its RMS on crescents at 720p on unseen tuning
# tables, 0.09 in, rounded up: an honest margin for "too close to call"). See _refined.
REFINER_ERROR_IN, REFINED_SIGMA_IN = 0.04, 0.1
BASES_APART = 0.8  # two bases' centres lie at least this share of their radii's sum apart (_doubts_read)
PURSUE_HAND_MARGIN_IN = 1.0  # a hand's shadow reaches about this far past it on renders
PURSUED_SIGMA_PX = 1.5  # the 1-sigma of a stand found as foreground, per axis (see _add_sigma)
# ... and of a larger base found so (_pursued_outline): world.PATCH_SIGMA_IN.
TOKEN_LIKE = 0.15  # a round outline within this share of a token's size is a token's as much
# A tagged state token (activation, damage: ids 80-99), never an objective or treasure.
KIND_STATE = 3
KIND_NAMES = {KIND_BASE: "base", KIND_OBJECTIVE: "objective", KIND_TREASURE: "treasure", KIND_STATE: "state"}
STATE_TAG_RANGE = (80, 99)
# The hand mask is the skin found grown by this (the coarse skin test misses fingertips'
# and the arm's edges); follows mask only the skin itself.
HAND_MASK_GROWTH_IN = 0.3
_GREY_BGR = np.array([0.114, 0.587, 0.299], np.float32)  # (as cv2's BGR2GRAY weighs them)
# Plain tokens' colours (eval sets: treasure is gold, objectives white with a black ring).
TOKEN_COLOURS_BGR = {"treasure": (40, 175, 215), "objective": (235, 235, 235)}


# A base's side is sure when its rim was seen on at least this share of its outline (the
# fit's score) ...
SIDE_SURE_SCORE = 0.25
# ... else, every side whose rim evidence along the outline (RIM_BAND_IN inside its edge)
# is at least this share of its own side's, and above RIVAL_LEAST, could be its side.
SIDE_RIVAL_SHARE = 0.5
RIVAL_LEAST = 0.005
RIM_BAND_IN = 0.045

# A plain disc of a token's colour beyond the game's count of them is dropped only when
# its score is under this share of the last one kept (scores of token faces: 0.7-1.0).
TOKEN_CAP_MARGIN = 0.9


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


@functools.lru_cache(maxsize=1)
def _shipped_refiner() -> BaseRefiner | None:
    """The shipped refiner, read once for every detector; None where it is not there."""
    return BaseRefiner.load()


@dataclass
class Detections:
    """What one frame shows. Row i of every array describes detection i.

    xyz: (N,3) world inches (x, y of the base's bottom centre or token centre; z of the
    surface it stands on); kind: (N,) KIND_*; side: (N,) side index, -1 for tokens;
    base_mm: (N,) base diameter (0 for tokens); tag_id: (N,) ArUco id or -1;
    score: (N,) detector confidence 0..1; sigma_in: (N,) 1-sigma horizontal error.
    """

    xyz: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    kind: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    side: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    base_mm: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tag_id: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    score: np.ndarray = field(default_factory=lambda: np.zeros(0))
    sigma_in: np.ndarray = field(default_factory=lambda: np.zeros(0))
    # Base shape (base_shapes.SHAPE_CODES: 0 round, 1 oval, 2 rect), size (width >= depth,
    # mm; the diameter twice for round) and the long axis' world angle (deg, [0, 180)).
    shape: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    size_mm: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    angle_deg: np.ndarray = field(default_factory=lambda: np.zeros(0))
    # True: a base found as a patch of its outline's shape that is not the empty table
    # (vision.stands), its rim too thin to fit; it gives way to any token on it.
    from_foreground: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    # The other sides a base's rim could be (bit s set: side s), where its rim was seen too
    # little to be sure of its side (_side_rivals); 0 where its side is sure.
    rivals: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # Frame-level observations (not per row).
    terrain: tuple[TerrainPiece, ...] = ()
    hand_mask: np.ndarray | None = None  # rectified floor mask of hands/arms over the table
    hands: bool = False
    tokens_checked: bool = True  # False: tokens were not looked for this frame
    hand_view: Any = None  # the PlaneView hand_mask is drawn in
    # False: the bases were measured at the sizes the tracker gave (a follow, or held),
    # not found at any size, so they say nothing of a fighter's size.
    sizes_found: bool = True
    # Places of a base's size and shape that a whole look could not name (world.Doubt).
    doubts: tuple[Doubt, ...] = ()

    def __post_init__(self) -> None:
        if len(self.from_foreground) != len(self.kind):  # (rows made without it: none so found)
            self.from_foreground = np.zeros(len(self.kind), bool)
        if len(self.rivals) != len(self.kind):  # (rows made without them: every side sure)
            self.rivals = np.zeros(len(self.kind), np.int64)

    def hand_over(self, x: float, y: float, radius_in: float = 0.0) -> bool:
        """Whether a hand or arm covers the table at world (x, y) in this frame (anywhere
        within ``radius_in`` of it)."""
        if self.hand_mask is None or self.hand_view is None or not self.hands:
            return False
        c, r = np.round(self.hand_view.to_pixel(np.array([[x, y]]))[0]).astype(int)
        h, w = self.hand_mask.shape
        if radius_in <= 0.0:
            return bool(0 <= r < h and 0 <= c < w and self.hand_mask[r, c])
        k = int(np.ceil(radius_in * self.hand_view.px_per_in))
        rows, cols = np.ogrid[max(r - k, 0):min(r + k + 1, h), max(c - k, 0):min(c + k + 1, w)]
        disc = (rows - r) ** 2 + (cols - c) ** 2 <= k * k
        return bool(disc.size and self.hand_mask[rows, cols][disc].any())

    _ROW_FIELDS = ("xyz", "kind", "side", "base_mm", "tag_id", "score", "sigma_in", "shape", "size_mm", "angle_deg",
                   "from_foreground", "rivals")

    def __len__(self) -> int:
        return len(self.kind)

    def __getitem__(self, index: Any) -> "Detections":
        rows = {name: getattr(self, name)[index] for name in self._ROW_FIELDS}
        return Detections(**rows, terrain=self.terrain, hand_mask=self.hand_mask, hands=self.hands,
                          tokens_checked=self.tokens_checked, hand_view=self.hand_view, sizes_found=self.sizes_found,
                          doubts=self.doubts)

    @classmethod
    def merge(cls, parts: list["Detections"], **frame_level: Any) -> "Detections":
        if not parts:
            return cls(**frame_level)
        rows = {name: np.concatenate([getattr(p, name) for p in parts]) for name in cls._ROW_FIELDS}
        return cls(**rows, **frame_level)

    @classmethod
    def from_rows(cls, rows: list[dict[str, Any]]) -> "Detections":
        if not rows:
            return cls()
        return cls(
            xyz=np.array([r["xyz"] for r in rows], float).reshape(-1, 3),
            kind=np.array([r["kind"] for r in rows], int),
            side=np.array([r.get("side", -1) for r in rows], int),
            base_mm=np.array([r.get("base_mm", 0.0) for r in rows], float),
            tag_id=np.array([r.get("tag_id", -1) for r in rows], int),
            score=np.array([r.get("score", 1.0) for r in rows], float),
            sigma_in=np.array([r.get("sigma_in", 0.0) for r in rows], float),
            shape=np.array([r.get("shape", 0) for r in rows], int),
            size_mm=np.array([r.get("size_mm", (r.get("base_mm", 0.0),) * 2) for r in rows], float).reshape(-1, 2),
            angle_deg=np.array([r.get("angle_deg", 0.0) for r in rows], float),
            from_foreground=np.array([r.get("from_foreground", False) for r in rows], bool),
            rivals=np.array([r.get("rivals", 0) for r in rows], np.int64),
        )

    def rival_sides(self, i: int) -> tuple[int, ...]:
        """The other sides row ``i``'s rim could be (``rivals``), lowest first."""
        bits = int(self.rivals[i]) if len(self.rivals) else 0
        return tuple(s for s in range(bits.bit_length()) if bits >> s & 1)


# ----------------------------------------------------------------------------------
# Rectified views


#: Low terrain this thin (a felt area, a card template) is floor for the detector. A base
#: on it stands that much higher than the floor view assumes, which moves its found centre
#: by height x (distance from the camera's nadir / camera height): 1 mm of felt, under
#: 0.03 in; the most this allows, ~0.07 in at a 6 x 4 ft table's corner.
FLAT_TERRAIN_IN = 0.1
# A base stands on a platform with its middle over the platform's top, or it falls: a
# rim fitted in a platform's view whose centre lies further than this beyond the top's
# edge (three times a platform fit's error) is the edge, or the floor seen past it.
PLATFORM_TOP_MARGIN_IN = 0.15


# ----------------------------------------------------------------------------------
# Ring matching


@dataclass
class _Candidate:
    row: float
    col: float
    side: int
    base_mm: float
    score: float
    view: int


# ----------------------------------------------------------------------------------


def _on_bases(rows: np.ndarray, cols: np.ndarray, not_here: np.ndarray | None) -> np.ndarray:
    """Which peaks of a half-resolution response map (``rows``, ``cols``) lie on a base
    found by its rim (``not_here``, at full resolution). Such discs are looked at after
    every disc off the bases, never instead of them: a stand's miniature is a patch of
    change of a token's size (on an Epic tuning table 12 of the token search's 14 discs
    were stands, and three of its five objectives were never looked at), while a paper
    disc can itself be read as a base's rim (_settle_discs decides). The map is left as
    it was: zeroed there, it would read as unchanged table round a patch beside a stand."""
    if not_here is None or not len(rows):
        return np.zeros(len(rows), bool)
    return not_here[np.clip(2 * rows, 0, not_here.shape[0] - 1), np.clip(2 * cols, 0, not_here.shape[1] - 1)]


class TableDetector:
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
        # Ring correlation: generous, candidates are fitted next. A green rim on a green
        # mat, its miniature hiding all but a thin arc of it, rings at 0.054: at 0.06
        # it was never found (93.4 % recall on that clip); the eval sets are the same.
        self.score_threshold = 0.05
        self.tokens_every = 1  # look for tokens in every n-th full detection (the tracker holds them between)
        self.max_state_tokens = 24  # state-token discs looked at per look (recognition on)
        # A token disc whose tag is not read (yet): a printed tag's black square border
        # against the paper round it scores 75-140 in TagReader's search, a miniature on a
        # 25 mm base (white rims included) 40 or less; see _settle_discs.
        self.tag_face_min = 60.0
        # ... and it is near some token's code (cells wrong, of 16; a miniature: 15 or
        # more; a plain objective's black ring is as dark as a tag's border, but 19).
        self.tag_face_cost = 6.0
        # Token discs not reported as tokens that are still paper, never bases: (xy, read)
        # a tag face not read (yet), or a state tag this table gives no meaning.
        self._paper_discs: list[tuple[np.ndarray, bool]] = []
        self._full_count = 0
        self._last_tokens = Detections()
        self.learn_rim_colours = False  # on: more rims found where light dulls them, more false ones too
        self.light_gain = np.ones(3, np.float32)  # the frame's light / the empty table's, per channel (relight)
        self._last_relit: tuple | None = None  # (frame, relit): relight's last
        self._last_hand: tuple | None = None  # (frame, view shape, mask): _hand_mask's last
        # Within 8 % of the set-up's light a frame is used as it is: the detector takes
        # that in its stride (our own clips' video frames sit 5-7 % bluer than their
        # table.jpg, a codec's shift; re-lit, the Warcry clip lost 0.003 in of RMS), and a
        # dimming of 10 % does not (recall 98.6 %, floor RMS 0.055 in on the eval sets
        # un-relit; re-lit 99.4 %, 0.026 in).
        self.relight_within = 0.08
        self.min_coverage = 0.18  # share of the rim's circle seen as a clean edge
        self.min_arc_mm = 0.18 * np.pi * 40.0  # ... and for bases over 40 mm, this length of it
        # Partly hidden rims: centres voted for by the rim's edge (_arc_candidates).
        self.arc_candidates = True
        self.arc_threshold = 0.02
        # A fitted rim round bare table, or round a solid disc of its colour, is no base
        # (_base_body): middle changed from the empty table, at least; a solid disc: edge
        # points thin, at most, and rim evidence over the middle, over.
        self.bare_middle_max = 0.15
        self.solid_thin_max, self.solid_middle_min = 0.26, 0.5
        # A rim seen in small part with base all round it, no bare table just beyond, is
        # a circle inside a bigger base of its colour (_bare_beyond): below this score,
        # at most this share of bare table 0.08-0.16 in past it; and under the second share it
        # gives way to a larger rim of its side round it (_ranks).
        self.inside_check_below, self.inside_bare_max, self.inside_gives_way_bare = 0.35, 0.2, 0.4
        # A kept base's rim explains another's edge points up to this far outside its edge.
        self.explained_margin_px = 1.5
        # This look's poorly seen round rims kept as bases: world xyz -> their edge points
        # (world inches), for _on_token_edges once the look's tokens are known.
        self._weak_edges: dict[tuple, np.ndarray] = {}
        self.token_edges_explain = True
        # A side fields the round bases its roster (``bases_mm``) lists; a whole look holds
        # what it found against them (_bases_from_candidates). Where a side is short of a
        # size, a rim of it seen this much of its least share (and whose own circle is
        # within this many pixels of the size's) is that base; where a side has one too
        # many of a size, a rim of a size it is short of, seen this much of the surplus
        # one's score, takes that one's place. On the shared sets, as given and with a
        # worse picture (benchmarks/robustness.py), 0.8 / 1 px / 0.9 found more bases and
        # placed some better; with every roster doubled (every side short of every size,
        # as after casualties) they added none (docs/benchmarks.md). 1 / any / >1: no say.
        self.roster_relax, self.roster_radius_px, self.roster_swap_share = 0.8, 1.0, 0.9
        self._ring_labs: dict[int, np.ndarray] = {}  # this frame in each view (_find_rings)
        self._halfs: dict[tuple[int, int], np.ndarray] = {}  # half-size evidence per (view, side)
        self._frame_background: np.ndarray | None = None  # a frame standing in for the empty table
        self._usable: dict[int, np.ndarray] = {}  # per view: where rims can be seen, this look (_find_bases)
        self._mini_seen: list[np.ndarray] = []  # small white-rimmed bases seen not to be paper (_paper_rim)
        self.edge_bias_px = 0.8  # the half-evidence edge lies outside the rim (blur)
        self._edge_bias_seen: dict[int, Any] = {}  # each side's, from its whole rims (_edge_bias)
        self._edge_bias_memo: dict[int, float | None] = {}  # their medians, until the next rim is seen
        self.inner_rim_share = 0.7  # see _ranks
        self.inner_rim_margin_in = 0.15  # how far such an inner circle may stick out of the outer (_ranks)
        self.radius_prior_weight = 16.0  # a size's expected radius counts as this many edge points
        # ... but not for a side set-up warns is close to the mat's colour: its edge lies
        # further out the further from the nadir (0.6 px near it, 2 px 14 in out on our
        # renders; the colour's own blur), so the offset learnt from its whole rims is
        # wrong for most of its crescents. Our renders 0.0301 -> 0.0275 in; the shared
        # sets, whose one warned side keeps its offset better, 0.0248 -> 0.0251.
        self.warned_prior_weight = 0.0
        # How much of a painted side wall's apparent width reads as rim, per side, learnt
        # from its whole rims (_wall_px, _learn_edge_bias); until three are seen, none.
        self.wall_share_start = 0.0
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
        self.name_looks = 3
        # A token's name kept at this likeness (normalised correlation) or more, and
        # when every other assignment is worse by ``name_margin``: on Epic tuning
        # close-ups (7 tables) a tag's own code scored 0.6-0.97; other codes a bare 0.05
        # or less above it. A disc nothing else claimed becomes a token at
        # ``name_disc_floor`` and ``name_blob_gain`` more like its code than like a
        # plain or hollow dark square (miniatures and shadows reached 0.86 alone) ...
        self.name_floor, self.name_margin, self.name_disc_floor = 0.6, 0.06, 0.6
        self.name_blob_gain = 0.05
        # ... and only where the decoder saw some tag border darker than the paper
        # beside it (its face score): tags at 720p 15-100, 60 % of the other discs under 10;
        # and whose middle is as neutral as printed card (median chroma; on 29 Epic
        # tuning tables unclaimed tag discs 1.4 at the 10th percentile, 4.1 at the median;
        # the other unclaimed discs, stands' miniatures, 15 at the median).
        self.name_face_min = 10.0
        self.name_disc_chroma = 10.0
        # Rim colours as this camera and light show them (_rim_paint, _rim_seen,
        # _rim_in_use): set with the table's light in set_background, then they follow
        # the rims fitted with confidence (see _learn_rims).
        self._table_colour = np.zeros(3, np.float32)
        # Oval and rectangular bases are only looked for where some side fields them.
        self._shaped = [(s.index, b) for s in config.sides for b in getattr(s, "shaped", ())]
        self.min_coverage_shaped = 0.35  # share of the outline seen as a clean edge
        self.min_band_shaped = 0.06  # rim evidence along each long side, at least
        self.max_cross_shaped = 0.3  # rim evidence through the middle, at most
        self.min_ends_shaped = 0.3  # rim evidence on the two ends together, at least
        # An oval with one long side hidden is a base with this much of its outline seen
        # and this much rim evidence on each end.
        self.min_coverage_oval_side_hidden, self.min_ends_oval_side_hidden = 0.5, 0.4
        # A fit seeing this much of its outline, and this much rim on each long side, is a
        # base whatever lies through its middle.
        self.min_coverage_seen_all_round, self.min_band_seen_all_round = 0.65, 0.45
        # A fit with less of its outline seen is a base if it has rim evidence all round.
        self.min_coverage_all_round, self.min_band_all_round, self.max_cross_all_round = 0.22, 0.3, 0.35
        # Oval and rectangular bases under ``pursue_max_depth_px`` deep in the view (an
        # Epic stand below 4K: a rim a pixel or two wide, which fitted 5-90 % of them on
        # tuning tables) are also found as foreground of their outline (_pursued_stands):
        # placements responding at least ``pursue_threshold``, whose outline's rim
        # evidence names one side, ``pursue_side_ratio`` times any other's and at least
        # ``pursue_side_min`` (or, on an Epic table, whose unit names it:
        # _sided_by_unit). (Larger ones gained little on the tuning tables' ovals and
        # lost sides: a round base under a large miniature reads as an oval.) (0.5 found
        # more on 16 Epic tuning tables, recall 88.7 -> 91.5 %, precision 97.5 -> 97.0 %,
        # but swapped two stands' ids in the bundled clip's fast slide.)
        # Round bases beyond a side's roster inside an oval or rectangle it lacks, fitted
        # there but refused: that outline instead (_rounds_as_outline); also round bases
        # the roster has room for, where the outline's rim is seen this many times better.
        self.rounds_as_outlines = True
        self.outline_over_round = 1.5
        self.suspect_round_coverage = 0.5  # (_suspect_rounds)
        self.pursue_max_depth_px = 20.0
        self.pursue_threshold = 0.55
        # A patch the pursuit places under ``pursue_threshold`` but at least this, of an
        # outline some side is short of, is no base but a doubt (world.Doubt) for those
        # sides: where the roster says a fighter is missing, a ruling it could change says
        # so. (A green rim under a yellow-green miniature on a green mat showed as a patch
        # responding 0.36.) Looked for once the bases are placed, so that no faint patch
        # takes a base's pixels. (99 Warcry tuning tables: wrong control calls 29 -> 17,
        # right calls flagged 240 -> 249, no fighter changed; at 0.25 no fewer wrong,
        # 252 flagged; 50 mixed ones: wrong 9 -> 8, flagged 132 -> 135.)
        self.doubt_threshold = 0.35
        # A round doubt the learned refiner reads as a base of one side alone (at least
        # ``doubt_base_p`` for it, under ``doubt_rival_p`` for each other) is that base
        # (_doubts_read). (53 tuning tables it never saw: recall 95.3 -> 96.6 %, precision
        # 98.6 -> 98.5 %; at 0.95 the same.)
        self.doubt_base_p, self.doubt_rival_p = 0.9, 0.3
        # ... and a weak round base it reads under ``side_own_p`` for its side, and so for
        # one other, is that other's (_sides_read). (There: sides right 97.2 -> 98.4 %,
        # control calls agreeing 1,100 -> 1,105 of 1,192, wrong 18 -> 17.)
        self.read_sides, self.side_own_p = True, 0.1
        # ... and so is every patch of a round size the bases found leave unexplained,
        # whatever the rosters lack (_proposed_rounds). (53 tuning tables it never saw:
        # recall 96.6 -> 97.7 %, precision 98.5 -> 98.3 %, control calls agreeing 1,105 ->
        # 1,112, wrong 17 -> 15; a base it names held to its doubt's sides 97.6 %; named
        # only at 0.97 or 0.99 the same; also on platforms' tops, recall 97.63 -> 97.76 %.)
        self.propose_rounds = True
        # ... the stands' own pursuit also reads their rims (vision.stands.pursue's
        # ``rims``: a block of stands in contact is one patch of foreground, which its rims
        # tile one way): a placement's response adds ``pursue_rim_weight`` times its rim
        # band's evidence less its core's, on the map of the side that shows it best, and
        # it must reach ``pursue_stand_threshold``. (50 Epic tuning tables: recall 92.3 ->
        # 96.9 %, at 720p 84.3 -> 94.8 %, precision 99.3 -> 99.4 %, sides 99.3 -> 99.6 %;
        # on one map of every side's evidence: 96.7 %, a unit of white rims round green
        # miniatures lost whole. On that one map, weight 1 / 2 / 4: recall 95.3 /
        # 96.0 / 95.9 %, precision 99.4 / 99.4 / 99.0 % at threshold 0.55; threshold
        # 0.65 / 0.5 / 0.45 at weight 2: 93.3 / 96.7 / 96.9 %, precision 99.4 / 99.4 / 99.3 %.)
        self.pursue_rim_weight, self.pursue_stand_threshold = 2.0, 0.5
        self.pursue_side_min, self.pursue_side_ratio = 0.003, 2.0
        # ... at least ``pursue_side_min_warned`` where a rival side's rims are warned near
        # the mat's colour (a white side on a pale mat: its stands read 0-0.08 of red, red
        # ones 0.13-0.45, on a tuning table).
        self.pursue_side_min_warned = 0.1
        # An Epic stand whose rims name no side takes the side of the nearest stand whose
        # side is known within ``unit_reach_in`` (a unit's stands keep within 5 cm, 2 in),
        # unless its own evidence for that side is under ``unit_side_share`` of the best.
        self.unit_reach_in, self.unit_side_share = 2.0, 0.5
        # A stand neither its rims nor a unit sides is kept, its side unsure, only where at
        # least this share of its patch's foreground is not the table in shadow.
        self.unsure_stand_lit = 0.5
        # Any base is also found as foreground of its outline while a side's roster
        # lists more of that outline than were found (_pursued_outline), in a whole look,
        # on the floor and (``pursue_platforms``) on platforms' tops.
        self.pursue_rounds = True
        self.pursue_platforms = True
        # ... whose outline may run along the patch only on its half facing the camera
        # (a miniature and the base's wall lean away from it: outline_on_boundary).
        self.pursue_facing = True
        # Round bases placed from little rim (under ``refine_below`` of it fitted, or found
        # as a patch of foreground) are placed again by the learned refiner
        # (vision.refiner), where it moves them between ``refine_min_in`` and
        # ``refine_reach_in`` (it reads a crop at 20 px/in: where it agrees with a rim fit
        # to within its own noise, the fit, made at the view's own scale, stays; on
        # 53 tuning tables it was not trained on, 1080p weak fits' median error 0.018 ->
        # 0.031 in moving all, 0.021 so); their size too where it is sure of one
        # (``refine_size_p``) of its side's (patches' sizes wrong 29 -> 20 % at 720p).
        self.refiner = _shipped_refiner()
        self.refine_below, self.refine_reach_in, self.refine_min_in = 0.35, 0.5, 0.06
        self.refine_size_p = 0.9
        # ... sized and centred by the circle running along the patch's boundary within
        # ``pursue_round_reach_in`` of the patch's placement, on ``pursue_round_share`` of
        # its length at least.
        self.pursue_round_reach_in, self.pursue_round_share = 0.25, 0.55
        # ... or on ``pursue_round_share_named`` where its rim names its side: at 720p a
        # base's blurred edge and its shadow's leave half the outline's boundary unseen.
        self.pursue_round_share_named = 0.45
        # A fit's side is the colour its rim wins (_sides_by_colour): ``side_colour_share``
        # of it at least, ``side_colour_ratio`` times the fitted side's share.
        self.sides_by_colour, self.side_colour_share, self.side_colour_ratio = True, 0.1, 2.0
        self.side_colour_inner_in = 0.2  # (past a rim's 2-3.5 mm: paint that goes on inward is no rim)
        self.pursue_round_offset_px = 1.5  # (the boundary's offset, where no base shows it)
        self.pursue_round_size_step_mm = 10.0  # (sizes a patch may be taken for: 25/32/40/50/60 mm)
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

    # -- set-up ----------------------------------------------------------------------
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
        kept = (self._bg_floor, self._bg_hands, self._bg_platforms, self._rims_floor, self._rims_platforms, self._gold)
        self.camera = camera
        self.tags.set_camera(camera)  # (close-ups taken through the old pose)
        self._build_views(resample_background=False)
        (self._bg_floor, self._bg_hands, self._bg_platforms, self._rims_floor, self._rims_platforms, self._gold) = kept

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
        self._bg_hands = None if empty_table_bgr is None else _lab(self.floor_hands.sample(empty_table_bgr))
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

    # -- per frame -------------------------------------------------------------------
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
            tokens = self._tokens(frame, floor_bgr, lab, self.floor.valid & ~hand, markers,
                                  self._not_token_places(bases))
            bases, tokens = self._settle_discs(bases, tokens, lab, frame)
            self._last_tokens = tokens
        else:
            # Tokens not looked for: the ones last found still claim their discs.
            bases, _ = self._settle_discs(bases, self._last_tokens, lab, frame)
            tokens = Detections()
        self._refined(raw, bases)
        self._sides_read(raw, bases)
        open_ = self._unnamed(bases, tokens if look_for_tokens else None)
        named, open_ = self._doubts_read(raw, bases, open_)
        if len(named):
            bases = Detections.merge([bases, named])
        t4 = time.perf_counter()
        self.timings_ms = {"rectify": (t1 - t0) * 1e3, "rings": (t2 - t1) * 1e3, "select": (t3 - t2) * 1e3,
                           "tokens": (t4 - t3) * 1e3}
        out = Detections.merge([bases, tokens], terrain=self.terrain, hand_mask=hand, hands=bool(hand.any()),
                               hand_view=self.floor, doubts=self._as_doubts(open_))
        out.tokens_checked = look_for_tokens
        return out

    def _reader_nadir(self) -> np.ndarray | None:
        """The point under the camera, where the learned refiner can read this table (a
        model, an empty table, a camera not known only as a homography); else None."""
        if self.refiner is None or self._background_bgr is None:
            return None
        return camera_nadir(self.camera)

    def _rims_as_seen(self) -> list[tuple[int, np.ndarray]]:
        """(index, rim colour as this table's light shows it, BGR) per side."""
        return [(s.index, self.light.as_seen(s.rim_bgr)) for s in self.config.sides]

    def _weak_rounds(self, bases: Detections) -> tuple[np.ndarray, np.ndarray] | None:
        """The round bases placed from little rim (under ``refine_below`` of it fitted, or
        found as a patch), by index, and the point under the camera; None where there are
        none or the refiner cannot read them (no model, no empty table, a camera known
        only as a homography)."""
        nadir = self._reader_nadir() if len(bases) else None
        if nadir is None:
            return None
        weak = (bases.kind == KIND_BASE) & (bases.shape == 0) & ((bases.score < self.refine_below) | bases.from_foreground)
        idx = np.flatnonzero(weak)
        return (idx, nadir) if len(idx) else None

    def _refined(self, frame: np.ndarray, bases: Detections) -> None:
        """Round bases placed from little rim (a crescent under ``refine_below`` of their
        circle, or a patch of foreground) placed again, in place, where the learned refiner
        (``vision.refiner``, reading the frame as the camera gave it) puts them
        ``refine_min_in`` to ``refine_reach_in`` away: between its place and theirs, each
        weighed by its error (their stated sigma; ``REFINER_ERROR_IN``), their sigma then
        at least ``REFINED_SIGMA_IN`` with the calibration's; and sized as it reads them
        where it gives a size of their side's roster ``refine_size_p`` or more.
        (A patch's miniature pulls its outline off the base, and a crescent fits circles
        of several sizes: 720p tuning tables the refiner never saw, patches' RMS error
        0.210 -> 0.175 in, median 0.110 -> 0.047 in; crescents' 0.134 -> 0.093 in.)"""
        weak = self._weak_rounds(bases)
        if weak is None:
            return
        idx, nadir = weak
        colour = dict(self._rims_as_seen())
        lift = self.config.base_thickness_in
        top = bases.xyz[idx].copy()
        top[:, 2] += lift
        xy, p = self.refiner.refine(self.camera, frame, self._background_bgr, top, nadir,
                                    np.array([colour.get(int(bases.side[i]), (128, 128, 128)) for i in idx], float))
        if self.refine_size_p < 1.0:
            sizes = {si: set(sz) for si, _, sz in self._side_lab()}
            k = p.argmax(axis=1)
            for i, kk, pk in zip(idx, k, p[np.arange(len(k)), k]):
                mm = SIZES_MM[int(kk)]
                if pk >= self.refine_size_p and mm != bases.base_mm[i] and mm in sizes.get(int(bases.side[i]), ()):
                    bases.base_mm[i] = mm
                    if len(bases.size_mm) == len(bases.kind):
                        bases.size_mm[i] = (mm, mm)
        shift = np.hypot(*(xy - bases.xyz[idx, :2]).T)
        ok = (shift <= self.refine_reach_in) & (shift >= self.refine_min_in)
        moved = idx[ok]
        stated = len(bases.sigma_in) == len(bases.kind)  # (no sigma without a calibrated camera's)
        if stated:
            # The two places weighed each by its own error: the fit's stated sigma, the
            # refiner's. (Taking the refiner's outright did better on the 53 tuning tables
            # it never saw, crescents' RMS 0.087 against 0.093 in, but moved a red base
            # beside a terrain tag on the bundled clip 0.12 in off its right place in every
            # look: clip RMS 0.0163 -> 0.0182 in, 0.0177 so.)
            w = REFINER_ERROR_IN ** 2 / (REFINER_ERROR_IN ** 2 + np.square(bases.sigma_in[moved]))
            bases.xyz[moved, :2] = w[:, None] * bases.xyz[moved, :2] + (1 - w[:, None]) * xy[ok]
        else:
            bases.xyz[moved, :2] = xy[ok]
        calib = self.calibration_sigma(bases.xyz[moved], lift)
        if calib is not None and stated:
            bases.sigma_in[moved] = np.maximum(bases.sigma_in[moved], np.hypot(calib, REFINED_SIGMA_IN))

    def _near_hand(self, hand: np.ndarray) -> np.ndarray:
        """The floor view's hand mask grown by ``PURSUE_HAND_MARGIN_IN``: a hand's shadow,
        dark mat of a base's size, is foreground too."""
        if not hand.any():
            return hand
        k = 2 * int(round(PURSUE_HAND_MARGIN_IN * self.px_per_in)) + 1
        return cv2.dilate(hand.astype(np.uint8), cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))) > 0

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
        """Round bases placed from little rim (as ``_refined`` picks them) whose side the
        learned refiner reads as another's: under ``side_own_p`` for their own side's rim
        colour, ``doubt_base_p`` or more for one other's and under ``doubt_rival_p`` for
        the rest. They take that side, in place, their old one a rival. (Those it reads as
        no side's at all are kept: dropped, 53 tuning tables it never saw lost more true
        bases than false ones, recall 96.6 -> 95.8 %, precision 98.5 -> 98.8 %.)"""
        weak = self._weak_rounds(bases) if self.read_sides else None
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
        for n, i in enumerate(idx):
            own = at.get(int(bases.side[i]))
            if own is None or present[n, own] >= self.side_own_p:
                continue
            order = [j for j in np.argsort(-present[n]) if j != own]
            if not order or present[n, order[0]] < self.doubt_base_p or (len(order) > 1 and present[n, order[1]] >= self.doubt_rival_p):
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
        nadir = self._reader_nadir() if open_ and self.config.epic is None else None
        rounds = [k for k in open_ if self._doubts[k].shape == "round"] if nadir is not None else []
        if not rounds:
            return Detections(), open_
        colour = self._rims_as_seen()
        lift = self.config.base_thickness_in
        guesses = np.array([[self._doubts[k].x, self._doubts[k].y, self._doubts[k].z + lift]
                            for k in rounds for _ in colour])
        rims = np.array([c for _ in rounds for _, c in colour], float)
        xy, _, present = self.refiner.read(self.camera, frame, self._background_bgr, guesses, nadir, rims)
        if present is None:
            return Detections(), open_
        present = present.reshape(len(rounds), len(colour))
        taken, rows = set(), []
        placed = [(x, y, r) for (x, y), r in zip(bases.xyz[:, :2], np.where(
            bases.shape > 0, bases.size_mm[:, 0], bases.base_mm) / MM_PER_IN / 2)] if len(bases) else []
        sizes = {s.index: set(s.bases_mm) for s in self.config.sides}
        for n, k in enumerate(rounds):
            order = np.argsort(-present[n])
            best = int(order[0])
            side = colour[best][0]
            if present[n, best] < self.doubt_base_p or (len(order) > 1 and present[n, order[1]] >= self.doubt_rival_p):
                continue
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
            placed.append((at[0], at[1], r_new))
            taken.add(k)
            rows.append({"xyz": (at[0], at[1], q.z), "kind": KIND_BASE, "side": side, "base_mm": mm,
                         "score": self.min_coverage, "from_foreground": True})
        named = Detections.from_rows(rows)
        calib = self.calibration_sigma(named.xyz, lift)
        if calib is not None and len(named):
            named.sigma_in = np.hypot(calib, PATCH_SIGMA_IN)
        return named, [k for k in open_ if k not in taken]

    def _as_doubts(self, open_: list[int]) -> tuple[Doubt, ...]:
        """The doubts left (``_doubts`` by index) as world.Doubt."""
        return tuple(Doubt(q.x, q.y, float(q.z), q.r, tuple(int(si) for si in q.sides))
                     for q in (self._doubts[k] for k in open_) if q.shown)

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
        if self.propose_rounds and whole_look and self.config.epic is None and self.refiner is not None \
                and self._bg_floor is not None:
            self._proposed_rounds(lab, usable, hand, bases, platform_labs)
        unsure = np.zeros(len(bases), np.int64)
        if platforms is None and self.config.epic is not None:
            keep, unsure = self._within_epic_roster(bases)
            bases, unsure = bases[keep], unsure[keep]
        elif platforms is None:
            unsure = self._beyond_roster(bases)
        bases.rivals = self._side_rivals(bases, evs) | unsure | bases.rivals
        return bases, t2

    def _sides_by_colour(self, fits: list[dict], evs: dict[tuple[int, int], np.ndarray]) -> None:
        """Each fit's (or pursued patch's) side again, by which side's colour its rim is
        (``rim_shares``): the side whose evidence wins ``side_colour_share`` of the rim at
        least and ``side_colour_ratio`` times the fit's own side's share takes it, if its
        roster lists that outline. A fit is made on one side's evidence, where a rim of a
        near hue shows a clean edge too (a purple rim on blue's map), and the best-seen
        edge claims the place; the colour itself tells the two apart. A miniature's paint
        over the rim goes on inward and wins nothing. (99 tuning tables: sides 96.8 ->
        97.4 %, wrong control calls 25 -> 19; without the paint test, 96.6 %; the
        pursued patches too, 97.6 %.)"""
        S = self.px_per_in
        sizes = {si: set(sz) for si, _, sz in self._side_lab()}
        shaped = {(si, sp.shape, float(sp.width_mm), float(sp.depth_mm)) for si, sp in self._shaped}
        for f in fits:
            v, side = f["view"], f["side"]
            maps = {si: evs[(v, si)] for si in sizes if (v, si) in evs}
            if len(maps) < 2:
                continue
            if f.get("shape", 0):
                name, (w, d) = SHAPE_NAMES[int(f["shape"])], f["size_mm"]
                o = Outline(name, w / MM_PER_IN / 2 * S, d / MM_PER_IN / 2 * S)
                lists = {si for si in maps if (si, name, float(w), float(d)) in shaped}
            else:
                r = f["base_mm"] / MM_PER_IN / 2 * S
                o = Outline("round", r, r)
                lists = {si for si in maps if f["base_mm"] in sizes[si]}
            shares = rim_shares(maps, o, f["col"], f["row"], f.get("theta", 0.0), inner=self.side_colour_inner_in * S)
            best = max(lists - {side}, key=lambda si: shares[si], default=None)
            if best is not None and shares[best] >= self.side_colour_share and \
                    shares[best] >= self.side_colour_ratio * shares.get(side, 0.0):
                f["side"] = best
                if f.get("rivals"):  # (a patch's side the roster's guess: the others still rivals)
                    f["rivals"] = (f["rivals"] | 1 << side) & ~(1 << best)

    def _within_epic_roster(self, bases: Detections) -> tuple[np.ndarray, np.ndarray]:
        """Where a side has more stands found than its units have in all (the game's
        ``epic`` section; units lose stands in play, never gain them: a ceiling, not a
        target), its least seen beyond that: as many as the other sides together lack
        may be theirs, read as this side's (a purple unit under warm light read as red),
        and are kept with those sides as rivals (``Detections.rivals``); the rest are
        dropped (a stand fitted across the gap between two of a loose unit's). Returns
        (which to keep, rival bits). On the Epic tuning tables, 9 in 10 of those dropped
        were no stand."""
        keep = np.ones(len(bases), bool)
        rivals = np.zeros(len(bases), np.int64)
        stands = bases.kind == KIND_BASE
        most = {s.index: sum(u.stands for u in self.config.epic.units if u.side == s.index) for s in self.config.sides}
        found = {si: int((stands & (bases.side == si)).sum()) for si in most}
        for si, n in most.items():
            mine = np.flatnonzero(stands & (bases.side == si))
            if not n or len(mine) <= n:
                continue
            lacking = {o: most[o] - found[o] for o in most if o != si and most[o] > found[o]}
            extra = mine[np.argsort(bases.score[mine], kind="stable")[:len(mine) - n]][::-1]  # (best seen first)
            maybe_theirs = min(len(extra), sum(lacking.values()))
            keep[extra[maybe_theirs:]] = False
            for o in lacking:
                rivals[extra[:maybe_theirs]] |= 1 << o
        return keep, rivals

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

    def _side_rivals(self, bases: Detections, evs: dict[tuple[int, int], np.ndarray]) -> np.ndarray:
        """Per base, the other sides its rim could be (a bit mask; ``Detections.rivals``):
        where its rim was seen on under ``SIDE_SURE_SCORE`` of its outline, or not fitted
        at all (found as a patch), every side whose rim evidence along the outline is at
        least ``SIDE_RIVAL_SHARE`` of its own side's. On 100 tuning tables a rim seen on
        under a quarter of its outline had the wrong side 9.7 % of the time, one seen more
        0.6 %; with the evidence's share as well, a quarter of the sides read wrong are
        flagged so, and one fighter in 60 read right."""
        out = np.zeros(len(bases), np.int64)
        S = self.px_per_in
        for i in np.flatnonzero((bases.kind == KIND_BASE) & ((bases.score < SIDE_SURE_SCORE) | bases.from_foreground)):
            x, y, z = map(float, bases.xyz[i])
            v, view = self._view_at(x, y, z)
            if view is None:
                continue
            shape = SHAPE_NAMES.get(int(bases.shape[i]), "round")
            w, d = (float(m) / MM_PER_IN for m in bases.size_mm[i]) if shape != "round" else \
                (float(bases.base_mm[i]) / MM_PER_IN,) * 2
            band, _ = outline_samples("rect" if shape == "rect" else "oval", w / 2 - RIM_BAND_IN, d / 2 - RIM_BAND_IN,
                                      step=1.0 / S)
            a = math.radians(float(bases.angle_deg[i]))
            px = view.to_pixel(np.column_stack([x + math.cos(a) * band[:, 0] - math.sin(a) * band[:, 1],
                                                y + math.sin(a) * band[:, 0] + math.cos(a) * band[:, 1]]))
            H, W = view.shape
            c = np.clip(np.rint(px[:, 0]).astype(int), 0, W - 1)
            r = np.clip(np.rint(px[:, 1]).astype(int), 0, H - 1)
            ev = {si: float(evs[(v, si)][r, c].mean()) for si, _, _ in self._side_lab() if (v, si) in evs}
            own = ev.get(int(bases.side[i]), 0.0)
            for si, e in ev.items():
                if si != int(bases.side[i]) and e > RIVAL_LEAST and e >= SIDE_RIVAL_SHARE * own:
                    out[i] |= 1 << si
        return out

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

    def follow(self, frame: np.ndarray, fighters: list[tuple[float, float, float, int, float]], *,
               reach_in: float = 0.8, max_jump_in: float = 0.5, hands: bool = True) -> Detections:
        """Re-find known bases near where they were: ``fighters`` as (x, y, z, side,
        base_mm), oval and rectangular ones with (shape, width_mm, depth_mm, angle_deg)
        after, and optionally the (x, y) they were last seen at when (x, y) is where
        their motion should have carried them. Between full detections a base is looked
        for only in a window round its last place, in its own side's colour, at its own
        size: a few hundred pixels
        each instead of the whole table. Tokens are not looked at (``tokens_checked``
        is False, so the tracker keeps them as they were). ``hands`` False: the caller
        knows no hand can be over the table (none was, and nothing changed where an arm
        would come in), and none is looked for."""
        t0 = time.perf_counter()
        frame = self.relight(frame)
        hand = self._hand_mask(frame) if hands else np.zeros(self.floor.shape, bool)
        over_table = bool(hand.any())  # (asked once: every window below wants it)
        # A known base is looked for up to the skin itself, not the grown mask that keeps
        # a full look from finding new bases in a finger's edge: a fighter beside a hand
        # is still seen. (The tracker still takes the grown mask for what a hand hides.)
        skin = self._hand_mask(frame, core=True) if over_table else hand
        t1 = time.perf_counter()
        S = self.px_per_in
        rim_w = max(1.5, 0.09 * S)
        sides = [s for s, _, _ in self._side_lab()]
        # Oval and rectangular bases come as (x, y, z, side, base_mm, shape, width_mm,
        # depth_mm, angle_deg); their size for the closeness test below is their depth.
        small_mm = [f[7] if len(f) > 5 and f[5] != "round" else f[4] for f in fighters]
        # Those stands' windows: searched and fitted after the loop, all of a size together.
        shaped_stands: list[tuple[int, np.ndarray, PlaneView, np.ndarray, tuple[int, int]]] = []
        found: dict[int, dict] = {}
        # Round bases' rims are fitted after the search, all those of one size together:
        # (fighter, window origin, peak) by the radii the rays span.
        to_fit: dict[tuple[float, float], list[tuple[int, np.ndarray, tuple[int, int], float, float]]] = {}
        for i, f in enumerate(fighters):
            x, y, z, side, mm = f[:5]
            shaped = len(f) > 5 and f[5] != "round"
            vi, view = self._view_at(x, y, z)
            if view is None or side not in sides:
                continue
            c = view.to_pixel(np.array([[x, y]]))[0]
            r = (float(np.hypot(f[6], f[7])) if shaped else mm) / MM_PER_IN / 2 * S
            reach = int(r + reach_in * S + 4)  # a fighter glides well under 0.8 in a frame
            H, W = view.shape
            r0, r1 = max(int(c[1]) - reach, 0), min(int(c[1]) + reach + 1, H)
            c0, c1 = max(int(c[0]) - reach, 0), min(int(c[0]) + reach + 1, W)
            if r1 - r0 < 2 * r or c1 - c0 < 2 * r:
                continue
            win = (slice(r0, r1), slice(c0, c1))
            wb = cv2.remap(frame, view.map1[win], view.map2[win], cv2.INTER_LINEAR)
            if vi < 0 and over_table:
                wb = self._out_of_shadow(wb, win, c - np.array([c0, r0]), r)
            lab = _lab(wb)
            if vi < 0:
                usable = view.valid[win] & ~self._terrain_mask_floor[win] & ~skin[win]
                rims = self._rims_floor
            else:
                usable = view.valid[win] & self.platform_views[vi][2][win]
                rims = self._rims_platforms[vi]
            ev = rims.evidence(lab, win, only=sides.index(side))[0]
            ev[~usable] = 0.0
            if shaped:
                shaped_stands.append((i, ev, view, c - np.array([c0, r0]), (c0, r0)))
                continue
            resp = _correlate_many(ev, [ring_kernel(r, rim_w)], self._ring_spectra)[0]
            rows, cols = _local_maxima(resp, self.score_threshold, max(2, int(r * 0.6)))
            if not len(rows):
                continue
            prs, pcs = _subpixel_peaks(resp, rows, cols)
            # The ring's peak nearest where the fighter should be, unless another is much
            # stronger: a neighbour of its side in the window may ring more strongly (its
            # rim less hidden), and its peak is rejected below as a jump, losing this one.
            k = int(np.argmin(_nearest_peak_key(pcs, prs, resp[rows, cols], c - np.array([c0, r0]), r)))
            to_fit.setdefault((0.6 * r, r + 0.35 * S), []).append((i, ev, (c0, r0), float(pcs[k]), float(prs[k])))
        for (r_from, r_to), group in to_fit.items():
            ang = np.linspace(0, 2 * np.pi, 96, endpoint=False)
            cos, sin = np.cos(ang), np.sin(ang)
            rho = np.arange(r_from, r_to, 0.5, dtype=np.float32)
            # Each window's rays (as _fit_rim_at samples them), then one fit for all.
            profs = [cv2.remap(ev, (pc + rho[None, :] * cos[:, None]).astype(np.float32),
                               (pr + rho[None, :] * sin[:, None]).astype(np.float32), cv2.INTER_LINEAR,
                               borderMode=cv2.BORDER_CONSTANT, borderValue=0) for _, ev, _, pc, pr in group]
            # As in a full look, the centre from a fit expecting the fighter's own size.
            bias = [self._edge_bias(fighters[i][3]) for i, *_ in group]
            expect = np.array([[np.nan if b is None else fighters[i][4] / MM_PER_IN / 2 * S + b]
                               for (i, *_), b in zip(group, bias)])
            # Each fighter's painted wall, if its side's bases have one (zero where not).
            wall = self._wall_px([fighters[i][3] for i, *_ in group], [fighters[i][:2] for i, *_ in group],
                                 [fighters[i][2] for i, *_ in group])
            sides = [fighters[i][3] for i, *_ in group]
            fit_args = (np.stack(profs), rho, cos, sin, np.array([g[3] for g in group], float),
                        np.array([g[4] for g in group], float))
            fit_kw = dict(thin_px=0.2 * S, expect_r=expect, expect_weight=self._prior_weight(sides),
                          expect_min_score=self.min_coverage, wall=wall, mat_floor=self._mat_floor(sides))
            fits = _fit_rims(*fit_args, **fit_kw)

            def refused(k, fit):
                mm = fighters[group[k][0]][4]
                return fit is None or fit[3] < self.min_coverage or \
                    abs(fit[2] - mm / MM_PER_IN / 2 * S - self.edge_bias_px) > 2.0

            # A fighter of a side set-up warns about is fitted from its own arc (no radius
            # borrowed); its free fit, started from all its edge points, can settle on a
            # circle 6 px too large through a neighbour's edges and be refused (our unpaced
            # render's green 32 mm base: then looked for again every frame, 20 regional
            # looks in a row). Refused, it is fitted again from the edge points round its
            # own circle too (_fit_rims ``start_r``).
            warned = self._warned(sides)
            again = [k for k, fit in enumerate(fits) if warned[k] and refused(k, fit)]
            if again:
                start = np.full(len(group), np.nan)
                start[again] = [self._edge_radius(sides[k], fighters[group[k][0]][4]) for k in again]
                refits = _fit_rims(*fit_args, start_r=start, **fit_kw)
                fits = [refits[k] if k in again else fit for k, fit in enumerate(fits)]
            for k, ((i, _, (c0, r0), _, _), fit) in enumerate(zip(group, fits)):
                if refused(k, fit):
                    continue
                x, y, z, side, mm = fighters[i][:5]
                cx, cy, rad, score, _, _ = fit
                view = self._view_at(x, y, z)[1]
                xy = view.to_world(np.array([cx + c0]), np.array([cy + r0]))[0]
                # A jump, or a centre inside another known fighter's base, is a neighbour's
                # rim or a miniature's edge, not this fighter: leave it to the next full look.
                if np.hypot(xy[0] - x, xy[1] - y) > max_jump_in or any(
                        (o[0], o[1]) != (x, y) and np.hypot(xy[0] - o[0], xy[1] - o[1]) < (omm + mm) / MM_PER_IN / 2 * 0.85
                        for o, omm in zip(fighters, small_mm)):
                    continue
                found[i] = {"xyz": (xy[0], xy[1], z), "kind": KIND_BASE, "side": side, "base_mm": mm, "score": score}
        found.update(self._follow_shape(shaped_stands, fighters, small_mm))
        rows = [found[i] for i in sorted(found)]
        bases = Detections.from_rows(rows)
        self._add_sigma(bases, lift=self.config.base_thickness_in)
        self.timings_ms = {"rectify": (t1 - t0) * 1e3, "follow": (time.perf_counter() - t1) * 1e3}
        out = Detections.merge([bases], terrain=self.terrain, hand_mask=hand, hands=over_table,
                               hand_view=self.floor)
        out.tokens_checked = False
        out.sizes_found = False
        return out

    def _out_of_shadow(self, wb: np.ndarray, win: tuple[slice, slice], c: np.ndarray, r: float) -> np.ndarray:
        """A follow window (floor view, BGR) lifted out of a hand's shadow: the mat round
        the base (a ring 0.3-0.5 in past its rim) darker than on the empty table by over
        15 % is a shadow over the window, and the window is brightened by that ratio. A rim in a hand's soft shadow reads as no rim colour at all against
        the lit table (a yellow base put down under a hand was not found until the
        shadow moved off)."""
        bg = self._bg_floor_grey
        if bg is None:
            return wb
        # The ring read at 96 points (two circles of 48), not every pixel of the window:
        # this runs for every fighter followed while a hand is over the table. The
        # points' offsets are kept per base radius.
        S = self.px_per_in
        ring = self._shade_rings.get((r, S))
        if ring is None:
            rr = np.concatenate([np.full(48, r + 0.3 * S), np.full(48, r + 0.5 * S)])
            ang = np.tile(np.arange(48) * (2 * np.pi / 48), 2)
            ring = (np.rint(rr * np.cos(ang)).astype(np.intp), np.rint(rr * np.sin(ang)).astype(np.intp))
            self._shade_rings[(r, S)] = ring
        col, row = ring[0] + int(round(c[0])), ring[1] + int(round(c[1]))
        h, w = wb.shape[:2]
        inside = (col >= 0) & (col < w) & (row >= 0) & (row < h)
        col, row = col[inside], row[inside]
        b = bg[win][row, col]
        grey = wb[row, col] @ _GREY_BGR
        ok = b > 16
        if np.count_nonzero(ok) < 20:
            return wb
        q = grey[ok] / b[ok]
        ratio = float(np.partition(q, len(q) // 2)[len(q) // 2])  # (the median; np.median costs 4x)
        if not 0.25 < ratio < 0.85:
            return wb
        return np.clip(wb.astype(np.float32) / ratio, 0, 255).astype(np.uint8)

    def _view_at(self, x: float, y: float, z: float) -> tuple[int, PlaneView | None]:
        if z <= 0:
            return -1, self.floor
        for i, (piece, view, _) in enumerate(self.platform_views):
            if abs(piece.height_in - z) < 0.05:
                px = view.to_pixel(np.array([[x, y]]))[0]
                if 0 <= px[0] < view.shape[1] and 0 <= px[1] < view.shape[0]:
                    return i, view
        return -1, None

    def _wall_px(self, side: Any, xy: np.ndarray, z: Any, share: float | None = None) -> np.ndarray | None:
        """(N, 2) for bases of ``side`` at world ``xy`` standing at height ``z`` (each one
        number, or one per base): how far, and which way, a base's painted side wall
        widens its rim toward the camera's nadir, in view pixels (col, row); zero for a
        side whose bases carry their colour on the top face only (``rim_style: ring``),
        and None when no base here has a wall to take off (or the camera's place is not
        known).

        Seen from above, the wall's foot is the top's edge moved toward the nadir by
        ``w = thickness * d / (H - z)`` (d the base's distance from the nadir, H the camera's
        height): on a ray at angle phi from that direction the edge lies ``w cos(phi)``
        past the top's (_fit_rims takes it off). A whole rim's centre is otherwise w / 2
        toward the nadir, a crescent's on the near side up to w (our renders' green 32 mm
        base 14.7 in out, 0.08 in). How much of ``w`` reads as rim depends on the paint
        and the light on the wall: ``share`` (default: the side's, _wall_share)."""
        xy = np.asarray(xy, float).reshape(-1, 2)
        sides = np.broadcast_to(np.asarray(side, int), (len(xy),))
        by_side = {int(s): (self._wall_share(int(s)) if share is None else share) if self._painted(int(s)) else 0.0
                   for s in set(sides.tolist())}
        if max(by_side.values(), default=0.0) <= 0.0:
            return None  # (nothing to take off: the fit as for a ring)
        shares = np.array([by_side[s] for s in sides.tolist()])
        C = np.asarray(self.camera.camera_position, float)
        to_nadir = C[:2][None] - xy
        w = shares * self.config.base_thickness_in / np.maximum(C[2] - np.asarray(z, float), 1.0) * self.px_per_in
        # World +y is up the view (row 0 the far edge): the row's sign flips.
        return np.column_stack([to_nadir[:, 0] * w, -to_nadir[:, 1] * w])

    def _warned(self, sides) -> np.ndarray:
        """Per candidate, whether set-up warns its side's rims are close to the mat's
        colour: its edges are read above the mat's own evidence (_ray_edges ``mat_floor``)
        and its centre fitted with ``warned_prior_weight``."""
        return np.array([int(s) in self._rim_warned for s in sides], bool)

    def _prior_weight(self, sides) -> np.ndarray:
        """Per candidate, how many edge points its size's expected radius counts as in
        the fit of its centre."""
        return np.where(self._warned(sides), self.warned_prior_weight, self.radius_prior_weight)

    def _mat_floor(self, sides) -> np.ndarray | None:
        """_warned, or None when no side is (nothing to do)."""
        return self._warned(sides) if self._rim_warned else None

    def _painted(self, side: int) -> bool:
        """Whether this side's config says its bases' side walls carry the rim colour
        (and the camera's place, which the wall's apparent width needs, is known)."""
        spec = next((s for s in self.config.sides if s.index == side), None)
        return spec is not None and getattr(spec, "rim_style", "ring") == "painted_edge" \
            and getattr(self.camera, "camera_position", None) is not None

    def _wall_share(self, side: int) -> float:
        """The share of a painted wall's width this side's rims show as rim: the median
        of its whole rims' (_learn_edge_bias), ``wall_share_start`` until three."""
        if side not in self._wall_share_memo:  # (asked for by every fit of a look and every follow)
            seen = self._wall_share_seen.get(side)
            self._wall_share_memo[side] = float(np.clip(np.median(seen), 0.0, 1.0)) \
                if seen is not None and len(seen) >= 3 else self.wall_share_start
        return self._wall_share_memo[side]

    def learnt(self) -> dict[str, dict[int, list[float]]]:
        """What this detector has learnt from the rims it has seen: each side's edge
        offsets and wall shares (_learn_edge_bias). A copy looking elsewhere (the live
        page's worker) sends them back for ``adopt``."""
        return {"edge_bias": {s: list(v) for s, v in self._edge_bias_seen.items()},
                "wall_share": {s: list(v) for s, v in self._wall_share_seen.items()}}

    def adopt(self, learnt: dict[str, dict[int, list[float]]]) -> None:
        """Take what a copy of this detector learnt (``learnt()``) in place of its own:
        the copy started from this one's and has seen every look since."""
        self._edge_bias_seen = {s: deque(v, maxlen=64) for s, v in learnt["edge_bias"].items()}
        self._wall_share_seen = {s: deque(v, maxlen=64) for s, v in learnt["wall_share"].items()}
        self._edge_bias_memo.clear()
        self._wall_share_memo.clear()

    def _wall_learnable(self, side: int) -> bool:
        """Whether this side's rims stand out from the mat enough to learn its wall's
        share from: set-up does not warn about them (calibrate.rim_contrasts; a green rim
        on a green mat edges into the mat's own greens)."""
        return side not in self._rim_warned

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

    # -- tokens ------------------------------------------------------------------------
    def _surface_height(self, xy: np.ndarray) -> float:
        """Height of the surface at a world point: the highest platform whose footprint
        holds it, else the floor."""
        from shapely.geometry import Point, Polygon

        z = 0.0
        for piece in self.terrain:
            if piece.type == "platform" and Polygon(piece.footprint).contains(Point(float(xy[0]), float(xy[1]))):
                z = max(z, piece.height_in)
        return z

    def _tokens(self, frame: np.ndarray, floor_bgr: np.ndarray, lab: np.ndarray, usable: np.ndarray,
                markers: Any, not_here: np.ndarray | None = None) -> Detections:
        """Tokens are 1 in discs lying on the floor or a platform. Each disc found is
        looked at again up close: a top-down crop at 4x the table resolution, where a
        0.66 in tag (too small for a whole-frame search) decodes reliably."""
        rows = []
        taken: list[np.ndarray] = []

        def add(xy, z, kind, tag, score):
            taken.append(np.asarray(xy, float))
            rows.append({"xyz": (float(xy[0]), float(xy[1]), z), "kind": kind, "tag_id": tag, "score": score})

        if markers is not None:  # tags big enough to be found in the whole frame
            for tag_id, corners in zip(markers.ids, markers.corners):
                kind = self._token_kind(int(tag_id))
                if kind is None or (kind == KIND_STATE and not self._state_known(int(tag_id))):
                    continue
                xy = np.asarray(self.camera.unproject(corners, TOKEN_THICKNESS_IN), float).mean(axis=0)
                z = self._surface_height(xy)
                if z > 0:
                    xy = np.asarray(self.camera.unproject(corners, z + TOKEN_THICKNESS_IN), float).mean(axis=0)
                add(xy, z, kind, int(tag_id), 1.0)
        diam = max(spec.diameter_in for spec in self.config.tokens.values())
        n_tokens = sum(len(spec.tag_ids) + spec.untagged for spec in self.config.tokens.values())
        # State tokens (ids 80-99) are discs too: with recognition on, room for them; with
        # it off they are still read, so that a printed tag is never taken for a plain token.
        st = self.config.state_tokens
        n_state = self.max_state_tokens if st is not None else 4
        discs = [(xy, sc, which, diam) for xy, sc, which in self._discs(lab, usable, diam, max(4, 2 * n_tokens) + n_state,
                                                                             not_here)]
        if st is not None and abs(st.diameter_in - diam) > 0.1:  # state tokens of their own size
            discs += [(xy, sc, "state", st.diameter_in)
                      for xy, sc in self._untagged_discs(lab, usable, "objective", st.diameter_in, n_state, not_here)]
        state_seen: list[tuple[int, np.ndarray]] = []
        paper: list[tuple[np.ndarray, bool]] = []
        no_tag: list[tuple] = []
        maybe: list[tuple[np.ndarray, float, float]] = []  # discs nothing claimed (_name_discs)
        for xy, score, which, d in discs:
            if any(np.hypot(*(xy - t)) < d for t in taken):
                continue
            n_rows = len(rows)
            tag = self._cached_tag(xy)
            tag_face = False  # a printed tag not read this look (half in a shadow)
            face = 0.0  # how much the disc looks like a printed tag (TagRead.face)
            unread = False  # an objective's or treasure's tag, seen but not read
            if tag is None:
                got = self.tags.recall_or_read(frame, xy, d, self.tag_face_floor, self._full_count, no_tag)
                tag, face = got.tag, got.face
                if got.centre is not None:  # (read where the disc's edge says it lies)
                    xy = got.centre
                tag_face = got.tag_face(self.tag_face_floor, self.tag_face_cost)
                if tag_face and self._token_kind(got.best) != KIND_STATE:
                    # An objective or treasure tag the cut-out missed: taken as a token of
                    # its disc's colour, its tag unknown (-1), never a base.
                    paper.append((np.asarray(xy, float), True))
                    tag_face, unread = False, True
                if tag is not None and self._token_kind(tag) != KIND_STATE:
                    self._tag_pos[tag] = xy
            if tag is not None and self._token_kind(tag) == KIND_STATE:
                # Never an objective or treasure: "they do not interact with the battle".
                state_seen.append((tag, xy))
                if self._state_known(tag):
                    add(xy, 0.0, KIND_STATE, tag, score)
                else:
                    taken.append(np.asarray(xy, float))
                    paper.append((np.asarray(xy, float), True))
                continue
            if tag_face:
                # No token to report yet, but paper all the same, never a base (nor a
                # plain objective); read again at the next look.
                taken.append(np.asarray(xy, float))
                paper.append((np.asarray(xy, float), False))
            elif which == "state":
                pass  # a disc of the state tokens' size with no state tag: no token
            elif tag is not None:
                add(xy, 0.0, self._token_kind(tag) or KIND_OBJECTIVE, tag, score)
            elif which == "tag":
                pass  # a patch of change with no tag read: no token
            elif unread and which in ("objective", "treasure") and getattr(self.config.tokens.get(which), "tag_ids", ()):
                # Blur or a shadow over its tag: still the game's token, of its colour's
                # kind (a soft focus had lost 8 of the eval sets' 11 tagged objectives).
                add(xy, 0.0, KIND_OBJECTIVE if which == "objective" else KIND_TREASURE, -1, score)
            elif (styled := self._styled_token(lab, xy, d)) is not None:
                # A flat disc of one of the colours the config gives this table's plain
                # tokens (untagged_token_styles), whichever pass found it.
                add(xy, 0.0, styled, -1, score)
            elif which in self._token_styles_by_kind:
                pass  # a kind whose plain tokens' colours are configured: this face is none of them
            elif which == "treasure" and self.config.tokens["treasure"].untagged > 0:
                add(xy, 0.0, KIND_TREASURE, -1, score)
            elif which == "objective" and self.config.tokens["objective"].untagged > 0 and self._neutral_disc(lab, xy):
                # A plain objective is printed card, white and black: a red damage token or
                # any coloured disc of its size is not one ("other tokens" never count).
                add(xy, 0.0, KIND_OBJECTIVE, -1, score)
            if len(rows) == n_rows and tag is None and not tag_face and which != "state" \
                    and face >= self.name_face_min and self._neutral_disc(lab, xy, d, self.name_disc_chroma):
                maybe.append((np.asarray(xy, float), score, d))
        self._name_discs(frame, rows, maybe)
        # Keep cached reads of tokens still lying where they were read; votes of places
        # looked at in the last two looks.
        self._state_tag_pos = state_seen
        self._paper_discs = paper
        self.tags.no_tag_seen = no_tag
        self.tags.forget_votes(since=self._full_count - 2 * max(1, self.tokens_every))
        self._disc_ev = None  # (the look's maps: not kept past it)
        dets = Detections.from_rows(rows)
        self._add_sigma(dets)
        return dets

    def bare(self, frame: np.ndarray, xyz: np.ndarray, radius_in: np.ndarray) -> np.ndarray:
        """Which places (centre ``xyz`` on the surface there, ``radius_in``) look as the
        empty table does in ``frame`` (vision.bare): nothing stands there. All False
        without an empty-table picture."""
        xyz = np.asarray(xyz, float).reshape(-1, 3)
        if self._background_bgr is None or self._background_bgr.shape != frame.shape:
            return np.zeros(len(xyz), bool)
        out = changed_share(self.relight(frame), self._background_bgr, self.camera, xyz, radius_in) < BARE_SHARE
        # A place on the floor that terrain hides from the camera looks as the empty table
        # does whether or not a fighter stands there: never judged bare.
        r = np.broadcast_to(np.asarray(radius_in, float), (len(xyz),))
        for i in np.flatnonzero(out & (xyz[:, 2] <= 0.0)):
            c, rr = np.round(self.floor.to_pixel(xyz[i:i + 1, :2])[0]).astype(int), int(np.ceil(r[i] * self.px_per_in))
            win = self._terrain_mask_floor[max(c[1] - rr, 0):c[1] + rr + 1, max(c[0] - rr, 0):c[0] + rr + 1]
            out[i] = not win.any()
        return out

    @property
    def _token_styles_by_kind(self) -> set[str]:
        """The token kinds whose plain tokens' colours the config lists (and that have some)."""
        return {k for k, spec in self.config.tokens.items() if spec.untagged > 0 and spec.untagged_styles}

    def _styled_token(self, lab: np.ndarray, xy: np.ndarray, diameter_in: float = 1.0) -> int | None:
        """KIND_OBJECTIVE / KIND_TREASURE if the floor disc at ``xy`` has the flat face of
        one of the configured plain-token colours of a kind the table has plain tokens
        of (vision.tokens), else None."""
        styles = self._token_styles
        if not styles:
            return None
        c = self.floor.to_pixel(np.asarray(xy, float)[None])[0]
        rims = np.array([self._rim_seen[s] for s, _, _ in self._side_lab()], np.float32)
        got = styles.face_kind(face_samples(lab, c, diameter_in / 2 * self.px_per_in), rims)
        if got is None or self.config.tokens[got[0]].untagged <= 0:
            return None
        return KIND_OBJECTIVE if got[0] == "objective" else KIND_TREASURE

    def _neutral_disc(self, lab: np.ndarray, xy: np.ndarray, diameter_in: float = 1.0, chroma: float = 15.0) -> bool:
        """``vision.tokens.neutral_middle`` of the disc at ``xy`` (inches) in the floor view."""
        return neutral_middle(lab, self.floor.to_pixel(np.asarray(xy, float)[None])[0],
                              0.3 * diameter_in * self.px_per_in, chroma)

    @property
    def tag_face_floor(self) -> float:
        """tag_face_min as this picture shows it: a tag's border is one cell wide (a sixth
        of a tag two thirds of the disc), and blur of sigma ``blur_in`` leaves it
        erf(cell / (2 sqrt 2 sigma)) of its contrast (a miniature's score falls alike). At
        the eval sets' 0.02 in this is tag_face_min; at 720p over an Epic table (0.07 in)
        a little over half of it."""
        if not self.blur_in or self.blur_in <= 0:
            return self.tag_face_min
        diam = max((spec.diameter_in for spec in self.config.tokens.values()), default=1.0)
        cell = 0.66 * diam / 6
        return self.tag_face_min * math.erf(cell / (2 * math.sqrt(2) * self.blur_in))

    def _state_known(self, tag_id: int) -> bool:
        """A state-token tag this table gives a meaning to (recognition on)."""
        st = self.config.state_tokens
        return st is not None and st.meaning(tag_id) is not None

    def _settle_discs(self, bases: Detections, tokens: Detections, lab: np.ndarray,
                      frame: np.ndarray | None = None) -> tuple[Detections, Detections]:
        """A 25 mm base and a 1 in token are the same size from above. A plain disc
        centred inside a base found by its rim is that base (a token under a base cannot
        be seen anyway), unless it shows an objective's face, concentric all round; a
        disc with a token tag is always a token. Plain tokens are then capped at the
        number the game config says are on the table. With the ``frame``, a small
        white-rimmed base no token claims is looked at up close (_paper_rim)."""
        keep_token = np.ones(len(tokens), bool)
        keep_base = np.ones(len(bases), bool)
        took: dict[int, np.ndarray] = {}  # per plain token: the bases it took for its own edge
        # Bases found as a patch that a token's disc could be: one the disc fills at least
        # half of (a 40 x 20 mm stand, a 32 mm base; not a 60 x 35 mm oval, whose yellow
        # miniature read as a gold disc took it for its own).
        disc_patch = bases.from_foreground & (self._paper_area_share(bases) >= 0.5)
        if len(bases) and self._paper_discs:
            # A token whose tag is not read yet is still a token: a base of its size
            # centred on it is the paper disc's edge read as a rim (a white side's 25 mm
            # base and a 1 in token look alike from above), not a fighter.
            paper = np.array([xy for xy, _ in self._paper_discs], float)
            d = np.linalg.norm(bases.xyz[:, None, :2] - paper[None], axis=2)
            small = bases.base_mm <= 1.2 * self._paper_diameter_in() * MM_PER_IN
            keep_base &= ~(small & (d < 0.35 * self._paper_diameter_in()).any(axis=1))
            keep_base &= ~(disc_patch & (d < bases.base_mm[:, None] / MM_PER_IN / 2).any(axis=1))
        if len(bases) and len(tokens) and disc_patch.any():
            # A base found only as a patch of its outline's shape is no more than that: a
            # token disc is such a patch too (a 1 in disc fills 40 x 20 mm outlines' middles
            # about as well as the stands do). A token found on it is the token.
            d = np.linalg.norm(tokens.xyz[:, None, :2] - bases.xyz[None, :, :2], axis=2)
            on = disc_patch[None, :] & (d < bases.base_mm[None, :] / MM_PER_IN / 2) & keep_base[None, :]
            for i in np.flatnonzero(on.any(axis=1) & (tokens.tag_id < 0)):
                took[i] = on[i]  # (given back if the token is capped away, below)
            keep_base &= ~on.any(axis=0)
        if len(bases) and len(tokens):
            d = np.linalg.norm(tokens.xyz[:, None, :2] - bases.xyz[None, :, :2], axis=2)
            inside = (d < (bases.base_mm[None, :] / MM_PER_IN / 2)) & keep_base[None, :]
            # Two tags read inside one "rim": the arcs of paper discs side by side closing
            # a large circle (a 60 mm white one round two state tokens), not a base with
            # tokens lying on it.
            keep_base &= (inside & (tokens.tag_id[:, None] >= 0)).sum(axis=0) < 2
            for i in np.flatnonzero(inside.any(axis=1)):
                # A flat disc of a plain token's colour with no rim beyond it: the base
                # "around" it is the token's own edge, unless a larger base's rim lies
                # round it (a gold miniature on a 40 mm base is no treasure).
                # (and only a base on the token's own centre: a disc half on a 25 mm
                # base beside it is that base's rim and miniature, no token)
                token_sized = bases.base_mm[inside[i]] <= 1.2 * self._paper_diameter_in() * MM_PER_IN
                styled = token_sized.all() and (d[i][inside[i]] < 0.25).all() \
                    and self._styled_token(lab, tokens.xyz[i, :2]) == tokens.kind[i]
                if tokens.tag_id[i] >= 0 or styled or (tokens.kind[i] == KIND_OBJECTIVE
                                                       and self._objective_face(lab, tokens.xyz[i, :2])):
                    # Nothing stands on a token: a "base" centred on it is the disc's own
                    # edge read as a rim (a white side's rect stands fit a white disc).
                    if tokens.tag_id[i] < 0:
                        took[i] = took.get(i, False) | (keep_base & (d[i] < 0.5))
                    keep_base &= ~(d[i] < 0.5)
                else:
                    keep_token[i] = False
        if self.token_edges_explain and len(bases) and keep_token.any() and self._weak_edges:
            keep_base &= ~self._on_token_edges(bases, tokens[keep_token])
        if frame is not None and len(bases):
            keep_base &= ~self._paper_rim(frame, bases, keep_base)
        for kind, name in ((KIND_OBJECTIVE, "objective"), (KIND_TREASURE, "treasure")):
            plain = np.flatnonzero(keep_token & (tokens.kind == kind) & (tokens.tag_id < 0))
            spec = self.config.tokens.get(name)
            # The game's untagged tokens, and its tagged ones whose tag was not read now
            # (blur, a shadow): never more tokens of a kind than the game has.
            read = set(tokens.tag_id[keep_token & (tokens.kind == kind)].tolist())
            untagged = 0 if spec is None else spec.untagged
            unread = 0 if spec is None else len(set(spec.tag_ids) - read)
            if len(plain) <= untagged:
                continue
            # A disc with the flat face of an untagged token's colour is one of those; a
            # tag not read now leaves a printed card's place, not one for such a disc.
            styled = np.array([self._styled_token(lab, tokens.xyz[i, :2]) == kind for i in plain], bool) \
                if name in self._token_styles_by_kind else np.zeros(len(plain), bool)
            order = np.argsort(-tokens.score[plain], kind="stable")
            faced, unfaced = [int(plain[k]) for k in order if styled[k]], [int(plain[k]) for k in order if not styled[k]]
            # The untagged places to the discs of their colours first; the rest (an
            # untagged token whose colour does not show: shade, blur) after the tags' own.
            n_faced = min(len(faced), untagged)
            n_unfaced = min(len(unfaced), unread + untagged - n_faced)
            # Discs of a token's colour beyond the game's count go only if they look less
            # like its face than those kept; alike, which is which is not known, and a
            # disc left a token is never made a fighter.
            least = TOKEN_CAP_MARGIN * tokens.score[faced[n_faced - 1]] if n_faced else np.inf
            dropped = [i for i in faced[n_faced:] if tokens.score[i] < least] + unfaced[n_unfaced:]
            for i in dropped:
                keep_token[i] = False
                # A disc the game has no token left for is no token: the base it was taken
                # to be the edge of, or whose patch it was taken for, is a base again (a
                # pale miniature on a white side's 25 mm base looks like a white
                # objective's face; a yellow one on a yellow rim like a gold treasure).
                keep_base |= took.get(i, False)
        return bases[keep_base], tokens[keep_token]

    def _on_token_edges(self, bases: Detections, tokens: Detections) -> np.ndarray:
        """Which poorly seen round bases stand only on the edges of token discs: their
        rim's edge points (``_weak_edges``) on a token's disc or its edge, taken away,
        leave less of the circle than the base needed to be kept (_explained_away's rule,
        with tokens for the bases: nothing lies under a token, and the arcs of two paper
        discs side by side close a rim round bare mat)."""
        out = np.zeros(len(bases), bool)
        st = self.config.state_tokens
        diameter = {k: spec.diameter_in for k, spec in ((KIND_OBJECTIVE, self.config.tokens.get("objective")),
                                                        (KIND_TREASURE, self.config.tokens.get("treasure")),
                                                        (KIND_STATE, st)) if spec is not None}
        radius = np.array([diameter.get(int(k), 1.0) / 2 for k in tokens.kind])
        margin = self.explained_margin_px / self.px_per_in
        for j in range(len(bases)):
            pts = self._weak_edges.get(tuple(bases.xyz[j]))
            if pts is None or not len(pts):
                continue
            # Tokens beside the rim, not on its middle: a disc nearly concentric with a
            # base is that base's own top or a token read on it, which the rest of
            # _settle_discs decides (a purple 25 mm base under a disc read as an objective).
            level = (np.abs(tokens.xyz[:, 2] - bases.xyz[j, 2]) < 0.5) & (
                np.hypot(tokens.xyz[:, 0] - bases.xyz[j, 0], tokens.xyz[:, 1] - bases.xyz[j, 1])
                >= bases.base_mm[j] / MM_PER_IN / 2)
            if not level.any():
                continue
            d = np.hypot(pts[:, None, 0] - tokens.xyz[None, level, 0], pts[:, None, 1] - tokens.xyz[None, level, 1])
            on = (d <= radius[None, level] + margin).any(axis=1)
            least = float(self._min_score(bases.base_mm[j]))
            if bases.score[j] < least:  # (kept as one its side's roster is short of: _nearly_seen)
                least *= self.roster_relax
            out[j] = bool(on.any() and bases.score[j] * (1.0 - on.mean()) < least)
        return out

    def _paper_rim(self, frame: np.ndarray, bases: Detections, keep: np.ndarray) -> np.ndarray:
        """Which bases are a paper token's edge: a round base of a token's size, of a
        white-rimmed side, whose middle shows a printed tag's face (TagReader.read:
        a tag's border scores 100 or so, a miniature on a white-rimmed 25 mm base 26 or
        less). The token pass misses such a token where a hand's shadow falls round it
        (its disc is found against the empty table); its white paper ring is then read
        as a rim. A base found still where its middle was looked at in the last look is
        not looked at again (a decode costs ~10 ms)."""
        paper_d = self._paper_diameter_in()
        white = [s for s, lab, _ in self._side_lab() if np.hypot(lab[1], lab[2]) < 15.0 and lab[0] / 0.35 > 128]
        out = np.zeros(len(bases), bool)
        seen: list[np.ndarray] = []
        for j in np.flatnonzero(keep & np.isin(bases.side, white) & (bases.shape == 0) & (bases.xyz[:, 2] == 0)
                                & (bases.base_mm <= 1.2 * paper_d * MM_PER_IN)):
            xy = bases.xyz[j, :2].copy()
            if any(np.hypot(*(xy - p)) < 0.05 for p in self._mini_seen):
                seen.append(xy)
                continue
            got = self.tags.read(frame, xy, paper_d, self.tag_face_floor, self._full_count)
            if got.tag is not None or got.tag_face(self.tag_face_floor, self.tag_face_cost):  # (read: a token's id)
                out[j] = True
            else:
                seen.append(xy)
        self._mini_seen = seen
        return out

    def _name_discs(self, frame: np.ndarray, rows: list[dict], maybe: list[tuple[np.ndarray, float, float]]) -> None:
        """Tags too small or soft to decode, named among the ids the game config lists
        that no token of this look has read: each candidate's code drawn as the camera
        would see it and correlated with the close-up (``vision.tag_match.likeness``),
        one id a disc, the best assignment kept where it is clear (``assign``). A tag
        too small to decode (0.66 in is 11 px at 720p) is still more like its own code
        than like the game's few others. ``rows``: this look's tokens, those of an
        objective or treasure colour whose tag was not read (-1) are named in place
        (likeness ``name_floor`` or more); ``maybe``: discs nothing claimed (xy, score,
        diameter), made tokens of their id's kind only on stronger evidence
        (``name_disc_floor``, and more like the id's code than like a blob: a disc
        alone does not make a token, a miniature's blob looks like a blurred tag)."""
        kinds = {k: KIND_NAMES[k] for k in (KIND_OBJECTIVE, KIND_TREASURE)}
        read = {r["tag_id"] for r in rows}
        ids = tuple(sorted({i for k in kinds.values() if (spec := self.config.tokens.get(k)) is not None
                            for i in spec.tag_ids} - read))
        named = [r for r in rows if r["tag_id"] < 0 and r["kind"] in kinds]
        if not ids or not (named or maybe):
            return
        self._name_votes = [v for v in self._name_votes
                            if v[4] >= self._full_count - 4 * max(1, self.tokens_every)][-64:]
        kind_of = np.array([self._token_kind(i) for i in ids])
        like, floor = [], []
        for r in named:
            diam = self.config.tokens[kinds[r["kind"]]].diameter_in
            per_id = self._tag_likeness(frame, np.array(r["xyz"][:2]), diam, ids).per_id.copy()
            per_id[kind_of != r["kind"]] = -1.0  # a disc of an objective's colour is an objective
            like.append(per_id)
            floor.append(self.name_floor)
        for xy, _, diam in maybe:
            got = self._tag_likeness(frame, xy, diam, ids)
            like.append(np.where(got.per_id >= got.blob + self.name_blob_gain, got.per_id, -1.0))
            floor.append(self.name_disc_floor)
        names = assign(np.array(like), np.array(floor), self.name_margin)
        for r, c in zip(named, names):
            if c is not None:
                r["tag_id"] = ids[c]
        for (xy, score, _), c in zip(maybe, names[len(named):]):
            if c is not None:
                rows.append({"xyz": (float(xy[0]), float(xy[1]), 0.0), "kind": int(kind_of[c]), "tag_id": ids[c],
                             "score": score})

    def _tag_likeness(self, frame: np.ndarray, xy: np.ndarray, diam: float, ids: tuple[int, ...]) -> Likeness:
        """``likeness`` of the disc at ``xy`` to each of ``ids``, averaged over its looks at
        this place (at most ``name_looks`` of them drawn: a token lies still)."""
        vote = next((v for v in self._name_votes if v[1] == ids and np.hypot(*(v[0] - xy)) < 0.08), None)
        if vote is None:
            vote = [np.asarray(xy, float).copy(), ids, Likeness(np.zeros(len(ids)), 0.0), 0, self._full_count]
            self._name_votes.append(vote)
        if vote[3] < self.name_looks:
            _, gray, S = self.tags.closeup(frame, xy, diam)
            like = likeness(gray, S, diam, self.config.table.dictionary, ids)
            vote[2] = Likeness(vote[2].per_id + like.per_id, vote[2].blob + like.blob)
            vote[3] += 1
        vote[4] = self._full_count
        return Likeness(vote[2].per_id / vote[3], vote[2].blob / vote[3])

    def _paper_area_share(self, bases: Detections) -> np.ndarray:
        """How much of each base's outline the largest token disc would cover (its area
        over the outline's, at most 1)."""
        mm = np.where(bases.shape[:, None] > 0, bases.size_mm, bases.base_mm[:, None]) / MM_PER_IN
        area = np.where(bases.shape == SHAPE_CODES["rect"], mm[:, 0] * mm[:, 1], math.pi / 4 * mm[:, 0] * mm[:, 1])
        return np.minimum(1.0, math.pi / 4 * self._paper_diameter_in() ** 2 / np.maximum(area, 1e-9))

    def _paper_diameter_in(self) -> float:
        """The largest token disc on this table (plain tokens or state tokens)."""
        st = self.config.state_tokens
        return max([spec.diameter_in for spec in self.config.tokens.values()]
                   + ([st.diameter_in] if st is not None else []) + [1.0])

    def _objective_face(self, lab: np.ndarray, xy: np.ndarray, diameter_in: float = 1.0) -> bool:
        """``vision.tokens.objective_face`` of the disc at ``xy`` (inches) in the floor view."""
        return objective_face(lab, self.floor.to_pixel(np.asarray(xy, float)[None])[0], diameter_in / 2 * self.px_per_in)

    def _cached_tag(self, xy: np.ndarray) -> int | None:
        """A disc where a tag was read before, not moved since: the same token. Reading
        a tag costs a close-up re-sampling; tokens mostly lie still."""
        for tag, pos in [*self._tag_pos.items(), *self._state_tag_pos]:
            if np.hypot(*(pos - xy)) < 0.08:
                return tag
        return None

    def _token_kind(self, tag_id: int) -> int | None:
        kind = self.config.token_kind_for_tag(tag_id)
        if kind is None and STATE_TAG_RANGE[0] <= tag_id <= STATE_TAG_RANGE[1]:
            return KIND_STATE  # (a config with state tokens may not list 80-99 as objective/treasure tags)
        if kind is None:  # the physical spec's id ranges
            kind = "objective" if 40 <= tag_id <= 59 else "treasure" if 60 <= tag_id <= 79 else None
        return None if kind is None else (KIND_OBJECTIVE if kind == "objective" else KIND_TREASURE)

    def _token_ids_key(self) -> tuple:
        """What the token ids depend on: the config's token kinds and their tag ids."""
        return tuple((kind, tuple(spec.tag_ids)) for kind, spec in self.config.tokens.items())

    def _discs(self, lab: np.ndarray, usable: np.ndarray, diameter_in: float, n_max: int,
               not_here: np.ndarray | None = None):
        """Token-sized discs: bright neutral (white tokens, printed tags) or gold. Yields
        (xy, score, 'objective' | 'treasure')."""
        out = []
        # Gold first: its evidence is specific, while the objective pass takes any change.
        for which in ("treasure", "objective"):
            out += [(xy, sc, which) for xy, sc in self._untagged_discs(lab, usable, which, diameter_in, n_max, not_here)]
        n_tags = sum(len(spec.tag_ids) for spec in self.config.tokens.values())
        if n_tags:
            # A printed tag on paper as pale as the mat changes the picture only where its
            # black is: no ring for the passes above. Its body is a compact patch of
            # change the size of the tag, with unchanged table round it; such patches
            # are read for a tag (and are tokens only if one is read). A few more than
            # the tags: miniatures on pale bases are such patches too, and with one or two
            # tags in the game they took every place (a tag plain to see at 4K unread).
            taken = [xy for xy, _, _ in out]
            out += [(xy, sc, "tag") for xy, sc in self._tag_bodies(lab, usable, diameter_in, 2 * n_tags + 6, not_here)
                    if all(np.hypot(*(xy - t)) > 0.5 * diameter_in for t in taken)]
        return out

    def _tag_bodies(self, lab: np.ndarray, usable: np.ndarray, diameter_in: float, n_max: int,
                    not_here: np.ndarray | None = None):
        """Compact patches of change the size of a token's printed tag (about two thirds
        of its disc), with little change in a ring round them: (xy, score), best first."""
        ev = self._disc_evidence(lab, usable, "objective")
        half = cv2.resize(ev, (ev.shape[1] // 2, ev.shape[0] // 2), interpolation=cv2.INTER_AREA)
        S = self.px_per_in / 2
        r_body, r_out = 0.33 * diameter_in * S, 0.75 * diameter_in * S
        k = int(np.ceil(r_out)) + 1
        yy, xx = np.mgrid[-k:k + 1, -k:k + 1]
        rr = np.hypot(xx, yy)
        body, ring = rr <= r_body, (rr >= 0.6 * diameter_in * S) & (rr <= r_out)
        kern = body / max(body.sum(), 1) - ring / max(ring.sum(), 1)
        resp = cv2.filter2D(half, cv2.CV_32F, kern.astype(np.float32), borderType=cv2.BORDER_CONSTANT)
        rows, cols = _local_maxima(resp, 0.15, max(2, int(r_out)))
        best = np.lexsort((-resp[rows, cols], _on_bases(rows, cols, not_here)))[:n_max]
        xy = self.floor.to_world(2 * cols[best] + 0.5, 2 * rows[best] + 0.5)
        return [(p, float(resp[r, c])) for p, r, c in zip(xy, rows[best], cols[best])]

    def _untagged_discs(self, lab: np.ndarray, usable: np.ndarray, kind: str, diameter_in: float, n_max: int,
                        not_here: np.ndarray | None = None):
        """Plain tokens: a treasure is a gold disc, an objective a white disc with a black
        ring. A disc of exactly the token's size, with table all round it, is a token; a
        miniature of the same colour is neither round nor of that size."""
        ev = self._disc_evidence(lab, usable, kind)
        S = self.px_per_in
        r = diameter_in / 2 * S
        # Candidates at half resolution, the fit at full.
        half = cv2.resize(ev, (ev.shape[1] // 2, ev.shape[0] // 2), interpolation=cv2.INTER_AREA)
        k = ring_kernel(r * 0.39, r * 0.225, outer_gap_px=0.75, outer_width_px=1.0, outer_weight=0.8)
        resp = _correlate_many(half, [k], self._ring_spectra)[0]
        rows, cols = _local_maxima(resp, 0.25, max(2, int(r / 2)))
        # The strongest 4 n_max, fitted together (those off the bases first).
        on_base = _on_bases(rows, cols, not_here)
        best = np.lexsort((-resp[rows, cols], on_base))[: 4 * n_max]
        prs, pcs = _subpixel_peaks(resp, rows[best], cols[best])
        fits = _fit_rims_at(ev, 2 * pcs + 0.5, 2 * prs + 0.5, 0.4 * r, r + 0.35 * S, n_rays=64)
        found = []
        for i, fit in enumerate(fits):
            if fit is None:
                continue
            cx, cy, rad, cover, _, _ = fit
            # A shaded disc (a coin) fades toward its edge: its evidence edge falls inside,
            # by up to a third of the radius (a gold coin by a terrain piece's shadow at
            # 720p: 8.3 px of 10.5), never far outside.
            off = rad - r - self.edge_bias_px
            if off > max(2.5, 0.25 * r) or off < -max(2.5, 0.33 * r) or cover < 0.5:
                continue
            xy = self.floor.to_world(np.array([cx]), np.array([cy]))[0]
            found.append((xy, cover, bool(on_base[best[i]])))
        found.sort(key=lambda f: (f[2], -f[1]))
        kept: list[tuple[np.ndarray, float]] = []
        for xy, score, _ in found:
            if all(np.hypot(*(xy - k2)) > diameter_in for k2, _ in kept):
                kept.append((xy, score))
        return kept[:n_max]

    def _disc_evidence(self, lab: np.ndarray, usable: np.ndarray, kind: str) -> np.ndarray:
        """_untagged_discs' evidence (read-only): a treasure's gold, or for an objective
        any change from the empty table; 0 where not ``usable``. Both start from the
        frame's difference from the empty table, plane by plane: worked out once per
        look (``lab``, ``usable``) for both kinds, and each kind's map once (the state
        tokens' own size reuses the objectives')."""
        if self._disc_ev is None or self._disc_ev[0] is not lab or self._disc_ev[1] is not usable:
            self._disc_ev = (lab, usable, {})
        maps = self._disc_ev[2]
        if kind in maps:
            return maps[kind]
        if "diff" not in maps:
            maps["diff"] = [p - bg for p, bg in zip(cv2.split(lab), self._gold.bg)]  # (the empty table, per plane)
        d = maps["diff"]
        if "sq" not in maps:  # (the gold's mix starts from the same sum of squares)
            pp = d[0] * d[0]
            pp += d[1] * d[1]
            pp += d[2] * d[2]
            maps["sq"] = pp
        if kind == "objective":
            # White discs, black rings, printed tags: anything that differs from the
            # empty table, counted above this picture's noise (vision.bare); the disc's
            # size and roundness then decide. (Per channel plane: the same sums as over
            # the pixel's three values, in a third of the time.)
            ev = change_evidence(np.sqrt(maps["sq"]), usable)
        else:
            ev = self._gold.evidence(lab, diff=d, diff_sq=maps["sq"].copy())[0]
        ev[~usable] = 0.0
        ev.setflags(write=False)
        maps[kind] = ev
        return ev

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
                         self.floor_hands.px_per_in)
        if not skin.any():
            none = np.zeros((H, W), bool)
            return none, none
        skin = skin.astype(np.uint8)
        g = int(self.floor_hands.px_per_in * 2 * HAND_MASK_GROWTH_IN) | 1
        mask = cv2.dilate(skin, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (g, g)))
        return (cv2.resize(mask, (W, H), interpolation=cv2.INTER_NEAREST) > 0,
                cv2.resize(skin, (W, H), interpolation=cv2.INTER_NEAREST) > 0)

    def _side_lab(self) -> list[tuple[int, np.ndarray, tuple[float, ...]]]:
        """(index, rim colour as _lab gives it, round base sizes) per side. Kept while
        the config's sides stay the same: a look asks for them some hundred times (one
        Lab conversion per side each time). The colours are read-only."""
        sides = self.config.sides
        light = self.light
        key = (tuple((s.index, tuple(s.rim_bgr), tuple(s.bases_mm), bool(getattr(s, "shaped", ()))) for s in sides),
               self.config.base_diameters_mm, tuple(light.gain))
        cached = getattr(self, "_side_lab_cache", None)
        if cached is not None and cached[0] == key:
            return list(cached[1])
        out = []
        for s in sides:
            lab = _lab(np.uint8([[light.as_seen(s.rim_bgr)]]))[0, 0]  # the paint under this table's light
            lab.setflags(write=False)
            sizes = tuple(sorted(set(s.bases_mm))) or (() if getattr(s, "shaped", ()) else (
                self.config.base_diameters_mm or (25.0, 32.0, 40.0, 50.0, 60.0)))
            out.append((s.index, lab, sizes))
        self._side_lab_cache = (key, tuple(out))
        return out

    def _find_rings(self, lab: np.ndarray, rims: RimColours, usable: np.ndarray, view_index: int,
                    evs: dict[tuple[int, int], np.ndarray]) -> list[_Candidate]:
        """Candidate rim centres: the side's evidence correlated with a ring at each of
        its base sizes, at half resolution (4x cheaper); the fit that follows works at
        full resolution. Each size keeps its own candidates: a fit only finds the edge
        it is looking for when its rays start inside the right radius."""
        S = self.px_per_in
        rim_w = max(1.5, 0.09 * S)
        out: list[_Candidate] = []
        self._ring_labs[view_index] = lab  # the frame seen in this view (_base_body)
        if view_index < 0:
            self._halfs = {}
        unusable = ~usable
        for (side, _, sizes), ev in zip(self._side_lab(), rims.evidence(lab)):
            ev[unusable] = 0.0
            evs[(view_index, side)] = ev
            if not sizes:
                continue
            half = cv2.resize(ev, (max(1, ev.shape[1] // 2), max(1, ev.shape[0] // 2)), interpolation=cv2.INTER_AREA)
            radii = [mm / MM_PER_IN / 2 * S / 2 for mm in sizes]
            # All sizes from one spectrum of the side's evidence.
            resps = _correlate_many(half, [ring_kernel(r, max(1.0, rim_w / 2)) for r in radii], self._ring_spectra)
            for mm, r, resp in zip(sizes, radii, resps):
                rows, cols = _local_maxima(resp, self.score_threshold, max(2, int(r * 0.6)))
                prs, pcs = _subpixel_peaks(resp, rows, cols)
                out += [_Candidate(2 * pr + 0.5, 2 * pc + 0.5, side, mm, float(sc), view_index)
                        for pr, pc, sc in zip(prs.tolist(), pcs.tolist(), resp[rows, cols].tolist())]
            self._halfs[(view_index, side)] = half  # (_arc_candidates)
        return out

    def _arc_candidates(self, half: np.ndarray, side: int, view_index: int, fits: list[dict]) -> list[_Candidate]:
        """Centres of rims seen only in part: a miniature standing over most of its base
        leaves a crescent of rim, whose ring correlation peaks off the true centre (and a
        fit started there misses the arc). Each point of the rim's outer edge (evidence
        inside, none just outside) votes for the centre one radius inward along the
        evidence's gradient: a Hough transform of known radius, which a third of a circle
        localises as sharply as a whole one. Looked for only away from the rims already
        fitted (``fits``, from the ring candidates): a second chance, not a second search."""
        sizes = next(sz for s, _, sz in self._side_lab() if s == side)
        gx = cv2.Sobel(half, cv2.CV_32F, 1, 0, ksize=3, scale=0.125)
        gy = cv2.Sobel(half, cv2.CV_32F, 0, 1, ksize=3, scale=0.125)
        mag = cv2.magnitude(gx, gy)
        ys, xs = np.nonzero(mag > 0.04)
        if len(xs) < 8:
            return []
        w = mag[ys, xs]
        ux, uy = gx[ys, xs] / w, gy[ys, xs] / w
        H, W = half.shape
        # An outer edge: table (no evidence) two pixels outward, the rim two inward.
        ox = np.clip(np.rint(xs - 2 * ux), 0, W - 1).astype(int)
        oy = np.clip(np.rint(ys - 2 * uy), 0, H - 1).astype(int)
        ix = np.clip(np.rint(xs + 2 * ux), 0, W - 1).astype(int)
        iy = np.clip(np.rint(ys + 2 * uy), 0, H - 1).astype(int)
        outer = half[oy, ox] < 0.3 * half[iy, ix]
        done = np.array([(f["col"], f["row"], f["radius_px"]) for f in fits
                         if f["view"] == view_index and f["score"] >= self.min_coverage], float).reshape(-1, 3)
        if len(done) and outer.any():
            # Edges of rims already fitted (and anything on their bases) vote no more.
            k = np.flatnonzero(outer)
            px, py = 2 * xs[k] + 0.5, 2 * ys[k] + 0.5  # view pixels, as the fits
            d = np.hypot(px[:, None] - done[None, :, 0], py[:, None] - done[None, :, 1])
            outer[k[(d <= done[None, :, 2] + 3.0).any(axis=1)]] = False
        xs, ys, w, ux, uy = xs[outer], ys[outer], w[outer], ux[outer], uy[outer]
        if len(xs) < 8:
            return []
        out = []
        for mm in sizes:
            r = mm / MM_PER_IN / 2 * self.px_per_in / 2
            if w.sum() < self.arc_threshold * 2 * np.pi * r:
                continue  # too little edge left for even one arc of this size
            cx = np.rint(xs + r * ux).astype(np.int64)
            cy = np.rint(ys + r * uy).astype(np.int64)
            ok = (cx >= 0) & (cx < W) & (cy >= 0) & (cy < H)
            acc = np.bincount(cy[ok] * W + cx[ok], weights=w[ok], minlength=H * W).reshape(H, W).astype(np.float32)
            # Votes scatter by a pixel or so (summed over 3x3); per unit of circumference,
            # so a score is the share of the circle seen times the evidence's rise.
            acc = cv2.boxFilter(acc, -1, (3, 3), normalize=False) * (1.0 / (2 * np.pi * r))
            rows, cols = _local_maxima(acc, self.arc_threshold, max(2, int(r * 0.6)))
            prs, pcs = _subpixel_peaks(acc, rows, cols)
            for rr, cc, pr, pc in zip(rows, cols, prs.tolist(), pcs.tolist()):
                row, col = 2 * pr + 0.5, 2 * pc + 0.5
                # Within a rim already fitted: that base, or its inner edge.
                if len(done) and bool((np.hypot(done[:, 0] - col, done[:, 1] - row)
                                       < 0.8 * np.maximum(done[:, 2], 2 * r)).any()):
                    continue
                out.append(_Candidate(row, col, side, mm, float(acc[rr, cc]), view_index))
        return out

    def _refine(self, cands: list[_Candidate], ev_by_view_side: dict[tuple[int, int], np.ndarray]) -> list[dict]:
        """Fit each candidate's rim: the outer edge of the side's colour along rays from
        the candidate centre, then a robust circle through those edge points. The fitted
        radius picks the size class; the share of rays whose edge lies on the circle is
        the score (a true rim is a circle; a miniature's outline is not). Candidates of
        one view, side and size are fitted together (_fit_rims)."""
        out = []
        S = self.px_per_in
        n_rays = 96
        ang = np.linspace(0, 2 * np.pi, n_rays, endpoint=False)
        cos, sin = np.cos(ang), np.sin(ang)
        side_sizes = {s: sizes for s, _, sizes in self._side_lab()}
        expected: dict[int, np.ndarray | None] = {}  # per side: the same for all its groups here
        fitted: list[tuple[_Candidate, tuple]] = []
        groups: dict[tuple[int, int, float], list[_Candidate]] = {}
        for c in cands:
            groups.setdefault((c.view, c.side, c.base_mm), []).append(c)
        # All sizes of a view and side in one fit (its fixed costs, paid once): each
        # size's rays over its own radii, the shorter ones padded with no evidence,
        # which the edge rule is told to leave alone (_fit_rims' valid_m).
        done: dict[tuple[int, int, float], tuple] = {}
        by_view_side: dict[tuple[int, int], list[tuple[float, list[_Candidate]]]] = {}
        for (view, side, mm), group in groups.items():
            by_view_side.setdefault((view, side), []).append((mm, group))
        for (view, side), sized in by_view_side.items():
            ev = ev_by_view_side[(view, side)]
            rhos = [np.arange(0.6 * r0, r0 + 0.35 * S, 0.5, dtype=np.float32)
                    for r0 in (mm / MM_PER_IN / 2 * S for mm, _ in sized)]
            m = max(len(r) for r in rhos)
            cx = np.array([c.col for _, group in sized for c in group])
            cy = np.array([c.row for _, group in sized for c in group])
            rho2 = np.concatenate([np.repeat(np.concatenate([r, r[-1] + 0.5 * np.arange(1, m - len(r) + 1,
                                                                                          dtype=np.float32)])[None],
                                             len(group), axis=0) for r, (_, group) in zip(rhos, sized)])
            valid = np.concatenate([np.full(len(group), len(r)) for r, (_, group) in zip(rhos, sized)])
            X = (cx[:, None, None] + rho2[:, None, :] * cos[None, :, None]).astype(np.float32)
            Y = (cy[:, None, None] + rho2[:, None, :] * sin[None, :, None]).astype(np.float32)
            prof = remap_rows(ev, X.reshape(-1, m), Y.reshape(-1, m)).reshape(len(cx), n_rays, m)
            prof *= (np.arange(m)[None, None, :] < valid[:, None, None])  # (no evidence past a ray's end)
            if side not in expected:
                expected[side] = self._expected_edges(side)
            start = np.concatenate([np.full(len(group), self._edge_radius(side, mm)) for mm, group in sized])
            least = np.concatenate([np.full(len(group), self._min_score(mm)) for mm, group in sized])
            plane, _ = self._view_and_height(view)
            wall = self._wall_px(side, plane.to_world(cx, cy), plane.z_in - self.config.base_thickness_in)
            fits = _fit_rims(prof, rho2, cos, sin, cx, cy, thin_px=0.2 * S, expect_r=expected[side],
                             expect_weight=self._prior_weight([side])[0], expect_min_score=least,
                             start_r=start, valid_m=valid, wall=wall, mat_floor=self._mat_floor([side] * len(cx)))
            k = 0
            for r, (mm, group) in zip(rhos, sized):
                n = len(group)
                done[(view, side, mm)] = (side, group, prof[k:k + n, :, :len(r)], r, cx[k:k + n], cy[k:k + n],
                                          fits[k:k + n], None if wall is None else wall[k:k + n])
                k += n
        rays = [done[key] for key in groups]
        fitted = self._learn_edge_bias(rays, cos, sin)
        ray_of = {id(c): (prof[i], rho, cx[i], cy[i])
                  for _, group, prof, rho, cx, cy, _, _ in rays for i, c in enumerate(group)}
        wall_of = {id(c): None if wall is None else wall[i]
                   for _, group, _, _, _, _, _, wall in rays for i, c in enumerate(group)}
        # Strongest candidates first: a rim fitted well claims its place, and the weaker
        # candidates round its centre (the same rim at other sizes, or read as another
        # side) give way to it.
        explained: list[tuple[int, float, float, float]] = []
        for c, fit in sorted(fitted, key=lambda cf: -cf[0].score):
            if any(v == c.view and np.hypot(c.col - x, c.row - y) < 0.5 * r for v, x, y, r in explained):
                continue
            fx, fy, rad, score, resid, thin = fit
            sizes = side_sizes[c.side]
            r_sizes = np.array(sizes) / MM_PER_IN / 2 * S + self.edge_bias_px
            k = int(np.argmin(np.abs(r_sizes - rad)))
            # Half-way to this side's next size either way: the edge's exact offset from
            # the true radius varies with contrast and blur, the sizes' spacing does not.
            gaps = np.abs(np.delete(r_sizes, k) - r_sizes[k])
            tol = float(np.clip(0.5 * gaps.min(), 1.0, 2.5)) if len(gaps) else 2.0
            if abs(r_sizes[k] - rad) > tol:
                # A crescent's own radius is loose (a quarter to a half of a circle): the
                # circle of the nearest size, up to a pixel past the tolerance, through its
                # edge is tried and kept if it sees nearly as much of the rim (a green
                # 40 mm base's thin crescent beside an overhanging miniature fitted 2.6 px
                # too wide and was lost). Under a quarter, rims and noise are not told
                # apart well enough to borrow a size (the bundled clip's phantoms).
                if not 0.25 <= score < 0.5 or abs(r_sizes[k] - rad) > tol + 1.0:
                    continue
                expect = self._expected_edges(c.side)
                r_fix = float(r_sizes[k] if expect is None else expect[k])
                fx0, fy0 = fx, fy
                fx, fy, share = _circle_at_radius(*ray_of[id(c)], cos, sin, fx, fy, r_fix)
                if share < max(self._min_score(sizes[k]), 0.8 * score):
                    continue
                if wall_of[id(c)] is not None:  # (the top's centre: as in _fit_rims)
                    fx, fy, _ = _circle_at_radius(*ray_of[id(c)], cos, sin, fx0, fy0, r_fix, wall_of[id(c)])
                rad, score = r_fix, share
            at_size = abs(r_sizes[k] - fit[2]) > tol  # (its radius borrowed from the size: _ranks)
            if score >= self._min_score(sizes[k]) and not self._base_body(c.view, fx, fy, rad, thin,
                                                                  ev_by_view_side[(c.view, c.side)]):
                continue
            bare = self._bare_beyond(c.view, fx, fy, sizes[k], cos, sin) if score < self.inside_check_below else None
            if bare is not None and bare < self.inside_bare_max:
                continue
            fit_row = {"row": fy, "col": fx, "side": c.side, "base_mm": sizes[k], "view": c.view,
                       "score": score, "radius_px": rad, "resid": resid, "corr": c.score, "at_size": at_size,
                       "bare": 1.0 if bare is None else bare}
            if score < self.inside_check_below:
                # A poorly seen rim's edge points, for _bases_from_candidates to take away
                # those a better-seen base round them explains.
                fit_row["edges"] = _rim_edge_points(*ray_of[id(c)], cos, sin, fx, fy, rad)
            out.append(fit_row)
            if score >= 0.5:
                explained.append((c.view, fx, fy, rad))
        return out

    def _min_score(self, base_mm: Any) -> Any:
        """The least share of a round rim's circle that must be seen as a clean edge for
        a base of this size (or sizes, an array): ``min_coverage``, or for bases over
        40 mm the share that is ``min_arc_mm`` of their rim."""
        return np.minimum(self.min_coverage, self.min_arc_mm / (np.pi * base_mm))

    def _edge_bias(self, side: int) -> float | None:
        """How far outside the true rim this side's half-evidence edge lies (view px),
        as learnt from its well-seen rims; None until three have been seen."""
        if side in self._edge_bias_memo:  # (asked for by every fit of a look and every follow)
            return self._edge_bias_memo[side]
        seen = self._edge_bias_seen.get(side)
        bias = float(np.median(seen)) if seen is not None and len(seen) >= 3 else None
        self._edge_bias_memo[side] = bias
        return bias

    def _edge_radius(self, side: int, base_mm: float) -> float:
        """Where a rim of this side and size shows its half-evidence edge (view px): its
        radius plus the side's edge bias (``edge_bias_px`` until learnt)."""
        bias = self._edge_bias(side)
        return base_mm / MM_PER_IN / 2 * self.px_per_in + (self.edge_bias_px if bias is None else bias)

    def _expected_edges(self, side: int) -> np.ndarray | None:
        """Where this side's rims' half-evidence edges lie, one radius per size (view px);
        None until the side's edge bias is learnt."""
        bias = self._edge_bias(side)
        sizes = next((sz for s, _, sz in self._side_lab() if s == side), ())
        return None if bias is None or not sizes else np.array(sizes) / MM_PER_IN / 2 * self.px_per_in + bias

    def _learn_edge_bias(self, rays: list[tuple], cos: np.ndarray, sin: np.ndarray) -> list[tuple["_Candidate", tuple]]:
        """Learn each side's edge bias from this look's nearly whole, thin rims; a side
        first learnt now has its fits made again expecting its sizes (_fit_rims). Returns
        (candidate, fit) for every fit.

        The half-evidence edge's offset from the true rim is the side's own (its colour
        against the mat, the blur): -0.1 to +0.95 px between the sides of the eval sets,
        the same to 0.1 px within a side. Most rims are half hidden by their miniatures,
        and those fitted with a free radius were the eval sets' largest position errors
        (0.05-0.12 in; floor RMS 0.033 -> 0.028 in with the sizes expected)."""
        S = self.px_per_in
        side_sizes = {s: sizes for s, _, sizes in self._side_lab()}
        new = set()
        for side, group, prof, rho, cx, cy, fits, wall in rays:
            r_true = np.array(side_sizes[side]) / MM_PER_IN / 2 * S
            bias = self._edge_bias(side)
            ref = self.edge_bias_px if bias is None else bias
            learn_wall = self._painted(side) and self._wall_learnable(side)
            for i, fit in enumerate(fits):
                if fit is None or fit[3] < 0.6 or fit[5] is None or fit[5] < 0.5:
                    continue
                if learn_wall:  # (the wall's whole width: the share in use may be 0)
                    plane, _ = self._view_and_height(group[i].view)
                    full = self._wall_px(side, plane.to_world(cx[i:i + 1], cy[i:i + 1]),
                                         plane.z_in - self.config.base_thickness_in, share=1.0)[0]
                    model = _wall_share_of(prof[i], rho, cos, sin, full) if np.hypot(*full) >= 1.0 else None
                    if model is not None:
                        # The top's radius, the wall told apart: the edge bias is the top's.
                        self._wall_share_seen.setdefault(side, deque(maxlen=64)).append(model[1])
                        self._wall_share_memo.pop(side, None)
                        fit = (fit[0], fit[1], model[0]) + tuple(fit[3:])
                off = fit[2] - r_true
                k = int(np.argmin(np.abs(off - ref)))
                if abs(off[k] - ref) < 1.5:
                    self._edge_bias_seen.setdefault(side, deque(maxlen=64)).append(float(off[k]))
                    self._edge_bias_memo.pop(side, None)
            if bias is None and self._edge_bias(side) is not None:
                new.add(side)
        fitted = []
        for side, group, prof, rho, cx, cy, fits, wall in rays:
            if side in new and self._prior_weight([side])[0] > 0:
                mm = group[0].base_mm
                start = np.full(len(group), self._edge_radius(side, mm))
                fits = _fit_rims(prof, rho, cos, sin, cx, cy, thin_px=0.2 * S, expect_r=self._expected_edges(side),
                                 expect_weight=self._prior_weight([side])[0], expect_min_score=self._min_score(mm),
                                 start_r=start, wall=wall, mat_floor=self._mat_floor([side] * len(cx)))
            fitted += [(c, fit) for c, fit in zip(group, fits) if fit is not None]
        return fitted

    def _base_body(self, view: int, cx: float, cy: float, rad: float, thin: float | None, ev: np.ndarray) -> bool:
        """Whether a rim fitted at (cx, cy) (view pixels, edge radius ``rad``) closes
        round a base, not round something else of the rim's colour and size:

        - not bare table in the middle: a base covers the table with its top and its
          miniature; the arcs of two white paper discs side by side (or a disc and
          another base's rim) close a circle round plain mat. The middle (0.6 of the
          radius) against the empty table: a base changes 28-100 % of it (a red 25 mm
          fighter on a red-brown mat, its base top near the mat's colour, 28 %), such a
          phantom 0-10 %. Only with a real empty table (not the first frame standing in).
        - not a solid disc of the rim's colour: a white die (a 0.6 in cube, its top and
          sides smeared by parallax) fills the middle with white (60-73 % rim evidence)
          and its edge is solid all the way in (13-21 % of the edge points thin); a real
          base is a thin rim round a base top: thin on 30 % or more where its middle is
          over 45 % rim colour (a monster painted in it: 71 %), at most 35 % rim colour
          in the middle where fewer are thin. Measured on the renders of issue #8, the
          bundled sample and the eval sets."""
        R = rad - self.edge_bias_px
        k = int(0.6 * R) + 1
        r0, r1 = max(int(round(cy)) - k, 0), int(round(cy)) + k + 1
        c0, c1 = max(int(round(cx)) - k, 0), int(round(cx)) + k + 1
        if r1 <= r0 or c1 <= c0:
            return True  # (a fit wandered off the view: its middle is not seen, as below)
        yy, xx = np.mgrid[r0:r1, c0:c1]
        middle = np.hypot(xx - cx, yy - cy) < 0.6 * R
        e = ev[r0:r1, c0:c1]
        middle = middle[:e.shape[0], :e.shape[1]]
        if middle.sum() < 5:
            return True
        if thin is not None and thin < self.solid_thin_max and float(e[middle].mean()) > self.solid_middle_min:
            return False
        lab = self._ring_labs.get(view)
        bg = self._bg_floor if view < 0 else (self._bg_platforms[view] if view < len(self._bg_platforms) else None)
        if lab is None or bg is None or self._background_bgr is None or self._background_bgr is self._frame_background:
            return True
        d = lab[r0:r1, c0:c1][middle] - bg[r0:r1, c0:c1][middle]
        changed = float((np.sqrt((d * d).sum(axis=1)) > 10.0).mean())
        return changed >= self.bare_middle_max

    def _bare_beyond(self, view: int, cx: float, cy: float, base_mm: float, cos: np.ndarray,
                     sin: np.ndarray) -> float | None:
        """The share of a band 0.08-0.16 in past a rim fitted at (cx, cy) (view pixels) for a
        base of ``base_mm`` that looks like the empty table (colour difference 15 or
        less), read along the fit's own rays (``cos``, ``sin``); None without a real
        empty table. Under ``inside_bare_max``, base all round
        it rather than table, it is a circle inside a bigger base, no base. A real
        rim, however little of it shows, has the table beyond some of it (or the terrain,
        which the empty table has too); a 32 mm circle fitted in the blotches of a green
        60 mm base's top and miniature, the rest of it under terrain, had 12 %. Measured
        on the eval sets, the bundled Warcry sample and two of our 1080p clips (full looks):
        no base found at the right size and place under 0.2 below score 0.35. Only with a
        real empty table."""
        lab = self._ring_labs.get(view)
        bg = self._bg_floor if view < 0 else (self._bg_platforms[view] if view < len(self._bg_platforms) else None)
        if lab is None or bg is None or self._background_bgr is None or self._background_bgr is self._frame_background:
            return None
        # Three circles, 0.08-0.16 in past the rim, not one: read on one circle, the share
        # round a public set's 32 mm circle in a 60 mm base went 0.12 -> 0.22 with the
        # camera 0.1 px different, and the circle became a fighter.
        ro = base_mm / MM_PER_IN / 2 * self.px_per_in + np.array([0.08, 0.12, 0.16])[:, None] * self.px_per_in
        col = np.rint(cx + ro * cos).astype(np.intp).ravel()
        row = np.rint(cy + ro * sin).astype(np.intp).ravel()
        h, w = lab.shape[:2]
        seen = (col >= 0) & (col < w) & (row >= 0) & (row < h)
        if seen.sum() < 24:
            return None
        d = lab[row[seen], col[seen]].astype(np.float32) - bg[row[seen], col[seen]]
        return float(((d * d).sum(axis=1) <= 15.0 ** 2).mean())

    # -- oval and rectangular bases ------------------------------------------------------
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
                    continue
                out.append(row)
        return out

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
        rims = [evs[k] for k in sorted(evs) if k[0] == -1] if self.pursue_rim_weight > 0 else []
        fg_stands = fg
        if rims and hand is not None and hand.any():
            # Not on a hand's arm either (the patch of foreground that holds the hand):
            # a sleeve's edge is a stand-wide strip of foreground, and its shading a rim.
            _, labels = cv2.connectedComponents(((fg >= 0.5) | hand).astype(np.uint8), connectivity=8)
            fg_stands = np.where(np.isin(labels, np.unique(labels[hand])), 0.0, fg).astype(np.float32)
        for p in pursue(fg_stands, outlines, threshold=self.pursue_stand_threshold, explained=explained, rims=rims,
                        rim_w=max(1.5, 0.09 * S), rim_weight=self.pursue_rim_weight) if any(
                sp.depth_mm / MM_PER_IN * S < self.pursue_max_depth_px for sp in specs) else []:
            if p.outline >= len(specs) or 2 * outlines[p.outline].hy >= self.pursue_max_depth_px:
                continue  # a round base's patch, or a base large enough for its rim to be fitted
            # A token's disc responds to a stand's outline too: a patch its own disc
            # explains better is that disc, not a stand.
            if any(response_at(fg, d, 0.0, p.col, p.row) >= p.response for d in discs):
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

    def _boundary_offset(self, edge: np.ndarray, found: Detections) -> float:
        """How far outside a base's edge its foreground ends on this table (view pixels),
        measured on the round bases this look fitted by their rims on the floor
        (``boundary_offset``); ``pursue_round_offset_px`` without any."""
        keep = (found.kind == KIND_BASE) & (found.shape == 0) & ~found.from_foreground & (np.abs(found.xyz[:, 2]) < 0.05)
        S = self.px_per_in
        centres = self.floor.to_pixel(found.xyz[keep, :2])
        off = boundary_offset(edge, centres, found.base_mm[keep] / MM_PER_IN / 2 * S)
        return self.pursue_round_offset_px if off is None else off

    def _outlines_short(self, found: Detections) -> dict[tuple[int, tuple[str, float, float]], int]:
        """(side, outline (shape, width mm, depth mm)) -> how many more bases of it the
        side's roster lists than ``found`` holds, only those short: round bases of sides
        that list them one per fighter, oval and rectangular ones of sides that list
        theirs so (not Epic units: their stands have their own pursuit)."""
        return roster_short(*self._roster_and_found(found))

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

    def _doubt(self, col: float, row: float, o: Outline, sides: set[int], view: int = -1) -> None:
        """Note a patch of outline ``o`` the pursuit could not name (_unnamed), on the
        floor or (``view``) a platform's top."""
        v, z = self._view_and_height(view)
        xy = v.to_world(np.array([col]), np.array([row]))[0]
        self._doubts.append(_Patch(float(xy[0]), float(xy[1]), z, o.hx / self.px_per_in, sorted(sides), o.shape, True))

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

    def _view_and_height(self, view: int) -> tuple[PlaneView, float]:
        """The floor view and 0 (``view`` -1), or a platform's view and its top's height."""
        if view < 0:
            return self.floor, 0.0
        piece, v, _ = self.platform_views[view]
        return v, float(piece.height_in)

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
        cand = {"row": cy, "col": cx, "side": side, "base_mm": key[1], "view": view, "score": self.min_coverage,
                "theta": theta, "resid": 0.0, "corr": p.response, "sides": 0, "rank": -1.0 + 0.01 * p.response,
                "from_foreground": True, "rivals": rivals}
        if key[0] == "round":
            cand.update(shape=0, radius_px=o.hx)
        else:
            cand.update(shape=SHAPE_CODES[key[0]], size_mm=(key[1], key[2]),
                        spec=next(sp for si, sp in self._shaped if (sp.shape, sp.width_mm, sp.depth_mm) == key))
        return cand

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

    def _fit_outlines(self, ev: np.ndarray, spec: Any, cands: list[dict]) -> list:
        """base_shapes.fit_shapes of the outline ``spec`` at each candidate (col, row,
        theta) in the evidence map ``ev``: one ShapeFit or None each."""
        S = self.px_per_in
        return fit_shapes(ev, spec.shape, spec.width_mm / MM_PER_IN / 2 * S, spec.depth_mm / MM_PER_IN / 2 * S,
                          np.array([c["col"] for c in cands]), np.array([c["row"] for c in cands]),
                          np.array([c["theta"] for c in cands]), px_per_in=S, bias=self.edge_bias_px)

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

    def _not_token_places(self, bases: Detections) -> np.ndarray:
        """Where no token can be seen: under the bases found by their rims that no token
        could be mistaken for (rectangles and ovals, round bases half as wide again as a
        token), a pixel in from their edge. A stand's miniature is a patch of change of a
        token's size: on an Epic tuning table 12 of the token search's 14 discs were
        stands, and three of its five objectives were never looked at. Bases found only
        as foreground, and small round ones, may be a token's disc itself
        (_settle_discs decides), so they are left to the search."""
        paper = self._paper_diameter_in() * MM_PER_IN
        sure = (bases.kind == KIND_BASE) & ~bases.from_foreground \
            & ((bases.shape > 0) | (bases.base_mm >= 1.5 * paper))
        mask = self._footprints(bases[sure]).astype(np.uint8)
        return cv2.erode(mask, np.ones((3, 3), np.uint8)).astype(bool)

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
        # Both ends show some rim too: an outline borrowing one stand's long rim and
        # a paper marker's edge (nothing at its ends) is not a stand.
        if abs(fit.offset - self.edge_bias_px) > 1.5 or fit.band_mean[0] + fit.band_mean[1] < self.min_ends_shaped:
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
        return (fit.score >= self.min_coverage_all_round and min(fit.band_mean) >= self.min_band_all_round
                and fit.cross <= self.max_cross_all_round and abs(fit.offset - self.edge_bias_px) <= 1.0)

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

    def _learn_rims(self, fits: list[dict], labs: dict[int, np.ndarray]) -> None:
        """Follow each side's rim colour as seen: the median colour just inside each
        well-fitted rim, averaged slowly. Paint under this light, dulled by blur, is not
        the config's nominal colour; a model of the nominal colour alone misses rims
        whose seen colour has drifted toward the table's."""
        changed = False
        for f in fits:
            if f["score"] < 0.5:
                continue
            lab = labs[f["view"]]
            r = f["radius_px"] - self.edge_bias_px
            ang = np.linspace(0, 2 * np.pi, 64, endpoint=False)
            rho = np.array([r - 1.2, r - 0.6], np.float32)
            X = (f["col"] + rho[None, :] * np.cos(ang)[:, None]).astype(np.float32)
            Y = (f["row"] + rho[None, :] * np.sin(ang)[:, None]).astype(np.float32)
            vals = cv2.remap(lab, X, Y, cv2.INTER_LINEAR).reshape(-1, 3)
            nominal = self._rim_seen[f["side"]]
            # Only the pixels nearest the current model: the rest is miniature or table.
            dist = np.linalg.norm(vals - nominal, axis=1)
            near = vals[dist <= np.percentile(dist, 40)]
            seen = 0.9 * nominal + 0.1 * np.median(near, axis=0)
            # Never let a side's colour drift into the table's own: at most 40 % of the
            # way from the paint colour toward the table's median colour.
            paint = self._rim_paint[f["side"]]
            limit = 0.4 * float(np.linalg.norm(paint - self._table_colour))
            step = seen - paint
            n = float(np.linalg.norm(step))
            if n > limit:
                seen = paint + step * (limit / n)
            self._rim_seen[f["side"]] = seen.astype(np.float32)
        for side, seen in self._rim_seen.items():
            if np.linalg.norm(seen - self._rim_in_use[side]) > 4.0:
                changed = True
        if changed:
            self._rim_in_use = {s: v.copy() for s, v in self._rim_seen.items()}
            rims = [self._rim_seen[s] for s, _, _ in self._side_lab()]
            self._rims_floor = RimColours(self._bg_floor, rims)
            self._rims_platforms = [RimColours(b, rims) for b in self._bg_platforms]

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
        while roster and self.roster_swap_share <= 1.0 and len(dropped) < 4:
            swap = self._roster_swap(fits, placed)
            if swap is None:
                break
            surplus, rival = swap
            again = self._placed(fits, dropped | {surplus})
            if rival not in again.kept_index:
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
