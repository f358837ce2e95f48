"""Live table pose: keep the camera model right while the game is tracked.

``PoseTracker.update(frame)`` detects the table markers in each frame (or takes
detections the caller already has), checks them against the current pose, and

* "ok"                   markers agree with the pose (it is LM-polished from them);
* "re-posed at frame N"  the camera was bumped: the markers stopped agreeing and a new
                         pose fitted consistently on ``confirm_frames`` frames in a row,
                         so it was adopted (reported for ``report_frames`` frames);
* "markers hidden"       fewer than 3 table markers seen (hands, models) but the ones
                         seen, if any, agree: the last good pose is held;
* "lost"                 no pose, or the visible markers disagree with the held pose and
                         there are too few to re-pose.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracker.errors import CalibrationError

from .camera import CameraModel, Intrinsics, TablePose
from .markers import MarkerDetections, detect_markers, detect_markers_in_rois
from .table import _residuals, estimate_table_pose, table_object_points

__all__ = ["PoseTracker", "PoseStatus"]


@dataclass(frozen=True)
class PoseStatus:
    frame: int
    health: str
    pose: TablePose | None
    camera: CameraModel | None
    markers_seen: tuple[int, ...]
    residual_px: float   # RMS of the seen table-marker corners against the pose in use
    changed: bool        # the pose in use changed at this frame (a re-pose)


class PoseTracker:
    def __init__(self, intrinsics: Intrinsics, table, *, pose: TablePose | None = None,
                 threshold_px: float = 1.5, confirm_frames: int = 2, report_frames: int = 30,
                 polish: bool = True, roi_margin_px: float = 90.0):
        self.intrinsics = intrinsics
        self.table = table
        self.table_ids = [m.id for m in table.markers]
        self.pose = pose
        self.threshold_px = threshold_px
        self.confirm_frames = confirm_frames
        self.report_frames = report_frames
        self.polish = polish
        self.roi_margin_px = roi_margin_px
        self.full_frame_searches = 0
        self.last_detections: MarkerDetections | None = None
        self._candidate: list[TablePose] = []
        self._reposed_at: int | None = None
        self._frame = -1
        self.history: list[tuple[int, str]] = []

    @property
    def confirming(self) -> bool:
        """A new pose is waiting for its confirming frames (the markers moved)."""
        return bool(self._candidate)

    @property
    def camera(self) -> CameraModel | None:
        return None if self.pose is None else CameraModel(self.intrinsics, self.pose)

    def _fit(self, det: MarkerDetections) -> TablePose | None:
        try:
            return estimate_table_pose(None, self.intrinsics, self.table, detections=det)
        except CalibrationError:
            return None

    def _rms(self, pose: TablePose, det: MarkerDetections, ids) -> float:
        obj = table_object_points(self.table, ids)
        img = np.stack([det.get(i) for i in ids]).astype(np.float64)
        r = _residuals(obj, img, pose.rvec, pose.tvec, self.intrinsics)
        return float(np.sqrt((r ** 2).sum(1).mean()))

    def _status(self, health: str, ids, res: float, changed: bool) -> PoseStatus:
        if self._reposed_at is not None and health == "ok" and self._frame - self._reposed_at < self.report_frames:
            health = f"re-posed at frame {self._reposed_at}"
        self.history.append((self._frame, health))
        return PoseStatus(self._frame, health, self.pose, self.camera, tuple(ids), res, changed)

    def _rois(self):
        """Boxes around where each table marker should be, from the pose in use."""
        cam = self.camera
        obj = table_object_points(self.table, self.table_ids).reshape(-1, 3)
        uv = cam.project(obj).reshape(-1, 4, 2)
        out = []
        for q in uv:
            side = float(np.ptp(q, axis=0).max())
            m = self.roi_margin_px + side
            (x0, y0), (x1, y1) = q.min(0) - m, q.max(0) + m
            out.append((x0, y0, x1, y1))
        return out

    def _detect(self, frame) -> MarkerDetections:
        """Regions around the expected markers first (cheap); the whole frame when any
        table marker is not found there (moved camera, first frame)."""
        if self.pose is not None:
            det = detect_markers_in_rois(frame, self.table.dictionary, self._rois(), ids_wanted=self.table_ids)
            if len(det) == len(self.table_ids):
                return det
        self.full_frame_searches += 1
        return detect_markers(frame, self.table.dictionary, refine=True, ids_wanted=self.table_ids)

    def update(self, frame=None, *, detections: MarkerDetections | None = None, frame_index: int | None = None) -> PoseStatus:
        """Feed one frame (BGR/gray image) or its marker detections; returns the status."""
        self._frame = self._frame + 1 if frame_index is None else int(frame_index)
        if detections is None:
            if frame is None:
                raise CalibrationError("PoseTracker.update needs a frame or its detections")
            if hasattr(frame, "shape"):
                self.intrinsics.check_image_size((frame.shape[1], frame.shape[0]))
            detections = self._detect(frame)
        det = detections.subset(self.table_ids)
        self.last_detections = det  # (the pipeline reads the picture's sharpness off them)
        ids = [i for i in self.table_ids if det.get(i) is not None]

        if self.pose is None:  # first pose: needs 3 markers
            new = self._fit(det) if len(ids) >= 3 else None
            if new is None:
                return self._status("lost", ids, float("nan"), False)
            self.pose = new
            return self._status("ok", ids, new.reprojection_error_px, True)

        if not ids:
            self._candidate.clear()
            return self._status("markers hidden", ids, float("nan"), False)
        res = self._rms(self.pose, det, ids)
        if res <= self.threshold_px:
            self._candidate.clear()
            if len(ids) < 3:
                return self._status("markers hidden", ids, res, False)
            if self.polish and len(ids) == len(self.table_ids):
                # all markers agree: LM-polish the pose from this frame (small moves, refocus)
                new = self._fit(det)
                if new is not None and new.reprojection_error_px <= self.threshold_px:
                    self.pose = new
            return self._status("ok", ids, res, False)

        # the markers disagree with the pose in use: a bumped camera, or a marker misread
        if len(ids) < 3:
            self._candidate.clear()
            return self._status("lost", ids, res, False)
        new = self._fit(det)
        if new is None or new.reprojection_error_px > self.threshold_px:
            self._candidate.clear()
            return self._status("lost", ids, res, False)
        if self._candidate and self._rms(self._candidate[-1], det, ids) > self.threshold_px:
            self._candidate.clear()  # still moving: start the count again
        self._candidate.append(new)
        if len(self._candidate) >= self.confirm_frames:
            self.pose = new
            self._candidate.clear()
            self._reposed_at = self._frame
            return self._status("ok", ids, new.reprojection_error_px, True)
        return self._status("lost", ids, res, False)
