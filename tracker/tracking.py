"""Tracking: persistent fighter ids across frames, and what happened to them.

Each frame's bases are assigned to the known fighters by minimum total distance
(scipy's ``linear_sum_assignment``), gated by how far a fighter can have gone since it
was last seen, and never across sides. A new base must be seen in consecutive frames
before it becomes a fighter (no phantoms from one bad frame); a fighter that is not
seen is kept at its last position, marked occluded, while a hand is over it or for a
grace period; after that it is removed from the table.

Events (``placed``, ``moved`` with its distance, ``removed``, ``picked up treasure``,
``dropped treasure``, ``token placed``, ``token removed``) go to the ruling log. A
treasure token that vanishes (not under a hand) within 1" of a fighter was picked up by
that fighter, who carries it until a treasure token appears beside it again.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from .config import GameConfig
from .detection import HAND_MASK_GROWTH_IN, KIND_BASE, KIND_NAMES, KIND_OBJECTIVE, KIND_STATE, KIND_TREASURE, Detections
from .world import MM_PER_IN, Base, Fighter, HiddenArea, Token, WorldState

UNMATCHED = 1e6
_SHAPES = {0: "round", 1: "oval", 2: "rect"}
_SHAPE_CODES = {name: code for code, name in _SHAPES.items()}


def _shape_of(bases: Detections, j: int) -> dict[str, Any]:
    """Row j's base shape as _Track fields (nothing for a round base)."""
    if not len(bases.shape) or not bases.shape[j]:
        return {}
    return {"shape": _SHAPES[int(bases.shape[j])], "size_mm": (float(bases.size_mm[j, 0]), float(bases.size_mm[j, 1])),
            "angle_deg": float(bases.angle_deg[j])}


def _one_per_place(bases: Detections) -> np.ndarray:
    """Which of ``bases`` to keep so that no two overlap: bases never do, so two found
    one on the other (two fighters' follows that both found the stand between them) are
    one base, kept as its better-seen fit; the fighter whose follow found its neighbour
    is left unseen for the frame instead of doubled on that neighbour."""
    from .motion import narrowest_radius_in

    keep = np.ones(len(bases), bool)
    if len(bases) < 2:
        return keep
    r = narrowest_radius_in(bases)
    xy = bases.xyz[:, :2]
    d = np.hypot(xy[:, None, 0] - xy[None, :, 0], xy[:, None, 1] - xy[None, :, 1])
    on = d < 0.85 * (r[:, None] + r[None, :])
    np.fill_diagonal(on, False)
    if not on.any():
        return keep
    for i in np.argsort(-bases.score, kind="stable"):  # best seen first
        if keep[i]:
            keep[on[i]] = False
    return keep


@dataclass
class _Track:
    id: str
    side: int
    base_mm: float
    xyz: np.ndarray
    sigma_in: float
    hits: int = 1
    last_seen: int = 0
    first_seen: int = 0
    confirmed: bool = False
    occluded: bool = False
    moving_from: np.ndarray | None = None  # where a move began, for the "moved" event
    still_frames: int = 0
    shape: str = "round"  # oval / rect: size_mm (width >= depth) and the long axis' angle_deg
    size_mm: tuple[float, float] = (0.0, 0.0)
    angle_deg: float = 0.0
    vel: np.ndarray = field(default_factory=lambda: np.zeros(3))  # inches per frame while moving
    fit_score: float = 1.0  # how well its base is usually seen (the detector's score, smoothed)
    size_votes: dict[float, float] = field(default_factory=dict)  # round base size -> summed look scores
    rival_sides: tuple[int, ...] = ()  # the other sides its rim could be, as the last whole look saw it

    def predict(self, frames: int = 1) -> np.ndarray:
        """Where it should be ``frames`` frames after it was last seen: a model slid
        across the table keeps going (a unit of Epic stands moves ~0.5 in a frame)."""
        return self.xyz + self.vel * min(max(frames, 0), 3)

    @property
    def reach_in(self) -> float:
        """How far its base reaches from its centre: the radius of a round base, half the
        diagonal of an oval or rectangular one."""
        return (float(np.hypot(*self.size_mm)) if self.shape != "round" else self.base_mm) / MM_PER_IN / 2

    def base(self) -> Base:
        if self.shape == "round":
            return Base.round_mm(self.base_mm)
        return Base(self.shape, self.size_mm[0] / MM_PER_IN, self.size_mm[1] / MM_PER_IN, round(self.angle_deg, 2))

    def same_base(self, shape: str, size_mm: Any, base_mm: float) -> bool:
        if shape != self.shape:
            return False
        if shape == "round":
            return abs(base_mm - self.base_mm) < 1.0
        return abs(size_mm[0] - self.size_mm[0]) < 1.0 and abs(size_mm[1] - self.size_mm[1]) < 1.0


@dataclass
class Event:
    frame: int
    time_s: float
    kind: str  # placed | moved | removed | token placed | token removed | state token placed / moved / removed
    subject: str
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"frame": self.frame, "time_s": round(self.time_s, 3), "kind": self.kind,
                "subject": self.subject, **self.detail}


