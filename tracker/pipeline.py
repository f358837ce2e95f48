"""The per-frame pipeline: frame → calibration → detection → tracking → world state.

>>> pipe = Pipeline.from_footage(default_footage())          # doctest: +SKIP
>>> for index, t, frame in open_source(default_footage()):   # doctest: +SKIP
...     result = pipe.process(frame, index, t)
...     result.state.fighters
"""

from __future__ import annotations

import json
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
from .world import WorldState


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

    def __init__(self, config: GameConfig, setup, *, fps: float = 15.0, full_every: int = 5, gate: bool = True):
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
        self.detector = TableDetector(config, self.camera, background=setup.background, terrain=setup.terrain)
        self.tracker = FighterTracker(config, fps=fps)
        # Epic-scale games: stands grouped into units, Rescue escorts followed.
        self.epic = None
        if config.epic is not None:
            from .epic_table import EpicTable

            self.epic = EpicTable(config.epic)
        self.full_every = full_every
        self._last_full = -10**9  # source index of the last full look
        self._processed = 0  # frames processed (a live player skips some)
        self._last_full_processed = -10**9
        self._hands_before = self._hands_now = False
        # Change gate (tracker.motion): a still frame is not looked at again, a change at
        # a known fighter only re-finds that fighter; a full look at least every safety_s.
        from .motion import MotionGate

        self.gate = MotionGate() if gate else None
        self.safety_s = 2.0
        self.calm_frames = 5
        self._calm = 0
        self.look = ""  # what the last frame got: full / follow / pose / still (gate off: full / follow)
        self._gate_map = None
        self._state: WorldState | None = None
        self._gate_ms = 0.0

    @property
    def full_every(self) -> int:
        """Look at the whole table every this many frames (1: every frame)."""
        return self._full_every

    @full_every.setter
    def full_every(self, n: int) -> None:
        self._full_every = max(1, int(n))
        # Tokens rarely move: when following, look for them in every other full look.
        self.detector.tokens_every = 2 if self._full_every > 1 else 1

    def _detect(self, frame: np.ndarray, index: int) -> "Detections":
        """The whole table every ``full_every`` frames, when a hand has just left it, and
        while a new base waits to be confirmed; in between, each known fighter is only
        re-found near where it was (a tenth of the work)."""
        tracks = self.tracker.tracks
        # Hands move fighters: look at the whole table every other frame while they are there.
        every = min(self.full_every, 2) if self._hands_now else self.full_every
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
            dets = self.detector.detect(frame)
            self._last_full, self._last_full_processed = index, self._processed
        else:
            dets = self.detector.follow(frame, [self._follow_spec(t) for t in tracks])
        self._hands_before, self._hands_now = self._hands_now, dets.hands
        return dets

    @staticmethod
    def _follow_spec(t) -> tuple:
        """A track as detector.follow takes it."""
        xyz = t.predict(1)  # where a moving base should be now
        return ((float(xyz[0]), float(xyz[1]), float(xyz[2]), t.side, t.base_mm)
                + (() if t.shape == "round" else (t.shape, *t.size_mm, t.angle_deg)))

    def fresh(self) -> "Pipeline":
        """A pipeline for the same table and calibration with no tracking history."""
        return Pipeline(self.config, self.setup, fps=self.fps, full_every=self.full_every, gate=self.gate is not None)

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

    def _update_pose(self, frame: np.ndarray, index: int) -> None:
        if self.pose_tracker is not None:
            # Searches only around where the table markers should be (a few ms), and
            # the whole frame only when one is missing.
            status = self.pose_tracker.update(frame, frame_index=index)
            self.health = status.health
            if status.changed and status.camera is not None and index > 0:
                self.camera = status.camera
                self.detector.set_camera(self.camera)

    def _gated(self, frame: np.ndarray, index: int) -> "Detections | None":
        """The change gate: this frame's detections worked out from what changed since
        the last frame looked at, or None to look the usual way (pose, then _detect).
        Only while everything has been settled for ``calm_frames`` (every fighter confirmed
        and seen, no hands, pose "ok") and a full look was made within ``safety_s``; else
        the gate only keeps its reference."""
        from .motion import GateMap, follow_some, held_detections

        t0 = time.perf_counter()
        change = self.gate.check(frame)
        self._gate_ms = (time.perf_counter() - t0) * 1e3
        tracks = self.tracker.tracks
        settled = not (change.everything or self._state is None or self._hands_now
                       or not self.tracker.settled(since=self._last_full)
                       or not (self.health == "ok" or self.health.startswith("re-posed")))
        # Settled for a few frames first: every fighter's place averaged over some looks.
        self._calm = self._calm + 1 if settled else 0
        if self._calm <= self.calm_frames or index - self._last_full >= self.safety_s * self.fps:
            self.gate.accept(change)
            return None
        if self._gate_map is None or self._gate_map.camera is not self.camera:
            top = max((p.height_in for p in self.detector.terrain), default=0.0)
            self._gate_map = GateMap(self.camera, self.config.table, self.detector.image_size, self.gate.factor,
                                     top_in=top, base_in=self.config.base_thickness_in)
        plan = self._gate_map.plan(change, tracks, self._state.tokens)
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
            found = self.detector.follow(frame, [self._follow_spec(t) for t in chosen])
            if len(found) >= len(chosen):  # each re-found (else: look at the whole table)
                dets = follow_some(found, chosen, [t for i, t in enumerate(tracks) if i not in plan.follow])
                self.gate.accept(change, change.mask)
        if dets is None and (plan.full or plan.follow):
            keep = self.detector.tokens_every
            self.detector.tokens_every = 1 if plan.tokens else keep
            try:
                dets = self.detector.detect(frame)
            finally:
                self.detector.tokens_every = keep
            self._last_full, self._last_full_processed, self.look = index, self._processed, "full"
            self.gate.accept(change)
        elif dets is None:  # still (or only round the markers): every fighter where it was
            dets = held_detections(tracks, self.detector.terrain)
            self.gate.accept(change, change.mask)
        self._hands_before, self._hands_now = self._hands_now, dets.hands
        return dets

    def process(self, frame: np.ndarray, index: int = 0, time_s: float = 0.0) -> FrameResult:
        self._processed += 1
        dets = self._gated(frame, index) if self.gate is not None else None
        if dets is None:  # the usual way
            self._update_pose(frame, index)
            dets = self._detect(frame, index)
            self.look = "full" if self._last_full == index else "follow"
        timings = dict(self.detector.timings_ms) if self.look in ("full", "follow") else {}
        if self.gate is not None:
            timings["gate"] = self._gate_ms
        state = self.tracker.update(dets, index, time_s)
        state = replace(state, calibration_health=self.health)
        epic = None
        if self.epic is not None:
            epic = self.epic.observe(state)
            state = replace(epic.state, extra={**state.extra, "epic": epic.summary()})
        self._state = state
        return FrameResult(index, time_s, frame, state, dets, timings, epic)
