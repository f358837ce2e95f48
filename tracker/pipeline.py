"""The per-frame pipeline: frame → calibration → detection → tracking → world state.

>>> pipe = Pipeline.from_footage(default_footage())          # doctest: +SKIP
>>> for index, t, frame in open_source(default_footage()):   # doctest: +SKIP
...     result = pipe.process(frame, index, t)
...     result.state.fighters
"""

from __future__ import annotations

import functools
import json
import os
import pickle
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .config import GameConfig
from .errors import CalibrationError, UserError
from .sources import default_footage, footage_video, open_source  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from .detection import Detections
from .world import MM_PER_IN, WorldState


@dataclass
class FrameResult:
    index: int
    time_s: float
    frame: np.ndarray
    state: WorldState
    detections: object = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    epic: object = None  # tracker.epic_table.EpicView for Epic-scale games


class Pipeline:
    """Holds the game config, the camera model and the tracker state of one table.

    Each frame: the ArUco markers are found once; the table markers re-pose a bumped
    camera (calibration.live.PoseTracker), the token tags feed detection; then bases
    and tokens are detected and tracked into a WorldState.

    ``gate=True`` (default): a change gate (tracker.motion) compares each frame with the
    last one looked at; once everything is settled, a still frame holds every fighter
    where it was (no pose, no detection), a change round a table marker re-checks the
    pose, a change at known fighters re-finds only those, and a change anywhere else on
    the table (or at a token) is a full look; a full look at least every ``safety_s``.
    ``look`` says what the last frame got: full / follow / pose / still.
    """

    def __init__(self, config: GameConfig, setup, *, fps: float = 15.0, full_every: int = 5, gate: bool = True,
                 background: bool = False):
        from calibration.live import PoseTracker

        from .detection import TableDetector
        from .tracking import FighterTracker

        self.config = config
        self.setup = setup
        self.fps = fps
        self.camera = setup.camera
        intr = getattr(self.camera, "intrinsics", None)
        self.pose_tracker = PoseTracker(intr, config.table, pose=self.camera.pose) if intr is not None else None
        self.health = "ok"
        self.detector = TableDetector(config, self.camera, background=setup.background, terrain=setup.terrain,
                                      blur_in=setup.blur_in)
        self.tracker = FighterTracker(config, fps=fps)
        # Epic-scale games: stands grouped into units, Rescue escorts followed.
        self.epic = None
        if config.epic is not None:
            from .epic_table import EpicTable

            self.epic = EpicTable(config.epic)
        self.full_every = full_every
        # While hands are over the table, a look every this many frames. 2 before regional
        # looks (each looks round lost fighters and where the picture changed); 5 costs
        # the bundled clip 0.0017 in of RMS and an unpaced 1080p game 0.2 % of its
        # fighter-frames, for 20 % more frames a second.
        self.hands_look_every = 5
        # Both counts were measured at 15 frames/s; what they guard against (a base put
        # down, a follow drifting) happens in time, not in frames: at a higher frame rate
        # looks come no more often than this (30 frames/s: every 10th frame; the Epic
        # game at 30 frames/s: 41 -> 32 whole looks, RMS 0.0474 -> 0.0439 in).
        self.look_interval_s = 1 / 3
        self._last_full = -10**9  # source index of the last full look
        self._processed = 0  # frames processed (a live player skips some)
        self._last_full_processed = -10**9
        self._last_token_look = -10**9  # (processed frames) the last look that looked for tokens
        self._hands_before = self._hands_now = False
        # Change gate (tracker.motion): a still frame is not looked at again, a change at
        # a known fighter only re-finds that fighter; a full look at least every safety_s.
        from .motion import MotionGate

        self.gate = MotionGate() if gate else None
        self._probe_gate = self.gate or MotionGate()  # judges change since a background look's frame
        self.safety_s = 2.0
        self.calm_frames = 5
        self._calm = 0
        self.look = ""  # what the last frame got: full / region / follow / pose / still (gate off: full / follow)
        self._gate_map = None
        # Regional looks (gate on; made at once, or by the background worker): a look due
        # while the whole table was looked at less than whole_every_s ago looks only where
        # the picture changed since the last look (see _region_plan); its windows reach
        # regional_margin_in beyond what changed (a miniature's head lies up to an inch
        # from its base in the picture); over regional_max of the table, a whole look.
        # Not for Epic games yet: their stands, in units in base contact, were found 0.3 %
        # less often and 0.3 % more phantoms were reported (the Epic clip; 12 % faster).
        self.regional = gate and config.epic is None
        self.whole_every_s = 2.0
        self.regional_margin_in = 2.5
        self.regional_max = 0.6
        self.regional_looks = 0
        self._look_gate = MotionGate() if gate else None  # what changed since the last look, and where
        self._region_map = None
        self._small_now = None  # this frame as the gate saw it
        self._index = self._last_index = -1  # this frame's source index, and the last one processed
        self._last_whole_processed = -10**9
        self._markers_changed = True  # (the gate's, this frame: see _pose_due)
        # Between looks only the fighters round which the picture changed are followed
        # (_follow_changed). Epic games too: without regional looks, as they look, the Epic
        # clip's stands were found as before or better (99.57 % found, 99.81 % precision;
        # with regional looks a stand re-found off its place was held there for seconds).
        self.follow_changed_only = gate
        self._usual_change = None  # the gate's change, for a frame taken the usual way
        self._usual_accept = None  # ... and the cells it looked at (None: all)
        self._last_pose = -10**9  # source index of the last pose check
        # How soft the picture is, read off one table marker at a time at pose checks a
        # second or more apart (0.6-0.9 ms each at 1080p, kept off most frames): an
        # autofocus that wanders mid-game loses rims as a soft set-up does.
        self._blur_read: dict[int, tuple[int, float, float]] = {}  # marker id: (index, sigma in, sigma px)
        self._last_blur = -10**9
        self._blur_turn = -1  # the table marker read last
        self._state: WorldState | None = None
        self._gate_ms = 0.0
        # background=True (the live player): a full look runs in a worker process while
        # the frames that come meanwhile are followed; its new bases and tokens join the
        # frame being processed when it ends (see _look). The overlay then waits for a
        # follow (tens of ms), never for a full look (hundreds).
        self.background = background
        self._worker = None
        # Taken to start or stop the worker: a player's frame may be starting one as the
        # server, stopping, closes the pipeline; after close() none is started.
        self._worker_lock = threading.Lock()
        self._closed = False
        self._pending = None  # (future, source index, gate change, camera) of the look running
        self.background_looks = 0  # full looks merged from the worker
        # Tests: no worker thread, each background look made at once and held back this
        # many processed frames (a look's age, made repeatable).
        self.look_delay_frames: int | None = None

    @property
    def full_every(self) -> int:
        """Look at the whole table every this many frames (1: every frame)."""
        return self._full_every

    @full_every.setter
    def full_every(self, n: int) -> None:
        self._full_every = max(1, int(n))
        # Tokens rarely move: when following, look for them in every other full look.
        self.detector.tokens_every = 2 if self._full_every > 1 else 1

    @property
    def _look_interval_frames(self) -> int:
        """look_interval_s in frames at this pipeline's frame rate."""
        return round(self.look_interval_s * self.fps)

    def _detect(self, frame: np.ndarray, index: int) -> "Detections":
        """A look every ``full_every`` frames (``hands_look_every`` while hands are over
        the table), when a hand has just left it, and while a new base waits to be
        confirmed: regional where it may be (_look_where_changed), else whole; in between,
        fighters are only re-found near where they were (_follow_changed)."""
        tracks = self.tracker.tracks
        every = min(self.full_every, self.hands_look_every) if self._hands_now else self.full_every
        if every > 1:
            every = max(every, self._look_interval_frames)
        # Counted in frames this pipeline processed, not source frames: a live player
        # that skips frames while a full look runs would otherwise make every frame it
        # does process a full look (and the overlay lag the camera by a full look each).
        need_full = (
            every <= 1
            or self._processed - self._last_full_processed >= every
            or not tracks
            or any(not t.confirmed for t in tracks)
            or (self._hands_before and not self._hands_now)
        )
        if need_full:
            dets = self._look_where_changed(frame) if self._regional_now() and not self.background else None
            if dets is None:
                dets = self._look(frame, index, tokens=self.regional)
        else:
            dets = self._follow_changed(frame, tracks)
        self._hands_before, self._hands_now = self._hands_now, dets.hands
        return dets

    def _follow_changed(self, frame: np.ndarray, tracks, change=None) -> "Detections":
        """A frame between looks, the usual way: with the gate, only the fighters round
        which the picture changed since the gate's reference are followed (and those new,
        hidden or not seen last frame); the others are held exactly where they were, as
        a follow would find them in a picture unchanged there. The gate then takes only
        the followed fighters' cells as seen (the rest drift: a glide too slow to show in
        one frame still shows as it adds up); a change where no fighter is stays to be
        looked at (a token put down as a hand leaves: taken as seen here, the gate once
        calm held the table still without ever looking for it). Without the gate,
        every fighter is followed. ``change``: the gate's for this frame, when it was not
        taken the usual way."""
        from .motion import follow_some

        change = self._usual_change if change is None else change
        if not self.follow_changed_only or change is None or change.everything or self._gate_map is None \
                or self._gate_map.camera is not self.camera:
            return self.detector.follow(frame, [self._follow_spec(t) for t in tracks])
        boxes = self._gate_map.fighter_boxes(tracks)
        chosen = [i for i, (t, b) in enumerate(zip(tracks, boxes))
                  if t.occluded or self._unsettled(t) or change.in_box(b)]
        if len(chosen) == len(tracks):
            return self.detector.follow(frame, [self._follow_spec(t) for t in tracks])
        found = self.detector.follow(frame, [self._follow_spec(tracks[i]) for i in chosen])
        self._usual_accept = _cells_in(change, [boxes[i] for i in chosen])
        keep = set(chosen)
        return follow_some(found, [tracks[i] for i in chosen], [t for i, t in enumerate(tracks) if i not in keep])

    def _unsettled(self, t) -> bool:
        """Whether a track is not settled where it is: new (not confirmed), not seen last
        frame (lost by the follow), or placed within the last ``whole_every_s`` (its first
        fit may be a half-hidden rim's wrong one). Such fighters are always followed, and
        looked at again by regional looks."""
        return (not t.confirmed or t.last_seen < self._last_index
                or t.first_seen > self._index - self.whole_every_s * self.fps)

    @staticmethod
    def _follow_spec(t) -> tuple:
        """A track as detector.follow takes it."""
        xyz = t.predict(1)  # where a moving base should be now
        return ((float(xyz[0]), float(xyz[1]), float(xyz[2]), t.side, t.base_mm)
                + (() if t.shape == "round" else (t.shape, *t.size_mm, t.angle_deg,
                                                  (float(t.xyz[0]), float(t.xyz[1])))))

    def fresh(self) -> "Pipeline":
        """A pipeline for the same table and calibration with no tracking history. It
        keeps the picture's sharpness readings: they are the camera's, not the game's (a
        recorded game played on loop starts again on a fresh pipeline)."""
        new = Pipeline(self.config, self.setup, fps=self.fps, full_every=self.full_every, gate=self.gate is not None,
                       background=self.background)
        new._blur_read, new._last_blur = dict(self._blur_read), self._last_blur
        # The look worker, warm, when its copy of the detector holds for the new pipeline
        # (same camera, same terrain): a new one takes ~1 s to start, and the looks made
        # at once meanwhile held the overlay up ~0.9 s at each lap of the Epic sample.
        # (What its detector learnt of the rims is the camera's and the rims', as the
        # sharpness is.)
        if self.background and self.camera is new.camera and tuple(self.detector.terrain) == tuple(new.detector.terrain):
            with self._worker_lock:
                if self._worker is not None and self._worker.ready:
                    new._worker, self._worker = self._worker, None
                    self._pending = None
        return new

    @classmethod
    def from_footage(cls, folder: str | Path, *, progress: bool = False) -> "Pipeline":
        """Calibrate from a footage folder: ``game.yaml`` (or ``setup.json``), ``calib/``
        (board views → intrinsics, cached) and ``table.jpg`` or the clip's first frame
        (table pose, terrain, background)."""
        from .calibrate import calibrate_folder

        folder = Path(folder)
        if not folder.is_dir():
            raise UserError(f"{folder}: footage folder not found; give a folder with game.yaml, calib/ and a clip")
        config = GameConfig.load(folder)
        setup = calibrate_folder(folder, config, progress=progress)
        fps = 15.0
        clip = footage_video(folder)
        if clip is not None and clip.is_file():
            with open_source(clip) as src:
                fps = src.fps
        return cls(config, setup, fps=fps)

    @classmethod
    def from_files(cls, game: str | Path, camera_json: str | Path, table_json: str | Path,
                   background: np.ndarray | None = None) -> "Pipeline":
        from calibration.camera import CameraModel, Intrinsics, TablePose

        from .calibrate import TableSetup

        config = GameConfig.load(game)
        try:
            camera = CameraModel(Intrinsics.from_json(camera_json), TablePose.from_json(table_json))
        except (OSError, json.JSONDecodeError, KeyError) as e:
            raise CalibrationError(f"cannot read calibration ({e}); re-run calibrate-camera / calibrate-table") from None
        return cls(config, TableSetup(camera, background, (), float("nan"), float("nan")))

    # -- full looks, at once or on the worker ------------------------------------------
    def _look(self, frame: np.ndarray, index: int, tokens: bool = False, change=None) -> "Detections":
        """A full look at the whole table on this frame. In the background: handed to the
        worker (if it is free) and this frame's known fighters followed meanwhile; the
        very first look (nothing known yet) is made at once. ``change`` (the gate's, for
        this frame) becomes the gate's reference once the look is made: until then what
        changed is still to be looked at."""
        self.look = "full"
        tracks = self.tracker.tracks
        worker = self._worker
        if self.background and tracks and self.look_delay_frames is None and not self._closed:
            worker = self.start_worker()  # after the first look, which it then knows of
        warming = worker is not None and not worker.ready and self._pending is None
        no_worker = worker is None and self.look_delay_frames is None  # none yet, or closed
        if not self.background or warming or no_worker or (not tracks and self._last_full < 0 and self._pending is None):
            # (Until the worker is ready, looks are made at once, as without one.)
            dets = _look_whole(self.detector, frame, tokens)
            self._last_full, self._last_full_processed = index, self._processed
            self._last_whole_processed = self._processed
            if change is not None:
                self.gate.accept(change)
            self._accept_whole_look(self._look_change(), dets.hands)
            return dets
        if self._pending is None:
            # Regional when it may be (the worker's CPU is the machine's second core, which
            # the stream's drawing and encoding share); the look gate takes the look's
            # frame as looked at where it looks.
            plan = self._region_plan(frame) if self._regional_now() else None
            windows = None if plan is None else plan[0]
            if plan is None:
                self._last_whole_processed = self._processed
            # (The look gate takes the look's frame as looked at when the look joins.)
            looked = self._look_change() if plan is None else plan[1:]
            # Tokens at every whole look: looks are rarer here, and a vanished treasure
            # token's carrier is told from who stood beside it when it went.
            if self.look_delay_frames is not None:
                made = _look_whole(self.detector, frame, True) if windows is None else \
                    _look_regions(self.detector, frame, windows)
                future = _HeldLook(made, self, self._processed + self.look_delay_frames)
            else:
                future = worker.submit(frame, True, windows)
            self._pending = (future, index, change, self.camera, self._probe_gate.small(frame), windows is None, looked)
            self._last_full_processed = self._processed  # paced from when it was asked for
        self.look = "follow"
        # Meanwhile this frame is followed as any frame between looks is (only round what
        # changed, when the gate says what did): following every fighter made the frame
        # that hands a look over the slowest of all (45-52 ms of CPU at 720p). A look the
        # gate asked for brings the gate's change (the usual way has none of its own):
        # without it every fighter was followed (the Epic sample: 24 stands, 80 ms). The
        # fighters not followed get the look's own fits when it joins (_refreshed).
        return self._follow_changed(frame, tracks, change)

    def _regional_now(self) -> bool:
        """Whether a look due now may be a regional one: on, with fighters known, no token
        in doubt (missing from a look, not yet known to be gone: the next looks look for
        tokens, once no hand hides them), and the whole table looked at less than
        ``whole_every_s`` ago."""
        return bool(self.regional and self.tracker.tracks
                    and not (self.tracker.tokens_in_doubt and not self._hands_now)
                    and self._processed - self._last_whole_processed < self.whole_every_s * self.fps)

    def _region_plan(self, frame: np.ndarray):
        """Where a regional look looks: (windows of the floor view, the look gate's change,
        the cells to accept as looked at once it is made), or None when a whole look is
        wanted instead: too much changed (a new picture, over ``regional_max`` of the
        table) or a token's surroundings did (tokens are only looked at by whole looks).
        Windows: where the picture changed since the last look, and round fighters new
        (confirmed by a look, not only by its follow), not seen last frame (the follow
        lost it: a rim it cannot re-find from where it was, with nothing changing there
        since) or placed in the last ``whole_every_s`` (a follow may hold a first, wrong
        fit of a rim half hidden; whole looks every few frames had put such a fighter
        right)."""
        if self._small_now is None or self._gate_map is None or self._gate_map.camera is not self.camera:
            return None
        change = self._look_gate.check(None, self._small_now)
        if change.everything:
            return None
        gm = self._gate_map
        cells = change.mask & gm.table_cells
        spots = [(float(t.xyz[0]), float(t.xyz[1]), 0.5 + t.reach_in) for t in self.tracker.tracks
                 if self._unsettled(t)]
        at_tokens = self._token_cells(change)
        if (cells & at_tokens).any() and not self._hands_now:
            # Something changed at a token: a whole look, with tokens. While hands are
            # over the table a look says nothing of the tokens they hide (the tracker
            # keeps them), so the change there is kept for the look after they leave.
            return None
        # What changed under a hand is left for when it has gone (not covered, so not
        # accepted): nothing under it can be seen.
        hand = self.detector.hand_mask(frame)
        windows, covered = self._regions().windows(cells, hand if hand.any() else None, spots)
        if windows is None:
            return None
        return windows, change, change.mask & covered & ~at_tokens

    def _token_cells(self, change) -> np.ndarray:
        """The gate cells round the tokens known."""
        if self._gate_map is None or self._gate_map.camera is not self.camera:
            return np.zeros(change.mask.shape, bool)
        return _cells_in(change, self._gate_map.token_boxes(self._state.tokens if self._state is not None else ()))

    def _look_change(self):
        """This frame against the look gate's reference (None without the gate)."""
        if self._look_gate is None or self._small_now is None:
            return None
        return self._look_gate.check(None, self._small_now)

    def _accept_whole_look(self, change, hands: bool) -> None:
        """A whole look at the frame of ``change`` (_look_change) was made: what changed
        is looked at (the look gate's reference), except round the tokens if hands were
        over the table (``hands``): such a look says nothing of the tokens they hide, and
        the change there calls for a whole look once they have gone."""
        if change is None or self._look_gate is None:
            return
        at_tokens = self._token_cells(change) if hands else None
        self._look_gate.accept(change, ~at_tokens if at_tokens is not None and at_tokens.any() else None)

    def _look_where_changed(self, frame: np.ndarray) -> "Detections | None":
        """A regional look made at once (see _region_plan), the fighters it does not
        account for followed; None when a whole look is wanted instead."""
        from .detection import KIND_BASE, Detections
        from .motion import apart, clear_of

        plan = self._region_plan(frame)
        if plan is None:
            return None
        windows, change, accept = plan
        tracks = self.tracker.tracks
        self.look = "region"
        self._last_full_processed = self._processed
        self.regional_looks += 1
        # Fighters the windows' bases account for are where the look saw them (as in a
        # whole look); the others (outside, or not seen: under a hand) are followed.
        found = _look_regions(self.detector, frame, windows)
        found = found[found.kind == KIND_BASE]
        where = np.array([t.predict(1)[:2] for t in tracks], float).reshape(-1, 2)
        seen = ~apart(where, np.array([t.reach_in for t in tracks]), found.xyz[:, :2], found.base_mm / MM_PER_IN / 2)
        rest = [t for t, s in zip(tracks, seen) if not s]
        # (All of them, changed round them or not: a fighter a follow would lose though
        # nothing changed round it, held between looks, is found out here. Followed only
        # where the picture changed, a fighter 0.36 in off stayed so for 40 frames.)
        dets = self.detector.follow(frame, [self._follow_spec(t) for t in rest])
        if len(found):
            mine = dets[dets.kind == KIND_BASE]
            keep = clear_of(mine, found.xyz[:, :2], found.base_mm / MM_PER_IN / 2)
            out = Detections.merge([mine[keep], found], terrain=dets.terrain, hand_mask=dets.hand_mask,
                                   hands=dets.hands, hand_view=dets.hand_view)
            out.tokens_checked = out.sizes_found = False
            dets = out
        self._look_gate.accept(change, accept)
        return dets

    def _regions(self):
        from .motion import RegionMap

        if self._region_map is None or self._region_map.camera is not self.camera:
            self._region_map = RegionMap(self.camera, self.detector.floor, self.gate.factor,
                                         self.detector.image_size, margin_in=self.regional_margin_in,
                                         max_share=self.regional_max)
        return self._region_map

    def start_worker(self) -> "LookWorker | None":
        """The background looks' worker process, started if it is not running. It warms up
        on a thread of its own (starting it, a new interpreter with the detector sent over,
        takes ~0.7 s and would hold up a frame); until it is ready looks are made at once.
        None once the pipeline is closed."""
        with self._worker_lock:
            if self._closed:
                return None  # (the server stopping: looks are made at once, see _look)
            if self._worker is None:
                self._worker = LookWorker(self.detector)
            return self._worker

    def _join_look(self, dets: "Detections", frame: np.ndarray, index: int) -> "Detections":
        """A background look that has ended joins this frame: its bases that this frame's
        own bases do not explain join them (a fighter the follow lost, found again; a new
        one, confirmed as any new base is), its tokens replace this frame's. Bases it saw where a hand is
        now are left for the next look: what the hand does there is newer."""
        from .detection import KIND_BASE, Detections
        from .motion import change_since, clear_of
        from .world import MM_PER_IN

        future, at, change, camera, then_small, whole, looked = self._pending
        if not future.done():
            return dets
        self._pending = None
        try:
            full = future.result()
        except Exception:  # noqa: BLE001 - a failed look is as if it was not made
            return dets
        full.hand_view = self.detector.floor  # (not sent back by the worker: the same view)
        if camera is not self.camera:  # the camera was re-posed meanwhile: stale
            return dets
        if getattr(full, "learnt", None) is not None:
            # The follows fit rims with what the looks learnt of each side's edge and wall
            # (they had kept what the looks made here before the worker took over).
            self.detector.adopt(full.learnt)
        if whole:
            self._last_full = at
            self._accept_whole_look(looked, full.hands)
        elif self._look_gate is not None:
            self._look_gate.accept(*looked)
        if change is not None and self.gate is not None:
            self.gate.accept(change)  # what changed up to the look's frame has been looked at
        self.background_looks += 1
        self.look = "full" if whole else "region"
        # Only this frame's own bases outrank the look's (they are newer); a fighter the
        # follow lost is matched to the look's base by the tracker, as any base is.
        # What changed since the look's frame (once, for both uses below).
        since = change_since(self._probe_gate, then_small, frame)
        mine = self._refreshed(dets[dets.kind == KIND_BASE], full, since)
        new = (full.kind == KIND_BASE) & clear_of(full, mine.xyz[:, :2], mine.base_mm / MM_PER_IN / 2)
        new &= np.array([not dets.hand_over(float(x), float(y)) for x, y in full.xyz[:, :2]], bool)
        # The look found the known fighters' bases at any size: their votes on each one's size.
        self.tracker.note_sizes(full[(full.kind == KIND_BASE) & ~new])
        # The look is a few frames old: a base that has moved since is re-found in this
        # frame from where the look saw it (a fighter glides up to ~0.7 in a frame); one
        # not re-found is taken where the look saw it only if nothing changed there since
        # (_still_there), else left to the next look.
        found = self._refind(full[new], frame, index - at) if new.any() else None
        if found is not None and len(found) < int(new.sum()):
            found = Detections.merge([found, self._still_there(full[new], found, since)])
        # Tokens seen under a hand say nothing of those the hand hid (the tracker keeps
        # them as they were while hands are over the table): not taken from such a look.
        tokens = full[full.kind != KIND_BASE] if full.tokens_checked and not full.hands else None
        parts = [mine] + ([found] if found is not None else []) + \
            ([tokens] if tokens is not None else [dets[dets.kind != KIND_BASE]])
        out = Detections.merge(parts, terrain=dets.terrain, hand_mask=dets.hand_mask, hands=dets.hands,
                               hand_view=dets.hand_view, doubts=full.doubts if tokens is not None else dets.doubts)
        out.tokens_checked = tokens is not None or dets.tokens_checked
        out.sizes_found = False  # mostly this frame's follow (a look's new bases are re-found at their size)
        return out

    def _refreshed(self, mine: "Detections", full: "Detections", since) -> "Detections":
        """This frame's bases, each known fighter the look saw where nothing has changed
        since the look's frame (as the change gate judges change, round its miniature)
        taken as the look fitted it: a whole look's fit, as new there as this frame, and
        a fresh measurement of a fighter this frame only held where it was. (Following
        every fighter on the frame that hands a look over did that before, at 80 ms a
        frame for the Epic sample's 24 stands.) Same side and size only. ``since``: what
        changed since the look's frame (motion.change_since)."""
        from .detection import KIND_BASE, Detections
        from .motion import narrowest_radius_in

        seen = full[full.kind == KIND_BASE]
        if not len(seen) or not len(mine):
            return mine
        d = np.hypot(*(seen.xyz[:, None, :2] - mine.xyz[None, :, :2]).transpose(2, 0, 1))
        same = (seen.side[:, None] == mine.side[None, :]) & (np.abs(seen.base_mm[:, None] - mine.base_mm[None, :]) < 0.5) \
            & (seen.shape[:, None] == mine.shape[None, :])
        d = np.where(same & (d < 0.5 * narrowest_radius_in(mine)[None, :]), d, np.inf)
        pairs = [(i, int(np.argmin(d[i]))) for i in range(len(seen)) if np.isfinite(d[i]).any()]
        # One look base per fighter, each the nearest to it.
        best: dict[int, int] = {}
        for i, j in pairs:
            if j not in best or d[i, j] < d[best[j], j]:
                best[j] = i
        # (Not where a hand was over the table in the look's frame, or is now.)
        best = {j: i for j, i in best.items()
                if not any(v.hand_over(*map(float, seen.xyz[i, :2])) for v in (full, mine))}
        if not best:
            return mine
        js, iz = list(best), list(best.values())
        still = self._unchanged(seen[np.array(iz)], since)
        if not still.any():
            return mine
        take = np.zeros(len(mine), bool)
        take[np.array(js)[still]] = True
        out = Detections.merge([mine[~take], seen[np.array(iz)[still]]], terrain=mine.terrain, hand_mask=mine.hand_mask,
                               hands=mine.hands, hand_view=mine.hand_view)
        out.tokens_checked, out.sizes_found = mine.tokens_checked, mine.sizes_found
        return out

    def _still_there(self, bases: "Detections", found: "Detections", since) -> "Detections":
        """Of a look's new ``bases`` that this frame's follow did not re-find, those where
        nothing has changed in the picture since the look's frame (its miniature and the
        reach round it, as the change gate judges change): still where the look saw them.
        A base whose rim its miniature all but hides is found by a look and missed by a
        follow; left to the next look it stayed unconfirmed for seconds at a time."""
        from .motion import clear_of
        from .world import MM_PER_IN

        lost = bases[clear_of(bases, found.xyz[:, :2], found.base_mm / MM_PER_IN / 2)] if len(found) else bases
        if not len(lost):
            return lost
        return lost[self._unchanged(lost, since)]

    def _unchanged(self, bases: "Detections", since) -> np.ndarray:
        """Which of ``bases`` nothing changed round in ``since`` (a change gate's Change):
        the box of each one's miniature standing on it, reaching 0.3 in past its base."""
        from .motion import cylinder_boxes
        from .world import MM_PER_IN

        r = np.where(bases.shape > 0, np.hypot(bases.size_mm[:, 0], bases.size_mm[:, 1]), bases.base_mm) / MM_PER_IN / 2
        boxes = cylinder_boxes(self.camera, bases.xyz, r + 0.3, self.config.base_thickness_in + 2.5)
        return np.array(since.unchanged(boxes), bool)

    def _refind(self, bases: "Detections", frame: np.ndarray, age: int) -> "Detections":
        from .base_shapes import SHAPE_NAMES

        if age <= 0:
            return bases
        specs = []
        for k in range(len(bases)):
            x, y, z = (float(v) for v in bases.xyz[k])
            spec = (x, y, z, int(bases.side[k]), float(bases.base_mm[k]))
            if len(bases.shape) and bases.shape[k]:
                spec += (SHAPE_NAMES[int(bases.shape[k])], *map(float, bases.size_mm[k]), float(bases.angle_deg[k]))
            specs.append(spec)
        move = min(3.0, 0.7 * age)
        return self.detector.follow(frame, specs, reach_in=0.8 + move, max_jump_in=0.5 + move)

    def quiesce(self, wait: bool = False) -> None:
        """Drop a background look and its worker: the detector is about to change (camera,
        terrain), and the worker's copy of it with it (a new one is started when needed).
        ``wait``: until the worker process has ended (not on the frame path)."""
        self._pending = None
        with self._worker_lock:
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.shutdown(wait)

    def set_camera(self, camera) -> None:
        """Use a new camera pose (a bump re-posed, or a judge's re-run)."""
        self.quiesce()
        self.camera = camera
        self.detector.set_camera(camera)

    def set_terrain(self, terrain) -> None:
        """Use new terrain (a judge typed an untagged piece)."""
        self.quiesce()
        self.detector.set_terrain(terrain)

    def close(self) -> None:
        """Stop the background worker (a pipeline replaced, the server stopping), and wait
        for it: left to end as the interpreter exits, its pool's wake-up pipe could be
        closed under the exit hook that writes to it (a traceback on the way out, now
        and then, after Ctrl+C). Looks asked for afterwards are made at once."""
        with self._worker_lock:
            self._closed = True
        self.quiesce(wait=True)

    def _pose_due(self, index: int) -> bool:
        """Whether a frame taken the usual way re-checks the camera pose: with the change
        gate, when something changed round a table marker (a hand over it, a bump: a bump
        changes the whole picture), while the pose is not plainly "ok" (a re-pose being
        confirmed, markers hidden) and at least once a second; without it, always. The
        check costs ~12 ms a frame at 1080p, a third of a frame that only follows."""
        if self.gate is None or self.pose_tracker is None:
            return True
        return (self._markers_changed or self.health != "ok" or self.pose_tracker.confirming
                or index - self._last_pose >= self.fps or index < self._last_pose)

    def _update_pose(self, frame: np.ndarray, index: int) -> None:
        self._last_pose = index
        if self.pose_tracker is not None:
            # Searches only around where the table markers should be (a few ms), and
            # the whole frame only when one is missing.
            status = self.pose_tracker.update(frame, frame_index=index)
            self.health = status.health
            if status.changed and status.camera is not None and index > 0:
                self.set_camera(status.camera)
            if status.health == "ok" and not self._hands_now and abs(index - self._last_blur) >= self.fps:
                self._read_blur(frame, index)

    def _read_blur(self, frame: np.ndarray, index: int) -> None:
        """Read the blur off the next table marker in turn (see ``picture_blur``)."""
        from .calibrate import picture_blur

        det = self.pose_tracker.last_detections
        if det is None or not len(det):
            return
        if any(v[0] > index for v in self._blur_read.values()):
            self._blur_read.clear()  # the source started again (a camera reconnected)
        self._last_blur = index
        ids = sorted(int(i) for i in det.ids)
        mid = self._blur_turn = next((i for i in ids if i > self._blur_turn), ids[0])
        blur = picture_blur(self.config, frame, det.subset([mid]))
        if blur is not None:
            self._blur_read[mid] = (index, *blur)

    @property
    def picture_blur(self) -> tuple[float, float] | None:
        """How soft the picture is now: (sigma on the table in inches, sigma in pixels),
        the median of the table markers' latest readings over the ten seconds before the
        newest; None until two markers have been read."""
        read = list(self._blur_read.values())
        now = max([self._index] + [v[0] for v in read])  # (a fresh pipeline has seen no frame yet)
        recent = [v for v in read if 0 <= now - v[0] <= 10 * self.fps]
        if len(recent) < 2:
            return None
        return float(np.median([v[1] for v in recent])), float(np.median([v[2] for v in recent]))

    def _gated(self, frame: np.ndarray, index: int) -> "Detections | None":
        """The change gate: this frame's detections worked out from what changed since
        the last frame looked at, or None to look the usual way (pose, then _detect).
        Only while everything has been settled for ``calm_frames`` (every fighter confirmed
        and seen, no hands, pose "ok") and a full look was made within ``safety_s``; else
        the gate only keeps its reference."""
        from .motion import GateMap, follow_some, held_detections

        t0 = time.perf_counter()
        change = self.gate.check(frame)
        self._small_now = change.small
        self._gate_ms = (time.perf_counter() - t0) * 1e3
        tracks = self.tracker.tracks
        if self._gate_map is None or self._gate_map.camera is not self.camera:
            top = max((p.height_in for p in self.detector.terrain), default=0.0)
            self._gate_map = GateMap(self.camera, self.config.table, self.detector.image_size, self.gate.factor,
                                     top_in=top, base_in=self.config.base_thickness_in)
        # Whether the table markers' surroundings changed: the usual way re-checks the
        # pose only then (see _pose_due).
        self._markers_changed = change.everything or any(change.in_box(b) for b in self._gate_map.marker_boxes)
        settled = not (change.everything or self._state is None or self._hands_now
                       or not self.tracker.settled(since=self._last_full)
                       or not (self.health == "ok" or self.health.startswith("re-posed")))
        # Settled for a few frames first: every fighter's place averaged over some looks.
        self._calm = self._calm + 1 if settled else 0
        if self._calm <= self.calm_frames or index - self._last_full >= self.safety_s * self.fps:
            # The usual way; the change is accepted once it is known what was looked at
            # (process: a frame that follows only some fighters accepts only their cells).
            self._usual_change = change
            return None
        plan = self._gate_map.plan(change, tracks, self._state.tokens)
        # A fighter that moved and has not yet been seen still three times is followed
        # whether or not the picture changed round it: where it stopped, its last fit (a
        # step's prediction overshot) may be off, and a still picture would hold it there
        # until the next whole look (a stand of the Epic game at 30 frames/s, 0.19 in off
        # for 2 s).
        settling = [i for i, t in enumerate(tracks) if t.moving_from is not None and i not in plan.follow]
        if settling:
            plan = replace(plan, follow=tuple(sorted((*plan.follow, *settling))))
        token_later = plan.tokens and not plan.elsewhere and plan.follow and \
            self._processed - self._last_token_look < self._look_interval_frames
        if token_later:
            # Only fighters changed round a token (one walking past it, or onto it): they
            # are followed, and the tokens looked at again no sooner than look_interval_s
            # after the last look at them (a look each frame cost the Epic clip at 30
            # frames/s 12 whole looks in a row); the change round the tokens is kept
            # for that look.
            plan = replace(plan, tokens=False)  # (no change elsewhere: not full either)
        look_later = plan.elsewhere and not plan.tokens and \
            self._processed - self._last_full_processed < self._look_interval_frames
        if look_later:
            # A change where no fighter is (a hand coming in, a fighter put down) is looked
            # at no sooner than look_interval_s after the last look: a hand reaching in
            # over a few frames had a regional look made each frame (~95 ms at 1080p).
            # Meanwhile the fighters round which the picture changed are followed, and
            # the rest of the change is kept for that look.
            plan = replace(plan, elsewhere=False)
        self.look = plan.kind
        if plan.pose:
            camera = self.camera
            self._update_pose(frame, index)
            if self.camera is not camera:  # re-posed: look at everything again
                self.gate.accept(change)
                return None
        dets = None
        if plan.follow and not plan.full:
            chosen = [tracks[i] for i in plan.follow]
            # No hand was over the table and the picture changed only round fighters: no
            # arm has come in over the table's edge, so no hand is looked for (7-8 ms a
            # frame on the Epic table, whose mat passes the skin-colour test in places).
            found = self.detector.follow(frame, [self._follow_spec(t) for t in chosen],
                                         hands=self._hands_now or look_later)
            if len(found) >= len(chosen):  # each re-found (else: look at the whole table)
                dets = follow_some(found, chosen, [t for i, t in enumerate(tracks) if i not in plan.follow])
                if look_later:
                    self.gate.accept(change, change.mask & _cells_in(change, self._gate_map.fighter_boxes(chosen)))
                else:
                    self.gate.accept(change, change.mask & ~self._token_cells(change) if token_later else change.mask)
        if dets is None and (plan.full or plan.follow):
            if not (plan.tokens or token_later) and self._regional_now() and not self.background:
                dets = self._look_where_changed(frame)
                if dets is not None:
                    self.gate.accept(change)
            if dets is None:
                dets = self._look(frame, index, tokens=plan.tokens or token_later, change=change)
        elif dets is None:  # still (or only round the markers): every fighter where it was
            dets = held_detections(tracks, self.detector.terrain)
            if look_later:
                self.gate.drift_only(change)
            else:
                self.gate.accept(change, change.mask)
        self._hands_before, self._hands_now = self._hands_now, dets.hands
        return dets

    def process(self, frame: np.ndarray, index: int = 0, time_s: float = 0.0) -> FrameResult:
        self._processed += 1
        self._last_index, self._index = self._index, index
        dets = self._gated(frame, index) if self.gate is not None else None
        if dets is None:  # the usual way
            if self._pose_due(index):
                self._update_pose(frame, index)
            self.look = "follow"  # (_look says "full" when it looks at the whole table)
            self._usual_accept = None
            dets = self._detect(frame, index)
            if self._usual_change is not None:
                self.gate.accept(self._usual_change, self._usual_accept)
                self._usual_change = None
        if self._pending is not None:
            dets = self._join_look(dets, frame, index)
        if dets.tokens_checked:
            self._last_token_look = self._processed
        timings = dict(self.detector.timings_ms) if self.look in ("full", "region", "follow") else {}
        if self.gate is not None:
            timings["gate"] = self._gate_ms
        state = self.tracker.update(dets, index, time_s, bare=functools.partial(self.detector.bare, frame))
        state = replace(state, calibration_health=self.health)
        epic = None
        if self.epic is not None:
            epic = self.epic.observe(state)
            state = replace(epic.state, extra={**state.extra, "epic": epic.summary()})
        self._state = state
        return FrameResult(index, time_s, frame, state, dets, timings, epic)


    def judge_still(self, frame: np.ndarray, index: int = 0, time_s: float = 0.0) -> FrameResult:
        """One photograph judged on its own (a judge's still at a round's end, a folder of
        stills): the camera re-posed from its table markers, the whole table and its tokens
        looked at, and the state built from what this picture shows alone
        (``tracking.still_state``): no fighter kept from another frame, none waiting to be
        confirmed. The tracker of a clip is left untouched."""
        from .tracking import still_state

        self._update_pose(frame, index)
        self.look = "full"
        dets = _look_whole(self.detector, frame, True)
        timings = dict(self.detector.timings_ms)
        state = replace(still_state(dets, self.config, index, time_s), calibration_health=self.health)
        epic = None
        if self.config.epic is not None:
            from .epic_table import EpicTable

            epic = EpicTable(self.config.epic).observe(state)  # units grouped from this picture alone
            state = replace(epic.state, extra={"epic": epic.summary()})
        return FrameResult(index, time_s, frame, state, dets, timings, epic)