class FighterTracker:
    def __init__(self, config: GameConfig, *, fps: float = 15.0, max_speed_in_s: float = 30.0,
                 confirm_hits: int = 2, grace_s: float = 1.5, still_in: float = 0.1):
        self.config = config
        self._doubts: tuple = ()  # the last whole look's (Detections.doubts)
        self.fps = fps
        self.max_speed_in_s = max_speed_in_s
        self.confirm_hits = confirm_hits
        self.grace_s = grace_s
        self.still_in = still_in
        self.tracks: list[_Track] = []
        self.events: list[Event] = []
        self._next_id = 1
        self._last_index = -1
        self._tokens: dict[str, Token] = {}
        # token id -> (when it was first missed: a look did not find it, or a hand
        # covered it; the fighter beside it then, if any)
        self._token_missing: dict[str, tuple[float, str | None]] = {}
        self._carrying: dict[str, str] = {}  # fighter id -> treasure token id
        self.token_grace_s = 0.5
        # A hand this near a token's edge may hide it (the hand mask is grown
        # HAND_MASK_GROWTH_IN round the skin already; a token half under a finger is not found).
        self.token_hand_margin_in = 0.25
        self._lost: list[tuple[_Track, float]] = []  # fighters recently gone, for re-identification
        self.reidentify_s = 15.0
        # Fighters this close (edge to edge, inches) move as one when most of them do.
        self.unit_gap_in = 0.5
        self.unit_agree_in = 0.15  # a step per frame within this of the group's is the group's
        # Tagged activation / damage tokens beside bases (the config's state_tokens: section).
        self.state_tokens = None
        if config.state_tokens is not None:
            from .state_tokens import StateTokenTracker

            self.state_tokens = StateTokenTracker(config.state_tokens)

    def events_as_dicts(self) -> list[dict[str, Any]]:
        return [e.to_dict() for e in self.events]

    def settled(self, since: int | None = None) -> bool:
        """Every fighter confirmed, unhidden and seen in the last frame (or at frame
        ``since`` or later), and no token waiting to be declared gone: a still frame can
        change nothing here (the pipeline's change gate then holds every fighter)."""
        since = self._last_index if since is None else min(since, self._last_index)
        return all(t.confirmed and not t.occluded and t.last_seen >= since for t in self.tracks) \
            and not self._token_missing

    def _gate(self, frames_gap: int) -> float:
        return 0.6 + self.max_speed_in_s * max(1, frames_gap) / self.fps

    def update(self, dets: Detections, index: int, time_s: float, bare=None) -> WorldState:
        """This frame's detections into the state. ``bare``: (xyz (N, 3), radius_in (N,))
        -> which places look as the empty table does in this frame (the detector's
        ``bare``); a fighter not found whose place is bare, with no hand near it, is gone
        now, not after ``grace_s``."""
        bases = dets[dets.kind == KIND_BASE]
        bases = bases[_one_per_place(bases)]
        if self.state_tokens is not None and self.state_tokens.tracks:
            # A paper state token can pass for a white-rimmed base: where a state token
            # lies, a base is that token (a token is laid beside a base, never under it).
            bases = bases[np.array([not self.state_tokens.explains(x, y) for x, y in bases.xyz[:, :2]], bool)]
            gone = [t for t in self.tracks if self.state_tokens.explains(float(t.xyz[0]), float(t.xyz[1]))]
            self.tracks = [t for t in self.tracks if all(t is not g for g in gone)]
            for t in gone:
                if t.confirmed:
                    self.events.append(Event(index, time_s, "removed", t.id, {"reason": "a state token, not a base"}))
        self._assign(bases, dets, index, time_s, bare)
        self._move_as_units(index)
        if dets.sizes_found:
            self.note_sizes(bases)
        self._last_index = index
        fighters = tuple(
            Fighter(id=t.id, side=t.side, x=float(t.xyz[0]), y=float(t.xyz[1]), z=float(t.xyz[2]),
                    base=t.base(), sigma_in=float(t.sigma_in), occluded=t.occluded,
                    carrying=self._carrying.get(t.id), rival_sides=t.rival_sides)
            for t in self.tracks if t.confirmed)
        tokens = self._update_tokens(dets, index, time_s)
        state_tokens = self._update_state_tokens(dets, fighters, index, time_s)
        if state_tokens:
            from .state_tokens import with_attached

            fighters = with_attached(fighters, state_tokens)
        if dets.tokens_checked:  # a whole look (tokens and all): its doubts replace the last's
            self._doubts = tuple(dets.doubts)
        return WorldState(frame_index=index, time_s=time_s, fighters=fighters, tokens=tokens,
                          terrain=dets.terrain, hands_over_table=dets.hands, state_tokens=state_tokens,
                          doubts=_undoubted(self._doubts, fighters), unseen_objectives=unseen_objectives(self.config, tokens),
                          hidden=hidden_areas(dets), extra={"events": [e.to_dict() for e in self.events[-50:]]})

    # -- fighters ----------------------------------------------------------------------
    def note_sizes(self, bases: Detections) -> None:
        """A look's round bases vote for the size of the fighter each lies on (within its
        base): a fighter's size is what the looks say most, weighted by how well each saw
        its rim. A base all but hidden by its miniature may first be fitted a size smaller
        (its miniature's outline), and the follows that come after measure it at the size
        it was given, so only looks that found bases at any size vote (offline looks, and a
        live player's looks made in its worker)."""
        round_ = [t for t in self.tracks if t.shape == "round"]
        if not round_:
            return
        txy = np.array([t.xyz[:2] for t in round_])
        for j in range(len(bases)):
            if bases.kind[j] != KIND_BASE or (len(bases.shape) and bases.shape[j]):
                continue
            d = np.linalg.norm(txy - bases.xyz[j, :2], axis=1)
            k = int(np.argmin(d))
            t = round_[k]
            if t.side != int(bases.side[j]) or d[k] >= t.base_mm / MM_PER_IN / 2:
                continue
            mm = float(bases.base_mm[j])
            t.size_votes[mm] = t.size_votes.get(mm, 0.0) + float(bases.score[j])
            t.base_mm = max(t.size_votes, key=t.size_votes.get)

    def _assign(self, bases: Detections, dets: Detections, index: int, time_s: float, bare=None) -> None:
        n_t, n_d = len(self.tracks), len(bases)
        matched_t: set[int] = set()
        matched_d: set[int] = set()
        if n_t and n_d:
            cost = np.full((n_t, n_d), UNMATCHED)
            # A base found on a fighter in sight (inside its base) is that fighter's, or a
            # misfit of it: never a hidden fighter's from afar. Bases do not overlap, and a
            # fighter long under a hand has a gate of inches, wide enough to take a
            # neighbour's base across the table when that one's fit moves.
            tracks = self.tracks
            in_sight = np.array([t.confirmed and not t.occluded and index - t.last_seen <= 2 for t in tracks], bool)
            here = np.array([t.xyz[:2] for t in tracks], float).reshape(-1, 2)
            mm = np.array([t.base_mm for t in tracks], float)
            radius = mm / MM_PER_IN / 2
            xy = bases.xyz[:, :2]
            on_one = np.linalg.norm(xy[None] - here[in_sight][:, None], axis=2) < radius[in_sight][:, None]
            # All tracks against all bases at once (a loop per track cost an Epic game's
            # forty stands 4 ms a frame): distance from where each should be now, within
            # its gate, on its side.
            where = np.array([t.predict(index - t.last_seen)[:2] for t in tracks], float).reshape(-1, 2)
            d = np.linalg.norm(xy[None] - where[:, None], axis=2)
            gate = np.array([self._gate(index - t.last_seen) * (4.0 if t.occluded else 1.0) for t in tracks])
            ok = (bases.side[None, :] == np.array([t.side for t in tracks])[:, None]) & (d <= gate[:, None])
            # A hidden or long-unseen fighter is never another's: those in sight are not it.
            stale = np.array([t.occluded or index - t.last_seen > 2 for t in tracks], bool)
            ok[stale] &= ~on_one.any(axis=0)
            # A base of another size (a round one) or another shape and size costs 0.3 in more.
            same = np.abs(bases.base_mm[None, :] - mm[:, None]) < 1.0
            if len(bases.shape):
                code = np.array([_SHAPE_CODES[t.shape] for t in tracks])
                size = np.array([t.size_mm for t in tracks], float).reshape(-1, 2)
                close = (np.abs(bases.size_mm[None, :, 0] - size[:, None, 0]) < 1.0) & \
                    (np.abs(bases.size_mm[None, :, 1] - size[:, None, 1]) < 1.0)
                same = (code[:, None] == bases.shape[None, :]) & np.where(bases.shape[None, :] == 0, same, close)
            size_pen = np.where(same, 0.0, 0.3)
            cost[ok] = d[ok] + size_pen[ok]
            # A round base smaller than a fighter's size found inside its base is that
            # fighter seen, but not where the fit says: its miniature's outline, or an arc
            # of its rim, fitted as a smaller circle. It is taken (no new fighter there)
            # without moving the fighter. (The bundled clip's 50 mm base, all but hidden
            # by its miniature, read once as 32 mm 0.35 in off: followed from there at
            # 50 mm, it was held off for 5 frames.)
            voted = np.array([bool(t.size_votes) and t.shape == "round" for t in tracks], bool)
            r_det = bases.base_mm / MM_PER_IN / 2
            dist_here = np.linalg.norm(xy[None] - here[:, None], axis=2)
            inner = (voted & in_sight)[:, None] & (bases.shape[None, :] == 0 if len(bases.shape) else True) & \
                (r_det[None, :] < radius[:, None] - 1e-6) & (dist_here + r_det[None, :] <= radius[:, None] + 0.05)
            if len(bases.shape):
                # A stand does not turn a quarter between frames on its own (a hand turning
                # it hides it): a fit turned over 45 degrees from a stand in sight, and seen
                # less well than that stand usually is, is a misfit of it. (One look in the
                # Epic clip fitted a packed stand across, 0.5 in off, at 0.38 of its
                # outline; it usually shows 0.65. Taken, it was held there for 2 s.)
                shaped = (code > 0) & in_sight
                if shaped.any():
                    angle = np.array([t.angle_deg for t in tracks], float)
                    usual = np.array([t.fit_score for t in tracks], float)
                    turned = np.abs((bases.angle_deg[None, :] - angle[:, None] + 90.0) % 180.0 - 90.0) > 45.0
                    weak = bases.score[None, :] < 0.75 * usual[:, None]
                    cost[shaped[:, None] & (bases.shape[None, :] > 0) & turned & weak] = UNMATCHED
            rows, cols = linear_sum_assignment(cost)
            for i, j in zip(rows, cols):
                if cost[i, j] >= UNMATCHED:
                    continue
                self._hit(self.tracks[i], bases, j, index, time_s, in_place=bool(inner[i, j]))
                matched_t.add(i)
                matched_d.add(j)
        for i, t in enumerate(self.tracks):
            if i in matched_t:
                continue
            # Occluded means hidden: a hand over it now, or not seen for half the grace
            # period. A base missed in one frame is still there, and still visible.
            gone_s = (index - t.last_seen) / self.fps
            t.occluded = t.confirmed and (dets.hand_over(float(t.xyz[0]), float(t.xyz[1])) or gone_s > self.grace_s / 2
                                          or t.occluded)
        if dets.hands:
            self._hide_lifted_units(index, dets)
        plainly_gone = self._plainly_gone(dets, index, bare)
        keep = []
        for t in self.tracks:
            gone_s = (index - t.last_seen) / self.fps
            gone = id(t) in plainly_gone
            if not gone and (t.last_seen == index or (t.confirmed and (dets.hands or gone_s <= self.grace_s))):
                keep.append(t)
            elif t.confirmed:
                detail = {"x": round(float(t.xyz[0]), 2), "y": round(float(t.xyz[1]), 2)}
                self.events.append(Event(index, time_s, "removed", t.id,
                                         detail | ({"reason": "its place is bare table"} if gone else {})))
                self._lost.append((t, time_s))
            # an unconfirmed track that missed a frame is dropped silently: a phantom
        self.tracks = keep
        for j in range(n_d):
            if j not in matched_d:
                self.tracks.append(_Track(id="", side=int(bases.side[j]), base_mm=float(bases.base_mm[j]),
                                          xyz=bases.xyz[j].copy(), sigma_in=float(bases.sigma_in[j]),
                                          fit_score=float(bases.score[j]), rival_sides=bases.rival_sides(j),
                                          last_seen=index, first_seen=index, **_shape_of(bases, j)))
                if self.confirm_hits <= 1:
                    self._confirm(self.tracks[-1], index, time_s)

    def _plainly_gone(self, dets: Detections, index: int, bare) -> set[int]:
        """The confirmed fighters not found this frame whose place the picture shows bare
        (``bare``), with no hand within an inch of their base: gone, not hidden."""
        if bare is None:
            return set()
        missed = [t for t in self.tracks if t.confirmed and t.last_seen != index
                  and not dets.hand_over(float(t.xyz[0]), float(t.xyz[1]), t.reach_in + 1.0)]
        if not missed:
            return set()
        seen_bare = bare(np.array([t.xyz for t in missed]), np.array([t.reach_in for t in missed]))
        return {id(t) for t, b in zip(missed, seen_bare) if b}

    def _hide_lifted_units(self, index: int, dets: Detections) -> None:
        """A group of three or more touching fighters of a side, none seen this frame and
        at least half of them under a hand, is lifted or covered as one: its members
        beside the hand are hidden too, not still in sight. (The Epic clip's escort unit,
        taken off the table together: the stand 1.3 in from the hand was shown in sight
        where nothing was for 6 frames, 20 at 30 frames/s.)"""
        known = [t for t in self.tracks if t.confirmed]
        for group in self._touching_groups(known):
            members = [known[i] for i in group]
            if any(t.last_seen == index for t in members):
                continue
            under = sum(dets.hand_over(float(t.xyz[0]), float(t.xyz[1])) for t in members)
            if 2 * under >= len(members):
                for t in members:
                    t.occluded = True

    def _touching_groups(self, tracks: list[_Track]) -> list[np.ndarray]:
        """Indices into ``tracks`` of each group of three or more fighters of a side
        whose bases touch, one to the next (within ``unit_gap_in``)."""
        from scipy.sparse.csgraph import connected_components

        if len(tracks) < 3:
            return []
        xy = np.array([t.xyz[:2] for t in tracks], float)
        reach = np.array([t.reach_in for t in tracks])
        side = np.array([t.side for t in tracks])
        touching = (np.linalg.norm(xy[:, None] - xy[None], axis=2) < reach[:, None] + reach[None] + self.unit_gap_in) \
            & (side[:, None] == side[None])
        n, label = connected_components(touching, directed=False)
        groups = [np.flatnonzero(label == k) for k in range(n)]
        return [g for g in groups if len(g) >= 3]

    def _move_as_units(self, index: int) -> None:
        """Fighters slid together (an Epic unit, a group in base contact) move as one:
        where most of a group of three or more touching fighters of a side stepped alike
        this frame, a member that moved otherwise (one found a little off, or swapped
        with its neighbour) takes the group's step as its velocity. A unit slid by
        about its stands' spacing in a frame is otherwise ambiguous: the odd stand
        predicts its next place wrongly, the follows lose it, and the ids in the unit
        swap (the Epic clip at 8 frames/s: 10 swaps in one unit's fast slide)."""
        seen = [t for t in self.tracks if t.last_seen == index and t.confirmed and not t.occluded]
        if len(seen) < 3 or sum(bool(t.vel[0] or t.vel[1]) for t in seen) < 2:  # (no group moved)
            return
        for members in self._touching_groups(seen):
            step = np.array([seen[i].vel[:2] for i in members])
            moved = np.any(step != 0, axis=1)
            if 2 * moved.sum() <= len(members):
                continue
            group = np.median(step[moved], axis=0)
            alike = np.linalg.norm(step - group, axis=1) <= self.unit_agree_in
            if 2 * alike.sum() <= len(members):
                continue
            for i in members[~alike]:
                seen[i].vel = np.array([group[0], group[1], seen[i].vel[2]])

    def _hit(self, t: _Track, bases: Detections, j: int, index: int, time_s: float, in_place: bool = False) -> None:
        """Track ``t`` seen as base ``j``; ``in_place``: seen there, but the fit is not
        its base (a smaller circle inside it), so it stays where it was."""
        if in_place:
            t.vel = np.zeros(3)
        else:
            self._take_fit(t, bases, j, index, time_s)
        t.hits += 1
        t.last_seen = index
        t.occluded = False
        if not t.confirmed and t.hits >= self.confirm_hits:
            self._confirm(t, index, time_s)

    def _take_fit(self, t: _Track, bases: Detections, j: int, index: int, time_s: float) -> None:
        """Track ``t`` moves to base ``j``'s fit (smoothed when still) and takes its
        sigma, score, size and turn; a move that has come to rest is an event."""
        new = bases.xyz[j]
        step = float(np.linalg.norm(new[:2] - t.xyz[:2]))
        if t.confirmed:
            if step > self.still_in and t.moving_from is None:
                t.moving_from = t.xyz.copy()
            if t.moving_from is not None:
                t.still_frames = t.still_frames + 1 if step <= self.still_in / 2 else 0
                if t.still_frames >= 3:
                    dist = float(np.linalg.norm(new - t.moving_from))
                    if dist > 0.25:
                        self.events.append(Event(index, time_s, "moved", t.id, {"distance_in": round(dist, 2)}))
                    t.moving_from, t.still_frames = None, 0
        frames = max(1, index - t.last_seen)
        t.vel = (new - t.xyz) / frames if step > self.still_in else np.zeros(3)
        # Light smoothing when still (sub-pixel noise), none when moving (no lag).
        alpha = 0.5 if step < self.still_in and t.confirmed else 1.0
        t.xyz = (1 - alpha) * t.xyz + alpha * new
        t.sigma_in = float(bases.sigma_in[j])
        t.fit_score = 0.7 * t.fit_score + 0.3 * float(bases.score[j])
        if bases.sizes_found:  # (a follow keeps the sides it was given: it says nothing of them)
            t.rival_sides = tuple(sorted((set(bases.rival_sides(j)) | {int(bases.side[j])}) - {t.side}))
        t.base_mm = float(bases.base_mm[j]) if t.hits < 5 and not t.size_votes else t.base_mm
        if len(bases.shape) and bases.shape[j]:
            if t.hits < 5:
                t.shape, t.size_mm = _shape_of(bases, j)["shape"], _shape_of(bases, j)["size_mm"]
            # Half a turn looks the same: step the shorter way round, smoothed as the position.
            turn = (float(bases.angle_deg[j]) - t.angle_deg + 90.0) % 180.0 - 90.0
            t.angle_deg = (t.angle_deg + alpha * turn) % 180.0

    def _confirm(self, t: _Track, index: int, time_s: float) -> None:
        t.confirmed = True
        # A fighter lifted and put down elsewhere (out of sight under a hand, or moved
        # faster than the gate) comes back as a new base: if a fighter of the same side
        # and base size left the table recently, this is that fighter, moved.
        self._lost = [(lt, ls) for lt, ls in self._lost if time_s - ls <= self.reidentify_s]
        same = [(float(np.linalg.norm(lt.xyz[:2] - t.xyz[:2])), k) for k, (lt, _) in enumerate(self._lost)
                if lt.side == t.side and lt.same_base(t.shape, t.size_mm, t.base_mm)]
        if same:
            dist, k = min(same)
            lost, _ = self._lost.pop(k)
            t.id = lost.id
            self.events.append(Event(index, time_s, "moved", t.id, {"distance_in": round(dist, 2)}))
            return
        t.id = f"f{self._next_id}"
        self._next_id += 1
        side = self.config.side(t.side).colour if any(s.index == t.side for s in self.config.sides) else str(t.side)
        self.events.append(Event(index, time_s, "placed", t.id,
                                 {"side": side, "base_mm": t.base_mm,
                                  **({} if t.shape == "round" else {"shape": t.shape, "size_mm": list(t.size_mm)}),
                                  "x": round(float(t.xyz[0]), 2), "y": round(float(t.xyz[1]), 2)}))

    # -- tokens ------------------------------------------------------------------------
    @property
    def tokens_in_doubt(self) -> bool:
        """Some token was missing from a look and is not yet known to be gone (or back):
        only a look for tokens settles it."""
        return bool(self._token_missing)

    def _update_tokens(self, dets: Detections, index: int, time_s: float) -> tuple[Token, ...]:
        """Tokens keep ids by tag where tagged, by nearest previous token otherwise. A token
        hidden by a hand keeps its last place; one that vanishes without a hand is gone
        (picked up, or removed) and that is an event."""
        if not dets.tokens_checked:
            # A follow-only frame: tokens were not looked at. Those a hand now covers are
            # not in sight (their state is as last seen, marked occluded) and in doubt
            # from now, as if a look had missed them: the hand may be taking one.
            out = []
            for tid, t in sorted(self._tokens.items()):
                if not t.occluded and dets.hand_over(t.x, t.y, self._hand_over_disc_in(t)):
                    t = replace(t, occluded=True)
                    self._note_missing(tid, t, time_s)
                out.append(t)
            return tuple(out)
        toks = dets[(dets.kind == KIND_OBJECTIVE) | (dets.kind == KIND_TREASURE)]
        seen: dict[str, Token] = {}
        prev = dict(self._tokens)
        # Tags read first: a token whose tag was not read this look (blur, a shadow) then
        # keeps the id and tag it had where it lies, and is not a new token placed.
        for k in np.argsort(toks.tag_id < 0, kind="stable"):
            kind = KIND_NAMES[int(toks.kind[k])]
            x, y, z = map(float, toks.xyz[k])
            tag = int(toks.tag_id[k])
            if tag >= 0:
                tid = f"{kind}-{tag}"
            else:
                near = [(np.hypot(p.x - x, p.y - y), pid) for pid, p in prev.items()
                        if p.kind == kind and pid not in seen]
                near.sort()
                tid = near[0][1] if near and near[0][0] < 1.0 else self._new_token_id(kind, prev, seen)
                if tid in prev and prev[tid].tag_id is not None:
                    tag = prev[tid].tag_id
            seen[tid] = Token(id=tid, kind=kind, x=x, y=y, z=z, tag_id=tag if tag >= 0 else None,
                              diameter_in=self.config.tokens[kind].diameter_in, sigma_in=float(toks.sigma_in[k]))
            if tid not in prev:
                self.events.append(Event(index, time_s, "token placed", tid, {"x": round(x, 2), "y": round(y, 2)}))
        for tid, tok in seen.items():
            self._token_missing.pop(tid, None)
            if tid not in prev and tok.kind == "treasure":
                carrier = next((fid for fid, carried in self._carrying.items() if carried == tid), None)
                if carrier is None:
                    near = self._fighter_beside(tok)
                    carrier = near.id if near is not None and near.id in self._carrying else None
                if carrier is not None:
                    self._carrying.pop(carrier, None)
                    self.events.append(Event(index, time_s, "dropped treasure", carrier, {"token": tid}))
        for tid, tok in prev.items():
            if tid in seen:
                continue
            since, beside_then = self._note_missing(tid, tok, time_s)
            if dets.hand_over(tok.x, tok.y, self._hand_reach_in(tok)):
                # Hidden, not gone (yet): it keeps its place until a look sees that place
                # again. A hand elsewhere on the table hides nothing of it.
                seen[tid] = replace(tok, occluded=True)
                continue
            if time_s - since < self.token_grace_s or self._new_base_beside(tok):
                # Not seen in one look: still there until it stays gone. And a base just
                # found beside it (a fighter put down on it, not yet confirmed) may be the
                # one that took it: decided once that base is known.
                seen[tid] = replace(tok, occluded=False)
                continue
            self._token_missing.pop(tid, None)
            near = self._fighter_beside(tok)
            if near is None and beside_then is not None:
                # Gone for good: the fighter beside it when it went took it, though it may
                # have walked on by the time the token is known to stay gone.
                near = next((t for t in self.tracks if t.id == beside_then and t.confirmed), None)
            if tok.kind == "treasure" and near is not None and near.id not in self._carrying:
                # "If at any point during a move action a fighter moves within 1" of a
                # treasure token, the fighter can pick up that treasure. Remove the token"
                self._carrying[near.id] = tid
                self.events.append(Event(index, time_s, "picked up treasure", near.id, {"token": tid}))
            else:
                self.events.append(Event(index, time_s, "token removed", tid, {"next_to": near.id} if near else {}))
        self._tokens = seen
        return tuple(sorted(seen.values(), key=lambda t: t.id))

    def _update_state_tokens(self, dets: Detections, fighters: tuple[Fighter, ...], index: int,
                             time_s: float) -> tuple:
        """State tokens (recognition on): each attached to its fighter, with hysteresis
        (tracker.state_tokens). They never join ``tokens``: they do not interact with the
        battle."""
        if self.state_tokens is None:
            return ()
        st = dets[dets.kind == KIND_STATE]
        seen = [(int(st.tag_id[k]), *map(float, st.xyz[k])) for k in range(len(st))]
        out = self.state_tokens.update(seen, fighters, looked=dets.tokens_checked, hands=dets.hands,
                                       hand_over=dets.hand_over)
        for e in self.state_tokens.events:
            self.events.append(Event(index, time_s, e["kind"], e["subject"],
                                     {k: v for k, v in e.items() if k not in ("kind", "subject")}))
        return out

    def _note_missing(self, tid: str, tok: Token, time_s: float) -> tuple[float, str | None]:
        """When ``tid`` was first missed (now, if not before) and the fighter beside it then."""
        if tid not in self._token_missing:
            beside = self._fighter_beside(tok)
            self._token_missing[tid] = (time_s, beside.id if beside is not None else None)
        return self._token_missing[tid]

    def _hand_reach_in(self, tok: Token) -> float:
        """How near a token's centre a hand hides it from a look."""
        return 0.5 * tok.diameter_in + self.token_hand_margin_in

    def _hand_over_disc_in(self, tok: Token) -> float:
        """How near a token's centre a hand must come on a frame that does not look for
        tokens to put it in doubt: over the disc itself (the mask is grown
        HAND_MASK_GROWTH_IN past the skin). A hand beside a token, reaching for the fighter next to it, leaves it in
        sight; a hand taking it covers it first."""
        return max(0.0, 0.5 * tok.diameter_in - HAND_MASK_GROWTH_IN)

    def _new_base_beside(self, tok: Token) -> bool:
        """A base not yet confirmed within 1" of the token."""
        return self._beside(tok, confirmed=False) is not None

    def _fighter_beside(self, tok: Token):
        """The confirmed fighter whose base is nearest the token, if it is within 1"."""
        return self._beside(tok, confirmed=True)

    def _beside(self, tok: Token, confirmed: bool):
        """The track (confirmed or not) whose base edge is nearest the token, within 1"."""
        best, best_d = None, np.inf
        for f in self.tracks:
            if f.confirmed != confirmed:
                continue
            d = float(np.hypot(f.xyz[0] - tok.x, f.xyz[1] - tok.y)) - f.base_mm / MM_PER_IN / 2
            if d <= 1.0 and d < best_d:
                best, best_d = f, d
        return best

    def _new_token_id(self, kind: str, prev: dict, seen: dict) -> str:
        n = 1
        while f"{kind}-u{n}" in prev or f"{kind}-u{n}" in seen:
            n += 1
        return f"{kind}-u{n}"


