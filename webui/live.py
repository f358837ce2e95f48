"""The live player: background threads that read the source, run the pipeline on each
frame paced to the source's frame rate, and keep the latest result for the web page.

A reader thread reads frames as they are due (files and folders in real time, looping;
a camera as it gives them) into a one-frame mailbox; the processing thread always takes
the newest frame. When processing is slower than the source, the frames it had no time
for are dropped (and counted), never queued, so the overlay never lags behind the table.
Everything the request threads read goes through one lock; a
:class:`threading.Condition` wakes the MJPEG streams on each new frame.

The video streams at the source's rate, not the processing rate: each frame read is
shown with the overlay of the newest processed state, and each newly processed state is
shown at once on the newest frame (``wait_view`` / ``video_jpeg``): a stream part goes out
when either a source frame or a state is new, never waiting for the other, always the
newest pair (a viewer that falls behind skips to it, nothing queues). Each (frame, state,
layer set) is annotated and JPEG-encoded once whatever the number of viewers; a new
state's first part for each layer set being watched is made by the processing thread
right after the state is published, before it starts the next frame.
Judges' roster assignments and corrections (:mod:`webui.adjust`) are applied to every
state shown (``view_state``); ``call_in_pipeline`` runs a change to the pipeline (a new
table pose) on the processing thread between two frames.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable

import cv2
import numpy as np

from tracker.annotate import DEFAULT_LAYERS, Annotator
from tracker.errors import UserError
from tracker.sources import open_source

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Latest:
    """One processed frame as the page sees it."""

    seq: int  # 1, 2, ... for each processed frame (0: none yet)
    result: Any  # tracker.pipeline.FrameResult
    small: np.ndarray  # the frame resized for streaming
    scale: float  # small / camera image
    wall_time: float
    cache: dict = field(default_factory=dict, compare=False)
    lock: Any = field(default_factory=threading.Lock, compare=False, repr=False)
    entered_at: float = 0.0  # time.time() when its frame entered the player (latency figures)
    ready_at: float = 0.0  # time.time() when this state was published
    started_at: float = 0.0  # time.time() when the pipeline started on its frame
    video_seq: int = 0  # the VideoFrame.seq of its frame


@dataclass(frozen=True)
class VideoFrame:
    """One frame of the source as read (every frame, processed or not): the stream
    shows each with the overlay of the newest processed state, so the video plays at
    the source's rate even when the pipeline is slower."""

    seq: int
    index: int
    time_s: float
    frame: np.ndarray
    cache: dict = field(default_factory=dict, compare=False)
    lock: Any = field(default_factory=threading.Lock, compare=False, repr=False)
    entered_at: float = 0.0  # time.time() when it entered the player


def _for_stream(frame: np.ndarray, scale: float) -> np.ndarray:
    """``frame`` resized by ``scale`` for the stream. Bilinear down to half size, not
    area-averaged: at 1080p -> 720p (a factor of 1.5, where each output pixel still
    takes in the source pixels round it) the pictures differ by 53 dB PSNR, and area
    averaging took 16 ms a frame on the processing thread, 3.4 ms this way. Smaller
    than half, bilinear would skip pixels (aliasing): area."""
    if scale == 1.0:
        return frame
    h, w = frame.shape[:2]
    how = cv2.INTER_LINEAR if scale >= 0.5 else cv2.INTER_AREA
    return cv2.resize(frame, (round(w * scale), round(h * scale)), interpolation=how)


