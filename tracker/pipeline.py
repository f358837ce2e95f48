"""The per-frame pipeline: frame → calibration → detection → tracking → world state.

>>> pipe = Pipeline.from_footage(default_footage())          # doctest: +SKIP
>>> for index, t, frame in open_source(default_footage()):   # doctest: +SKIP
...     result = pipe.process(frame, index, t)
...     result.state.fighters
"""

from __future__ import annotations

import json
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


class Pipeline:
    """Holds the game config, the camera model and the tracker state of one table.

    Each frame: the ArUco markers are found once; the table markers re-pose a bumped
    camera (calibration.live.PoseTracker), the token tags feed detection; then bases
    and tokens are detected and tracked into a WorldState.
    """

    def __init__(self, config: GameConfig, setup, *, fps: float = 15.0, full_every: int = 5):
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
        self.full_every = full_every
        self._last_full = -10**9
        self._hands_before = self._hands_now = False

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
        need_full = (
            every <= 1
            or index - self._last_full >= every
            or not tracks
            or any(not t.confirmed for t in tracks)
            or (self._hands_before and not self._hands_now)
        )
        if need_full:
            dets = self.detector.detect(frame)
            self._last_full = index
        else:
            dets = self.detector.follow(frame, [(float(t.xyz[0]), float(t.xyz[1]), float(t.xyz[2]), t.side, t.base_mm)
                                                for t in tracks])
        self._hands_before, self._hands_now = self._hands_now, dets.hands
        return dets

    def fresh(self) -> "Pipeline":
        """A pipeline for the same table and calibration with no tracking history."""
        return Pipeline(self.config, self.setup, fps=self.fps, full_every=self.full_every)

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

    def process(self, frame: np.ndarray, index: int = 0, time_s: float = 0.0) -> FrameResult:
        if self.pose_tracker is not None:
            # Searches only around where the table markers should be (a few ms), and
            # the whole frame only when one is missing.
            status = self.pose_tracker.update(frame, frame_index=index)
            self.health = status.health
            if status.changed and status.camera is not None and index > 0:
                self.camera = status.camera
                self.detector.set_camera(self.camera)
        dets = self._detect(frame, index)
        state = self.tracker.update(dets, index, time_s)
        state = replace(state, calibration_health=self.health)
        return FrameResult(index, time_s, frame, state, dets, dict(self.detector.timings_ms))