def still_state(dets: Detections, config: GameConfig, index: int = 0, time_s: float = 0.0) -> WorldState:
    """The world state one photograph shows, on its own: every base and token in
    ``dets`` as it was seen, nothing remembered from other frames (a judge's photo of the
    table at the end of a round is complete in itself). Fighters are numbered ``s<side>-<n>``
    across the table (by y, then x), untagged tokens ``<kind>-u<n>`` the same way; a tagged
    token is ``<kind>-<tag>`` as in a clip.

    >>> from tracker.detection import Detections
    >>> d = Detections.from_rows([{"xyz": (5.0, 2.0, 0.0), "kind": KIND_BASE, "side": 1, "base_mm": 32.0},
    ...                           {"xyz": (9.0, 4.0, 0.0), "kind": KIND_OBJECTIVE, "tag_id": 42}])
    >>> st = still_state(d, GameConfig.from_dict({"sides": [{"colour": "red", "rim_bgr": [0, 0, 200]},
    ...                                                     {"colour": "blue", "rim_bgr": [200, 0, 0]}]}))
    >>> [(f.id, f.side, f.base.size_mm) for f in st.fighters], [t.id for t in st.tokens]
    ([('s1-1', 1, (32.0, 32.0))], ['objective-42'])
    """
    bases = dets[dets.kind == KIND_BASE]
    bases = bases[_one_per_place(bases)]
    fighters = []
    count: dict[int, int] = {}
    for j in np.lexsort((bases.xyz[:, 0], bases.xyz[:, 1])) if len(bases) else ():
        side = int(bases.side[j])
        count[side] = count.get(side, 0) + 1
        shape = _shape_of(bases, j)
        if shape:
            base = Base(shape["shape"], shape["size_mm"][0] / MM_PER_IN, shape["size_mm"][1] / MM_PER_IN,
                        round(shape["angle_deg"], 2))
        else:
            base = Base.round_mm(float(bases.base_mm[j]))
        x, y, z = map(float, bases.xyz[j])
        fighters.append(Fighter(id=f"s{side}-{count[side]}", side=side, x=x, y=y, z=z, base=base,
                                sigma_in=float(bases.sigma_in[j]), rival_sides=bases.rival_sides(j)))
    toks = dets[(dets.kind == KIND_OBJECTIVE) | (dets.kind == KIND_TREASURE)]
    tokens = []
    untagged: dict[str, int] = {}
    for k in np.lexsort((toks.xyz[:, 0], toks.xyz[:, 1])) if len(toks) else ():
        kind = KIND_NAMES[int(toks.kind[k])]
        tag = int(toks.tag_id[k])
        if tag >= 0:
            tid = f"{kind}-{tag}"
        else:
            untagged[kind] = untagged.get(kind, 0) + 1
            tid = f"{kind}-u{untagged[kind]}"
        x, y, z = map(float, toks.xyz[k])
        tokens.append(Token(id=tid, kind=kind, x=x, y=y, z=z, tag_id=tag if tag >= 0 else None,
                            diameter_in=config.tokens[kind].diameter_in, sigma_in=float(toks.sigma_in[k])))
    return WorldState(frame_index=index, time_s=time_s, fighters=tuple(fighters),
                      tokens=tuple(sorted(tokens, key=lambda t: t.id)), terrain=dets.terrain,
                      hands_over_table=dets.hands, doubts=_undoubted(tuple(dets.doubts), tuple(fighters)),
                      unseen_objectives=unseen_objectives(config, tokens), hidden=hidden_areas(dets))


