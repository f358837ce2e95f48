"""Frame sources: a camera index, a video file, an image folder, or a footage folder.

Every failure to open or read is a :class:`SourceError` with one line naming the
problem and the fix. A frame that cannot be decoded in an image folder is skipped and
counted (``source.skipped``); a video that ends early because it is truncated or
corrupt raises after the frames already read have been yielded, so nothing tracked
so far is lost.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterator

import cv2
import numpy as np

from .errors import SourceError

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp"}
VIDEO_SUFFIXES = {".mp4", ".avi", ".mov", ".mkv", ".m4v", ".webm", ".mpg", ".mpeg"}


def default_footage() -> Path:
    """The bundled sample game (``sample_footage/warcry-demo`` in the repository)."""
    return Path(__file__).resolve().parent.parent / "sample_footage" / "warcry-demo"


def footage_video(folder: Path) -> Path | None:
    """The clip of a footage folder: ``clip.*`` or ``frames/``; None if it has neither."""
    for p in sorted(folder.glob("clip.*")):
        if p.suffix.lower() in VIDEO_SUFFIXES:
            return p
    if (folder / "frames").is_dir():
        return folder / "frames"
    return None


class FrameSource:
    """Iterate ``(index, time_s, frame_bgr)``. ``loop=True`` restarts a file or folder
    at its end (the live page plays the sample on loop)."""

    def __init__(self, spec: str | int | Path, loop: bool = False):
        self.spec = spec
        self.loop = loop
        self.skipped = 0
        self.is_live = False
        self._files: list[Path] | None = None
        self._cap: cv2.VideoCapture | None = None
        self.fps = 15.0
        self.frame_count: int | None = None
        self._open()

    # -- opening -------------------------------------------------------------------
    def _open(self) -> None:
        spec = self.spec
        if isinstance(spec, int) or (isinstance(spec, str) and spec.isdecimal()):
            self._open_camera(int(spec))
            return
        path = Path(spec)
        if not path.exists():
            raise SourceError(f"{path}: no such file or folder; give a video file, an image folder or a camera index")
        if path.is_dir():
            clip = footage_video(path)
            if clip is not None:
                path = clip
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
            if not files:
                raise SourceError(f"{path}: folder has no images (.jpg, .png ...) and no clip.mp4; point --source at footage")
            self._files = files
            self.frame_count = len(files)
            return
        self._open_video(path)

    def _open_camera(self, index: int) -> None:
        cap = cv2.VideoCapture(index)
        if not cap.isOpened():
            cap.release()
            raise SourceError(f"camera {index} does not open; check it is connected and not in use, or pass a video file")
        ok, _ = cap.read()
        if not ok:
            cap.release()
            raise SourceError(f"camera {index} opened but gives no frames; check permissions or try another index")
        self._cap, self.is_live = cap, True
        self.fps = cap.get(cv2.CAP_PROP_FPS) or 30.0

    def _open_video(self, path: Path) -> None:
        if path.stat().st_size == 0:
            raise SourceError(f"{path}: file is empty; re-copy or re-record the footage")
        cap = cv2.VideoCapture(str(path))
        ok, frame = cap.read() if cap.isOpened() else (False, None)
        if not ok or frame is None:
            cap.release()
            raise SourceError(f"{path}: not a readable video (corrupt or unsupported codec); re-encode it as MP4 or give an image folder")
        cap.set(cv2.CAP_PROP_POS_FRAMES, 0)
        self._cap = cap
        self.fps = cap.get(cv2.CAP_PROP_FPS) or 15.0
        n = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
        self.frame_count = n if n > 0 else None
        self._path = path

    # -- reading -------------------------------------------------------------------
    def __iter__(self) -> Iterator[tuple[int, float, np.ndarray]]:
        index = 0
        while True:
            produced = 0
            for frame in self._frames_once():
                yield index, index / self.fps if not self.is_live else time.monotonic(), frame
                index += 1
                produced += 1
            if not self.loop or self.is_live or produced == 0:
                return
            if self._cap is not None:
                self._cap.set(cv2.CAP_PROP_POS_FRAMES, 0)

    def _frames_once(self) -> Iterator[np.ndarray]:
        if self._files is not None:
            for p in self._files:
                frame = cv2.imread(str(p), cv2.IMREAD_COLOR)
                if frame is None:
                    self.skipped += 1  # unreadable frame: skipped and counted
                    continue
                yield frame
            return
        assert self._cap is not None
        read = 0
        while True:
            ok, frame = self._cap.read()
            if not ok or frame is None:
                break
            read += 1
            yield frame
        if self.is_live:
            raise SourceError("camera stopped giving frames; check the cable, then restart")
        if self.frame_count and read < self.frame_count - 2 and not self.loop:
            # A truncated or corrupt file: what was read has been yielded and kept.
            raise SourceError(f"{self._path}: video ended after {read} of {self.frame_count} frames (truncated or corrupt); "
                              f"the frames before were kept")

    @property
    def frame_files(self) -> list[Path] | None:
        """The image files, for an image-folder source (None for video and cameras)."""
        return self._files

    def close(self) -> None:
        if self._cap is not None:
            self._cap.release()
            self._cap = None

    def __enter__(self) -> "FrameSource":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_source(spec: str | int | Path, loop: bool = False) -> FrameSource:
    """Open a camera index ("0"), a video file, an image folder, or a footage folder."""
    return FrameSource(spec, loop=loop)