class _HeldLook:
    """A background look made at once and held back until ``ready_at`` frames have been
    processed: the worker's timing made repeatable (``Pipeline.look_delay_frames``)."""

    def __init__(self, dets, pipeline: Pipeline, ready_at: int):
        self._dets, self._pipeline, self._ready_at = dets, pipeline, ready_at

    def done(self) -> bool:
        return self._pipeline._processed >= self._ready_at

    def result(self, timeout: float | None = None):
        return self._dets


class LookWorker:
    """Full looks in a process of their own (``Pipeline(background=True)``). A thread
    would share the interpreter lock with the follows of the frames meanwhile, whose
    pure-Python parts it slows (720p: a follow 19 ms alone, 35 ms beside a thread doing
    full looks). The process gets a copy of the detector as it stands, tag reads and
    the empty table included; a detector changed later (camera, terrain) needs a new
    worker (``Pipeline.quiesce``)."""

    def __init__(self, detector):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # spawn, not fork: the server's threads may hold locks a forked child would inherit.
        # The detector pickled here, as it stands: the process is started from a thread
        # while this one goes on looking with (and changing) the detector.
        self._pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_worker_start,
                                         initargs=(pickle.dumps(detector, pickle.HIGHEST_PROTOCOL), os.getpid()))
        # The process starts on the first task: a warm-up task on a thread of its own, so
        # that no frame waits for it (``ready`` once it has run).
        self._ready = threading.Event()
        threading.Thread(target=self._warm_up, daemon=True).start()

    def _warm_up(self) -> None:
        try:
            self._pool.submit(_worker_ready).result()
        except Exception:  # noqa: BLE001 - shut down before it started: never ready
            return
        self._ready.set()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def wait_ready(self, timeout: float) -> bool:
        """Block until the worker can take looks (or ``timeout`` s pass); whether it can."""
        return self._ready.wait(timeout)

    def submit(self, frame: np.ndarray, tokens: bool, windows=None):
        """A whole look (``windows`` None), or a regional one in those floor-view windows."""
        return self._pool.submit(_worker_look, frame, tokens, windows)

    def shutdown(self, wait: bool = False) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=True)


