"""Frame sources: a camera index, a video file, an image folder, or a footage folder.

Every failure to open or read is a :class:`SourceError` with one line naming the
problem and the fix. A picture in an image folder that cannot be decoded, or a JPEG cut
short (OpenCV would decode its missing part as grey), is skipped, counted
(``source.skipped``) and named (``source.skipped_files``, ``source.on_skip``); the frames
keep their files' positions as indices. A video that ends early because it is truncated
or corrupt raises after the frames already read have been yielded, so nothing tracked so
far is lost.
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


def jpeg_cut_short(data: bytes) -> bool:
    """Whether ``data`` is a JPEG that ends before its end-of-image marker: a copy cut
    short, which OpenCV decodes without an error, its missing part grey. The segments are
    walked from the start-of-image (each scan's coded data up to the next marker that is
    not a stuffed 0xFF or a restart), so a thumbnail's end marker early in the file or
    bytes a camera appends after the end do not mislead it. Not a JPEG: False."""
    n = len(data)
    if data[:2] != b"\xff\xd8":
        return False
    if data.endswith(b"\xff\xd9"):
        # Whole: coded data never holds 0xFF 0xD9, so a file ending so ends with its end
        # marker (the walk below costs a fifth of decoding, on every frame of a folder).
        return False
    i = 2
    while i + 2 <= n:
        if data[i] != 0xFF:
            return False  # not where a marker should be: for the decoder to judge
        m = data[i + 1]
        if m == 0xFF:  # fill byte
            i += 1
            continue
        if m == 0xD9:  # end of image
            return False
        if 0xD0 <= m <= 0xD7 or m == 0x01:  # restart markers, TEM: no length
            i += 2
            continue
        if i + 4 > n:
            return True
        i += 2 + int.from_bytes(data[i + 2:i + 4], "big")
        if m == 0xDA:  # start of scan: skip the coded data to the next real marker
            while True:
                j = data.find(b"\xff", i)
                if j < 0 or j + 1 >= n:
                    return True
                after = data[j + 1]
                if after == 0x00 or 0xD0 <= after <= 0xD7 or after == 0xFF:
                    i = j + 1
                    continue
                i = j
                break
    return True


def read_picture(path: Path, flags: int = cv2.IMREAD_COLOR) -> tuple[np.ndarray | None, str]:
    """``(image, "")`` (BGR, or as ``flags`` asks: ``cv2.IMREAD_GRAYSCALE`` decodes a
    JPEG's own grey levels, not those converted from its colours), or ``(None, why)`` for
    a file that is no whole picture: a JPEG cut short, or one OpenCV cannot decode."""
    try:
        data = path.read_bytes()
    except OSError as e:
        return None, f"cannot be read ({e.strerror or e})"
    if jpeg_cut_short(data):
        return None, "the JPEG is cut short (no end-of-image marker; an interrupted copy?)"
    frame = cv2.imdecode(np.frombuffer(data, np.uint8), flags) if data else None
    if frame is None:
        return None, "cannot be decoded as a picture (corrupt or not an image)"
    return frame, ""


class FrameSource:
    """Iterate ``(index, time_s, frame_bgr)``. ``loop=True`` restarts a file or folder
    at its end (the live page plays the sample on loop)."""

    def __init__(self, spec: str | int | Path, loop: bool = False):
        self.spec = spec
        self.loop = loop
        self.skipped = 0
        self.skipped_files: dict[Path, str] = {}  # file -> why it was skipped (each named once)
        self.on_skip = None  # called with a one-line warning as a picture is skipped
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
        lap_start = 0
        while True:
            produced = 0
            for pos, frame in self._frames_once():
                index = lap_start + pos  # an image folder's frame keeps its file's position
                yield index, index / self.fps if not self.is_live else time.monotonic(), frame
                produced += 1
            lap_start += len(self._files) if self._files is not None else produced
            if not self.loop or self.is_live or produced == 0:
                return
            if self._cap is not None:
                self._cap.set(cv2.CAP_PROP_POS_FRAMES, 0)

    def _frames_once(self) -> Iterator[tuple[int, np.ndarray]]:
        if self._files is not None:
            for pos, p in enumerate(self._files):
                frame, why = read_picture(p)
                if frame is None:  # skipped, counted and named; the others go on
                    self._skip(p, why)
                    continue
                yield pos, frame
            return
        assert self._cap is not None
        read = 0
        while True:
            ok, frame = self._cap.read()
            if not ok or frame is None:
                break
            yield read, frame
            read += 1
        if self.is_live:
            raise SourceError("camera stopped giving frames; check the cable, then restart")
        if self.frame_count and read < self.frame_count - 2 and not self.loop:
            # A truncated or corrupt file: what was read has been yielded and kept.
            raise SourceError(f"{self._path}: video ended after {read} of {self.frame_count} frames (truncated or corrupt); "
                              f"the frames before were kept")

    def _skip(self, path: Path, why: str) -> None:
        self.skipped += 1
        if path not in self.skipped_files:  # (a folder played on loop names it once)
            self.skipped_files[path] = why
            if self.on_skip is not None:
                self.on_skip(f"{path}: {why}; skipped this picture")

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