def hidden_areas(dets: Detections) -> tuple[HiddenArea, ...]:
    """The parts of the table hands and arms hide in ``dets`` (its hand mask, grown as
    the detector grew it: bases there were not looked for), as outlines on the table,
    simplified to a tenth of an inch. None without hands over the table."""
    if not dets.hands or dets.hand_mask is None or dets.hand_view is None:
        return ()
    import cv2

    view = dets.hand_view
    contours, _ = cv2.findContours(np.ascontiguousarray(dets.hand_mask, np.uint8), cv2.RETR_EXTERNAL,
                                   cv2.CHAIN_APPROX_SIMPLE)
    out = []
    for c in contours:
        c = cv2.approxPolyDP(c, 0.1 * view.px_per_in, True).reshape(-1, 2)
        if len(c) < 3:
            continue
        xy = view.to_world(c[:, 0], c[:, 1])
        out.append(HiddenArea(tuple((round(float(x), 3), round(float(y), 3)) for x, y in xy)))
    return tuple(out)


def unseen_objectives(config: GameConfig, tokens: Sequence[Token]) -> tuple[str, ...]:
    """The objectives ``config`` lists (``tokens.objective``: its tag ids and untagged
    count) that ``tokens`` do not hold: a judge must look at the table for those, the
    camera cannot measure their control. Tagged ones by id (``objective-<tag>``); an
    untagged one ``objective-untagged-<n>``. An objective token whose tag was not read
    may be any of the missing tagged ones or an untagged one: then only how many are
    missing is known (``objective-unseen-<n>``).

    >>> cfg = GameConfig.from_dict({"sides": [{"colour": "red", "rim_bgr": [0, 0, 200]},
    ...     {"colour": "blue", "rim_bgr": [200, 0, 0]}], "tokens": {"objective": {"tag_ids": [41, 42, 43], "untagged": 1}}})
    >>> unseen_objectives(cfg, [Token("objective-42", "objective", 5.0, 5.0, tag_id=42)])
    ('objective-41', 'objective-43', 'objective-untagged-1')
    >>> unseen_objectives(cfg, [Token("objective-42", "objective", 5.0, 5.0, tag_id=42),
    ...                         Token("objective-u1", "objective", 9.0, 5.0)])
    ('objective-unseen-1', 'objective-unseen-2')
    """
    spec = config.tokens.get("objective")
    if spec is None:
        return ()
    objectives = [t for t in tokens if t.kind == "objective"]
    read = {t.tag_id for t in objectives if t.tag_id is not None}
    tagged = [f"objective-{i}" for i in spec.tag_ids if i not in read]
    unread = sum(t.tag_id is None for t in objectives)
    if not unread:
        return tuple(tagged) + tuple(f"objective-untagged-{n}" for n in range(1, spec.untagged + 1))
    missing = len(tagged) + spec.untagged - unread
    return tuple(f"objective-unseen-{n}" for n in range(1, missing + 1))


def _undoubted(doubts: tuple, fighters: tuple) -> tuple:
    """The doubts (world.Doubt) no fighter's base now covers: a place a fighter was
    tracked to since is that fighter's."""
    return tuple(q for q in doubts if not any(
        np.hypot(f.x - q.x, f.y - q.y) < q.radius_in + max(f.base.width_in, f.base.depth_in) / 2 for f in fighters))