_WORKER_DETECTOR = None  # the worker process's detector (LookWorker)


def _worker_start(detector_pickled: bytes, server_pid: int) -> None:
    global _WORKER_DETECTOR
    import signal

    import cv2

    # Ctrl+C at a terminal reaches the whole process group: the server then stops the
    # worker (or the worker sees it gone, below); the worker's own KeyboardInterrupt
    # only printed a traceback under the server's clean exit.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    cv2.setNumThreads(1)  # the other core is the follows'
    try:
        # A look is throughput work, the follows and the stream are what the viewer
        # waits on: on a busy machine the look gives way to them.
        os.nice(10)
    except OSError:
        pass
    _WORKER_DETECTOR = pickle.loads(detector_pickled)

    def orphaned() -> None:  # the server killed outright: do not linger
        # The server's pid as it gave it, not os.getppid() read here: a server gone while
        # this process was still starting had left it already adopted (by init), and the
        # worker then waited for that one to end, for ever.
        while os.getppid() == server_pid:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=orphaned, daemon=True).start()


def _worker_ready() -> bool:
    return _WORKER_DETECTOR is not None


def _cells_in(change, boxes) -> np.ndarray:
    """The gate cells the image boxes cover (a mask of ``change``'s shape)."""
    cells = np.zeros(change.mask.shape, bool)
    for b in boxes:
        cells[change.cells_in_box(b)] = True
    return cells


