"""What a look found: ``Detections``, one dataclass of parallel numpy arrays (the Roboflow
supervision model), filtered with boolean masks: ``dets[dets.side == 0]``; and the kinds of
thing it can hold (``KIND_BASE``, ``KIND_OBJECTIVE``, ``KIND_TREASURE``, ``KIND_STATE``).

In: rows (dicts) from the detector's stages (``Detections.from_rows``) or parts to merge.
Out: the arrays the tracker reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..world import Doubt, TerrainPiece

KIND_BASE, KIND_OBJECTIVE, KIND_TREASURE = 0, 1, 2


# A tagged state token (activation, damage: ids 80-99), never an objective or treasure.
KIND_STATE = 3


KIND_NAMES = {KIND_BASE: "base", KIND_OBJECTIVE: "objective", KIND_TREASURE: "treasure", KIND_STATE: "state"}


STATE_TAG_RANGE = (80, 99)


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
