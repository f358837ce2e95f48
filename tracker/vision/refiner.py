"""The learned base refiner: where a round base's centre lies, and its size, read by a
small network from a crop of the table round a guess (``vision.base_crops``).

Hand-made rim fits place a base seen whole to a few hundredths of an inch; a base of
which only a crescent of rim shows, or none (its miniature over the rest), they place
by the patch it makes against the empty table, pulled toward its miniature: 0.27 in RMS
at 720p on the tuning tables. The network was trained on crops of the tuning split's
true bases (``scripts/train_base_refiner.py``), turned so the camera lies straight up.

In: the camera, the frame, the empty table, guesses (x, y, height of the base's top),
each guess's side's rim colour. Out: per guess the world (x, y) the network reads, the
probability of each size in ``SIZES_MM``, and the probability that a round base with a
rim of that colour is there at all (taught on crops of bare table, terrain, tokens,
other sides' bases and the detector's own mistakes): the side is read from the rim, not
from the miniature's paint. Runs on OpenCV's DNN module (no torch).
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from .base_crops import base_crop, crop_axes

MODEL_PATH = Path(__file__).resolve().parent / "models" / "base_refiner.onnx"
SIZES_MM = (25.0, 32.0, 40.0, 50.0, 60.0)


class ShippedNet:
    """A network shipped as an ONNX file (``MODEL_PATH`` of the subclass), run by OpenCV's
    DNN module."""

    MODEL_PATH: Path

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path or self.MODEL_PATH)
        self.net = cv2.dnn.readNetFromONNX(str(self.path))
        # One input at a time: two live tables in one server share the shipped model, and
        # OpenCV's Net aborts the process when two threads run it at once.
        self._lock = threading.Lock()

    def run(self, crops: np.ndarray, outputs: str | list[str]) -> Any:
        """The network's ``outputs`` for ``crops`` (N, H, W, C), one caller at a time."""
        blob = np.ascontiguousarray(np.asarray(crops).transpose(0, 3, 1, 2))
        with self._lock:
            self.net.setInput(blob)
            return self.net.forward(outputs)

    # A detector travels to the live pipeline's look worker pickled; an OpenCV network does
    # not pickle, so a refiner travels as its model's path and reads it again there.
    def __getstate__(self) -> dict:
        return {"path": str(self.path)}

    def __setstate__(self, state: dict) -> None:
        self.__init__(Path(state["path"]))

    @classmethod
    def load(cls):
        """The shipped model, or None where it is not there."""
        return cls() if cls.MODEL_PATH.exists() else None

    @classmethod
    def shipped(cls):
        """The shipped model read once for every detector in the process (``load``, cached
        per class); None where it is not there."""
        return _shipped(cls)


@functools.lru_cache(maxsize=None)
def _shipped(cls: type) -> Any:
    return cls.load()


class BaseRefiner(ShippedNet):
    """``read(camera, frame, empty, xyz_top, nadir, rim_bgr)`` -> (xy, size probabilities,
    presence); ``refine`` the first two."""

    MODEL_PATH = MODEL_PATH

    def refine(self, camera: Any, frame: np.ndarray, empty: np.ndarray, xyz_top: np.ndarray, nadir: np.ndarray,
               rim_bgr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per guess the world (x, y) read and each size's probability (``read``)."""
        xy, sizes, _ = self.read(camera, frame, empty, xyz_top, nadir, rim_bgr)
        return xy, sizes

    def read(self, camera: Any, frame: np.ndarray, empty: np.ndarray, xyz_top: np.ndarray, nadir: np.ndarray,
             rim_bgr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Per guess (x, y, height of a base's top) with a side's rim colour (BGR as this
        table's light shows it): the world (x, y) of the base's centre, each size's
        probability, and the probability that a round base of that rim colour lies within
        0.6 in of the guess at all (None for a model that does not say)."""
        xyz_top = np.asarray(xyz_top, float).reshape(-1, 3)
        if not len(xyz_top):
            return np.zeros((0, 2)), np.zeros((0, len(SIZES_MM))), np.zeros(0)
        rim_bgr = np.asarray(rim_bgr, np.float32).reshape(len(xyz_top), 3)
        crops = np.stack([base_crop(camera, frame, empty, p[:2], p[2], nadir, c) for p, c in zip(xyz_top, rim_bgr)])
        says_present = "present" in self.net.getUnconnectedOutLayersNames()
        outs = self.run(crops, ["offset", "size_logits", "present"] if says_present else ["offset", "size_logits"])
        off, logits = outs[0], outs[1]
        present = 1.0 / (1.0 + np.exp(-outs[2][:, 0])) if says_present else None
        xy = np.empty((len(xyz_top), 2))
        for i, p in enumerate(xyz_top):
            across, away = crop_axes(p[:2], nadir)
            xy[i] = p[:2] + off[i, 0] * across + off[i, 1] * away
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return xy, e / e.sum(axis=1, keepdims=True), present