class LivePlayer:
    def __init__(self, source: Any, pipeline, *, loop: bool = True, stream_width: int = 1280,
                 jpeg_quality: int = 80, realtime: bool = True, background: bool | None = None):
        self.source_spec = str(source)
        self.source = open_source(source, loop=loop)  # SourceError (a UserError) on a bad source
        self.source.on_skip = log.warning  # a picture cut short or corrupt: named once in the log
        # In real time, full looks run beside the frames (Pipeline background): the
        # overlay waits for a follow, not for a look at the whole table.
        pipeline.background = realtime if background is None else bool(background)
        self.pipeline = pipeline
        self.annotator = Annotator(pipeline.camera, pipeline.config)
        self.stream_width = int(stream_width)
        self.jpeg_quality = int(jpeg_quality)
        self.realtime = realtime
        self.fps_source = float(self.source.fps or 15.0)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._reader: threading.Thread | None = None
        self._mailbox: tuple[int, float, np.ndarray, float, int] | None = None
        self._source_done = False
        self._latest: Latest | None = None
        self._video: VideoFrame | None = None
        self._control: dict[str, int | None] = {}
        self._adjust = None  # webui.adjust.Adjustments: roster and judge corrections
        # Each fighter as the tracker last had it on the table: a fighter taken down is
        # often lifted off before anyone clicks, and its treasure drops where it stood.
        self._last_seen: dict[str, Any] = {}
        self._calls: deque = deque()  # work to run on the processing thread between frames
        self._done_times: deque[float] = deque(maxlen=30)
        self._streams: dict[frozenset, int] = {}  # layer set -> MJPEG viewers streaming it
        self.processed = 0
        self.dropped = 0
        self.errors = 0
        self.last_error: str | None = None
        self.finished = False
        self.started_at: float | None = None

    # -- life cycle ------------------------------------------------------------------
    def start(self) -> "LivePlayer":
        if self._thread is None:
            self.started_at = time.monotonic()
            self._reader = threading.Thread(target=self._read, name="tabletracker-read", daemon=True)
            self._thread = threading.Thread(target=self._run, name="tabletracker-live", daemon=True)
            self._reader.start()
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop both threads; the reader closes the source itself (never under its feet)."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        for t in (self._thread, self._reader):
            if t is not None and t is not threading.current_thread():
                t.join(timeout)
        if self._thread is None:
            self.source.close()
        self.pipeline.close()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stop.is_set()

    # -- the two loops ---------------------------------------------------------------
    def _read(self) -> None:
        """Read frames as they are due (files: at the source's fps; a camera: as it
        gives them) into a one-frame mailbox; a frame not taken in time is dropped."""
        t0_source: float | None = None
        t0_wall = 0.0
        try:
            for index, t, frame in self.source:
                if self._stop.is_set():
                    break
                if self.realtime and not self.source.is_live:
                    now = time.monotonic()
                    if t0_source is None:
                        t0_source, t0_wall = t, now
                    due = t0_wall + (t - t0_source)
                    if now < due and self._stop.wait(due - now):
                        break
                with self._cond:
                    if self._mailbox is not None:
                        self.dropped += 1  # processing is behind: drop, never queue
                    entered = time.time()
                    vseq = (self._video.seq if self._video else 0) + 1
                    self._mailbox = (index, t, frame, entered, vseq)
                    self._video = VideoFrame(vseq, index, t, frame, entered_at=entered)
                    self._cond.notify_all()
                if not self.realtime:  # as fast as processing goes, nothing dropped
                    with self._cond:
                        while self._mailbox is not None and not self._stop.is_set():
                            self._cond.wait(0.5)
        except UserError as e:  # the source failed mid-way (camera unplugged, corrupt file)
            self.last_error = str(e)
            log.warning("live source stopped: %s", e)
        except Exception as e:  # noqa: BLE001 - keep the server up, say what happened
            self.last_error = f"{e.__class__.__name__}: {e}"
            log.exception("reading the live source failed")
        finally:
            self.source.close()
            with self._cond:
                self._source_done = True
                self._cond.notify_all()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                with self._cond:
                    while self._mailbox is None and not self._source_done and not self._stop.is_set():
                        self._cond.wait(0.5)
                    item, self._mailbox = self._mailbox, None
                    self._cond.notify_all()
                self._run_calls()
                if item is None:
                    break  # source ended (or stop)
                index, t, frame, entered, vseq = item
                self._process(frame, index, t, entered, vseq)
        finally:
            self.finished = True
            self._run_calls()
            with self._cond:
                self._cond.notify_all()

    def _run_calls(self) -> None:
        while True:
            try:
                fn, done, out = self._calls.popleft()
            except IndexError:
                return
            try:
                out["value"] = fn(self.pipeline)
            except BaseException as e:  # noqa: BLE001 - handed back to the caller
                out["error"] = e
            done.set()

    def call_in_pipeline(self, fn, timeout: float = 10.0):
        """Run ``fn(pipeline)`` on the processing thread between two frames (so the
        pipeline is never changed under its feet) and return its value."""
        done, out = threading.Event(), {}
        self._calls.append((fn, done, out))
        with self._cond:
            self._cond.notify_all()
        if self.finished or not self.running:
            self._run_calls()
        if not done.wait(timeout):
            raise TimeoutError("the live pipeline did not get to the request in time")
        if "error" in out:
            raise out["error"]
        return out.get("value")

    def _restart_on_loop(self, index: int) -> None:
        """A recorded game played on loop starts again from its first frame: so does the
        tracking (fighters back where they began, a destroyed unit back on the table).
        The page's log and fighter states are the web app's and stay."""
        n = self.source.frame_count or len(getattr(self.source, "frame_files", None) or ())
        if not getattr(self.source, "loop", False) or self.source.is_live or not n:
            return
        lap = index // n
        if lap != getattr(self, "_lap", 0):
            self._lap = lap
            old, new = self.pipeline, self.pipeline.fresh()
            old.close()
            with self._lock:
                self._last_seen = {}  # the new lap's tracks are new fighters
            if tuple(old.detector.terrain) != tuple(new.detector.terrain):
                new.set_terrain(old.detector.terrain)  # terrain a judge has typed
            self.pipeline = new

    def _process(self, frame: np.ndarray, index: int, t: float, entered_at: float = 0.0,
                 video_seq: int = 0) -> None:
        started = time.time()
        self._restart_on_loop(index)
        try:
            result = self.pipeline.process(frame, index, t)
        except UserError as e:
            self.errors += 1
            self.last_error = str(e)
            return
        except Exception as e:  # noqa: BLE001 - one bad frame must not stop the live view
            self.errors += 1
            self.last_error = f"frame {index}: {e.__class__.__name__}: {e}"
            log.exception("pipeline failed on frame %d", index)
            return
        w = frame.shape[1]
        scale = min(1.0, self.stream_width / w) if self.stream_width > 0 else 1.0
        small = _for_stream(frame, scale)
        now = time.monotonic()
        with self._cond:
            for f in result.state.fighters:
                self._last_seen[f.id] = f
            seq = (self._latest.seq if self._latest else 0) + 1
            self._latest = latest = Latest(seq, result, small, scale, now, entered_at=entered_at,
                                           ready_at=time.time(), started_at=started, video_seq=video_seq)
            self._done_times.append(now)
            self.processed += 1
            self._cond.notify_all()
            video, streamed = self._video, list(self._streams)[:4]
        # The new state's first stream part (newest frame, this overlay, JPEG) for each
        # layer set being watched, made before the next frame is started: the viewers'
        # threads would do the same work, cached the same, but fighting the pipeline
        # for the interpreter lock (it makes whichever is first wait for the other).
        if video is not None and video.seq >= latest.video_seq:
            for layers in streamed:
                try:
                    self.video_jpeg(video, latest, layers)
                except Exception:  # noqa: BLE001 - a viewer's request will say what is wrong
                    log.exception("drawing the overlay of frame %d failed", index)
                    break

    # -- what the request threads read -----------------------------------------------
    def latest(self) -> Latest | None:
        with self._lock:
            return self._latest

    def wait_next(self, after_seq: int, timeout: float = 1.0) -> Latest | None:
        """The first frame newer than ``after_seq`` (None on timeout or when stopped)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._stop.is_set():
                if self._latest is not None and self._latest.seq > after_seq:
                    return self._latest
                left = deadline - time.monotonic()
                if left <= 0 or (self.finished and self._latest is not None):
                    return None
                self._cond.wait(left)
        return None

    def stream_opened(self, layers: Iterable[str]) -> None:
        """An MJPEG viewer of ``layers`` is watching (its new states' parts are made at once)."""
        key = frozenset(layers)
        with self._lock:
            self._streams[key] = self._streams.get(key, 0) + 1

    def stream_closed(self, layers: Iterable[str]) -> None:
        key = frozenset(layers)
        with self._lock:
            n = self._streams.get(key, 0) - 1
            if n > 0:
                self._streams[key] = n
            else:
                self._streams.pop(key, None)

    def wait_view(self, after: tuple[int, int] | None = None,
                  timeout: float = 1.0) -> tuple[VideoFrame, Latest] | None:
        """The newest source frame with the newest processed state, as soon as either is
        newer than ``after`` (the ``(video.seq, latest.seq)`` last shown; None: anything
        once a frame has been processed). A new state is shown at once on the newest
        frame, not on the next one to come; whatever happened meanwhile, only the newest
        pair is returned (None on timeout or when stopped)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._stop.is_set():
                v, latest = self._video, self._latest
                if v is not None and latest is not None and (after is None or (v.seq, latest.seq) != tuple(after)):
                    if v.seq < latest.video_seq:  # (never show a frame older than the state)
                        v = VideoFrame(latest.video_seq, latest.result.index, latest.result.time_s,
                                       latest.result.frame, entered_at=latest.entered_at)
                    return v, latest
                left = deadline - time.monotonic()
                if left <= 0 or (self.finished and self._latest is not None):
                    return None
                self._cond.wait(left)
        return None

    def video_jpeg(self, video: VideoFrame, latest: Latest, layers: Iterable[str] = DEFAULT_LAYERS) -> bytes:
        """``video`` resized for streaming with the overlay of ``latest``'s state, as
        JPEG: encoded once per frame, state and layer set however many viewers ask at
        once (the first does the work, the others wait for it)."""
        control = self.control
        key = (frozenset(layers), tuple(sorted(control.items(), key=lambda kv: kv[0])), self._version(), latest.seq)
        got = video.cache.get(key)
        if got is not None:
            return got
        with video.lock:
            got = video.cache.get(key)
            if got is None:
                img = self._overlaid(video, latest, key)
                ok, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, self.jpeg_quality])
                got = buf.tobytes() if ok else b""
                if len(video.cache) > 8:
                    video.cache.clear()
                video.cache[key] = got
        return got

    def _small(self, video: VideoFrame, latest: Latest) -> np.ndarray:
        """``video``'s picture at the stream's size (``latest.small`` for its own frame)."""
        if video.seq == latest.video_seq:
            return latest.small
        return _for_stream(video.frame, latest.scale)

    def _overlaid(self, video: VideoFrame, latest: Latest, key: tuple) -> np.ndarray:
        """``video``'s picture with ``latest``'s overlay. The overlay is drawn once per
        state and layer set, on the first frame asked for (a new state: the newest frame,
        drawn straight on it, nothing else on the way); any later frame gets the pixels
        the overlay changed pasted on it (annotating costs ~4x pasting)."""
        okey = ("overlay",) + key
        with latest.lock:
            got = latest.cache.get(okey)
            if got is None:
                base = self._small(video, latest)
                img = self.annotator.annotate(base, self.view_state(latest), dict(key[1]), key[0],
                                              scale=latest.scale)
                for k in [k for k in latest.cache if isinstance(k, tuple) and k and k[0] == "overlay"][:-3]:
                    latest.cache.pop(k, None)  # a few layer sets at most
                latest.cache[okey] = {"img": img, "base": base, "video_seq": video.seq, "mask": None}
                return img
            if got["video_seq"] == video.seq:
                return got["img"]
            if got["mask"] is None:  # the pixels the overlay changed, once per state and layer set
                b, g, r = cv2.split(cv2.absdiff(got["img"], got["base"]))
                got["mask"] = cv2.bitwise_or(cv2.bitwise_or(b, g), r)
            img, mask = got["img"], got["mask"]
        small = self._small(video, latest)
        if small.shape != img.shape:
            return img  # (a source changing size mid-way: the state's own picture)
        out = small.copy()
        cv2.copyTo(img, mask, out)
        return out

    def wait_first(self, timeout: float = 30.0) -> Latest | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.wait_next(0, timeout=min(0.5, max(0.0, deadline - time.monotonic())))
            if got is not None:
                return got
            if self.finished:
                return self.latest()
        return self.latest()

    def wait_until(self, predicate, timeout: float = 30.0) -> Latest | None:
        """The first processed frame (the latest, or one still to come) for which
        ``predicate(latest)`` is true; None on timeout or if the player stops."""
        deadline = time.monotonic() + timeout
        latest = self.latest()
        while True:
            if latest is not None and predicate(latest):
                return latest
            left = deadline - time.monotonic()
            if left <= 0 or self.finished:
                return None
            latest = self.wait_next(latest.seq if latest else 0, timeout=min(left, 2.0)) or self.latest()

    @property
    def processing_fps(self) -> float:
        with self._lock:
            ts = list(self._done_times)
        if len(ts) < 2 or time.monotonic() - ts[-1] > 3.0:
            return 0.0
        return (len(ts) - 1) / max(ts[-1] - ts[0], 1e-6)

    def set_control(self, control: dict[str, int | None]) -> None:
        with self._lock:
            self._control = dict(control)

    @property
    def control(self) -> dict[str, int | None]:
        with self._lock:
            return dict(self._control)

    def set_adjustments(self, adjust) -> None:
        """Roster assignments and judge corrections to apply to every state shown
        (a newer ``version`` only: a slower request never puts back older ones)."""
        with self._lock:
            if self._adjust is None or adjust.version >= self._adjust.version:
                self._adjust = adjust

    @property
    def adjustments(self):
        with self._lock:
            return self._adjust

    def view_state(self, latest: Latest):
        """The world state of ``latest`` as the judges have it: the tracker's, with the
        roster names and corrections applied (what the page, overlay and rulings use)."""
        adjust = self.adjustments
        if adjust is None or adjust.empty:
            return latest.result.state
        key = ("view", adjust.version)
        got = latest.cache.get(key)
        if got is None:
            got = latest.cache[key] = adjust.apply(latest.result.state)
        return got

    def last_seen(self, fighter_id: str):
        """The fighter ``fighter_id`` (as the judges name it) where the tracker last had it
        on the table this lap, or None."""
        with self._lock:
            latest, seen = self._latest, tuple(self._last_seen.values())
        if latest is None or not seen:
            return None
        world = latest.result.state.with_fighters(seen)
        adjust = self.adjustments
        if adjust is not None and not adjust.empty:
            world = adjust.apply(world)
        return next((f for f in world.fighters if f.id == fighter_id), None)

    def _version(self) -> int:
        adjust = self.adjustments
        return 0 if adjust is None or adjust.empty else adjust.version

    def jpeg(self, latest: Latest, layers: Iterable[str] = DEFAULT_LAYERS,
             lines: tuple = ()) -> bytes:
        """The streamed frame of ``latest`` with ``layers`` drawn, as JPEG (cached per
        frame and layer set, so many viewers cost one encode)."""
        control = self.control
        key = (frozenset(layers), tuple(sorted(control.items(), key=lambda kv: kv[0])), lines, self._version())
        got = latest.cache.get(key)
        if got is not None:
            return got
        with latest.lock:  # one encode, however many viewers ask at the same moment
            got = latest.cache.get(key)
            if got is None:
                img = self.annotator.annotate(latest.small, self.view_state(latest), control, key[0],
                                              scale=latest.scale, lines=lines)
                ok, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, self.jpeg_quality])
                got = buf.tobytes() if ok else b""
                if len(latest.cache) > 8:
                    for k in [k for k in latest.cache if isinstance(k, tuple) and len(k) == 4 and isinstance(k[0], frozenset)]:
                        latest.cache.pop(k, None)
                latest.cache[key] = got
        return got

    def evidence_jpeg(self, latest: Latest, control: dict[str, int | None], quality: int = 88,
                      state=None) -> bytes:
        """Full-resolution frame with every layer drawn: the picture kept with a ruling."""
        img = self.annotator.annotate(latest.result.frame, state if state is not None else self.view_state(latest),
                                      control)
        ok, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, quality])
        return buf.tobytes() if ok else b""

    def fighter_pixels(self, latest: Latest) -> dict[str, list[float]]:
        key = ("pixels", self._version())
        got = latest.cache.get(key)
        if got is None:
            got = latest.cache[key] = self.annotator.fighter_pixels(self.view_state(latest), latest.scale)
        return got

    def token_pixels(self, latest: Latest) -> dict[str, list[float]]:
        got = latest.cache.get("token_pixels")
        if got is None:
            got = {}
            for tok in latest.result.state.tokens:
                uv = self.annotator.project(np.array([[tok.x, tok.y, tok.z]]), latest.scale)[0]
                if np.all(np.isfinite(uv)):
                    got[tok.id] = [round(float(uv[0]), 1), round(float(uv[1]), 1)]
            latest.cache["token_pixels"] = got
        return got