def _look_whole(detector, frame: np.ndarray, tokens: bool):
    """detector.detect(frame), looking for tokens this time if ``tokens``."""
    keep = detector.tokens_every
    detector.tokens_every = 1 if tokens else keep
    try:
        return detector.detect(frame)
    finally:
        detector.tokens_every = keep


def _look_regions(detector, frame: np.ndarray, windows) -> "Detections":
    """detector.detect_region in each window (none overlap), merged."""
    from .detection import Detections

    parts = [detector.detect_region(frame, w) for w in windows]
    if not parts:
        out = Detections()
        out.tokens_checked = out.sizes_found = False
        return out
    out = Detections.merge(parts, terrain=parts[0].terrain, hand_mask=parts[0].hand_mask, hands=parts[0].hands,
                           hand_view=parts[0].hand_view)
    out.tokens_checked = out.sizes_found = False
    return out


def _worker_look(frame: np.ndarray, tokens: bool, windows=None):
    out = _look_whole(_WORKER_DETECTOR, frame, tokens) if windows is None else \
        _look_regions(_WORKER_DETECTOR, frame, windows)
    out.hand_view = None  # the caller has the same view; not pickled back each look
    out.learnt = _WORKER_DETECTOR.learnt()  # its rims' edge offsets and wall shares, for the follows
    return out
