"""The naive baseline of shared/eval/README.md, honestly implemented.

What it does, and nothing more:

* **Calibration**: ONE homography, image -> world inches on z = 0, from the centres of
  the four table markers (``cv2.aruco`` DICT_4X4_100, ids 0-3, centres from
  ``setup.json`` / ``game.yaml``), found in the empty-table image (``table.jpg``; the
  first frame if that has no four markers). No intrinsics, no lens distortion, no
  heights: every fighter is reported at z = 0.
* **Bases**: ``cv2.HoughCircles`` (HOUGH_GRADIENT) on the median-blurred grey frame, for
  radii from the smallest to the largest base of the config, converted to pixels with
  the homography's scale (its local px/in, min..max over the play area, with a margin
  for blur and for bases standing on platforms nearer the camera). Circles whose
  world centre falls outside the play area are dropped.
* **Side**: the config side whose rim hue is nearest (circularly, OpenCV hue 0..180)
  to the median hue sampled in a ring at the circle's edge (0.8 r .. 1.0 r). With
  ``achromatic=True`` (off by default: not in the README's description) a side whose
  rim is unsaturated (white/grey/black) is chosen when the ring's median saturation is
  low, and only chromatic sides compete by hue otherwise.
* **Tokens**: none reported (a 1 in token is the size of a 25 mm base; telling them
  apart needs colour models, which is beyond "naive").

Output: one frame of the shared scorer's prediction format::

    {"frame": i, "fighters": [{"x", "y", "z", "team"}], "tokens": []}

Usage::

    nt = NaiveTracker.from_folder(Path(__file__).resolve().parents[1].parent / "shared" / "eval" / "sets" / "warcry-1")
    pred = nt.process(frame_bgr, index)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

MM_PER_IN = 25.4
TABLE_IDS = (0, 1, 2, 3)


def load_setup(folder: str | Path) -> dict:
    """``setup.json`` (eval sets) or ``game.yaml`` (the project's footage) as a dict."""
    folder = Path(folder)
    if (folder / "setup.json").is_file():
        return json.loads((folder / "setup.json").read_text())
    for name in ("game.yaml", "game.yml", "game.json"):
        if (folder / name).is_file():
            import yaml

            return yaml.safe_load((folder / name).read_text())
    raise FileNotFoundError(f"{folder}: no setup.json or game.yaml")


def _hue_of_bgr(bgr) -> tuple[float, float]:
    """OpenCV hue (0..180) and saturation (0..255) of one BGR colour."""
    px = np.uint8([[list(bgr)]])
    h, s, _ = cv2.cvtColor(px, cv2.COLOR_BGR2HSV)[0, 0]
    return float(h), float(s)


def _hue_dist(a, b):
    d = np.abs(np.asarray(a, float) - np.asarray(b, float)) % 180.0
    return np.minimum(d, 180.0 - d)


@dataclass
class NaiveParams:
    hough_dp: float = 1.0
    canny_high: float = 100.0  # HoughCircles param1
    accumulator: float = 22.0  # HoughCircles param2 (votes, at the radii of a 1080p table)
    blur: int = 5  # median blur kernel
    radius_slack: tuple[float, float] = (0.85, 1.15)
    ring: tuple[float, float] = (0.8, 1.0)  # hue ring, fractions of the circle's radius
    achromatic_sat: float = 60.0  # used only with achromatic=True


class NaiveTracker:
    def __init__(self, setup: dict, *, params: NaiveParams | None = None, achromatic: bool = False):
        self.setup = setup
        self.p = params or NaiveParams()
        self.achromatic = achromatic
        t = setup["table"]
        self.play_w, self.play_d = (float(v) for v in t["play_area_in"])
        self.marker_centres = {int(m["id"]): tuple(float(c) for c in m["centre_in"]) for m in t["markers"]}
        self.dictionary = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, t.get("dictionary", "DICT_4X4_100")))
        self.sides = []
        for s in setup["sides"]:
            h, sat = _hue_of_bgr(s["rim_bgr"])
            self.sides.append({"index": int(s["index"]), "colour": str(s["colour"]), "hue": h, "sat": sat})
        mm = [float(b) for s in setup["sides"] for b in s.get("bases_mm", [])] or [25.0, 60.0]
        self.base_radius_in = (min(mm) / MM_PER_IN / 2, max(mm) / MM_PER_IN / 2)
        self.H: np.ndarray | None = None  # image -> world (z = 0)
        self.r_px: tuple[int, int] | None = None

    @classmethod
    def from_folder(cls, folder: str | Path, **kw) -> "NaiveTracker":
        folder = Path(folder)
        nt = cls(load_setup(folder), **kw)
        table = folder / "table.jpg"
        if table.is_file():
            img = cv2.imread(str(table), cv2.IMREAD_COLOR)
            if img is not None:
                nt.calibrate(img)
        return nt

    # -- calibration -------------------------------------------------------------------
    def calibrate(self, image: np.ndarray) -> bool:
        """The homography from the four table-marker centres. False if a marker is missing."""
        gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY) if image.ndim == 3 else image
        det = cv2.aruco.ArucoDetector(self.dictionary, cv2.aruco.DetectorParameters())
        corners, ids, _ = det.detectMarkers(gray)
        if ids is None:
            return False
        found = {}
        for c, i in zip(corners, np.asarray(ids).reshape(-1)):
            if int(i) in TABLE_IDS and int(i) in self.marker_centres:
                found[int(i)] = np.asarray(c, float).reshape(4, 2).mean(0)
        if len(found) < 4:
            return False
        img = np.array([found[i] for i in TABLE_IDS], np.float64)
        world = np.array([self.marker_centres[i] for i in TABLE_IDS], np.float64)
        self.H = cv2.getPerspectiveTransform(img.astype(np.float32), world.astype(np.float32))
        self._scale_radii()
        return True

    def _px_per_in(self, xy: np.ndarray) -> np.ndarray:
        """Local scale of world->image at world points (mean of the two axes' stretch)."""
        Hi = np.linalg.inv(self.H)
        pts = np.concatenate([xy, xy + [1.0, 0.0], xy + [0.0, 1.0]]).reshape(-1, 1, 2)
        uv = cv2.perspectiveTransform(pts, Hi).reshape(3, -1, 2)
        return 0.5 * (np.linalg.norm(uv[1] - uv[0], axis=1) + np.linalg.norm(uv[2] - uv[0], axis=1))

    def _scale_radii(self) -> None:
        W, D = self.play_w, self.play_d
        xy = np.array([[0, 0], [W, 0], [W, D], [0, D], [W / 2, D / 2]], float)
        s = self._px_per_in(xy)
        lo = self.base_radius_in[0] * s.min() * self.p.radius_slack[0]
        hi = self.base_radius_in[1] * s.max() * self.p.radius_slack[1]
        self.r_px = (max(3, int(np.floor(lo))), int(np.ceil(hi)))

    def to_world(self, uv: np.ndarray) -> np.ndarray:
        return cv2.perspectiveTransform(np.asarray(uv, np.float64).reshape(-1, 1, 2), self.H).reshape(-1, 2)

    # -- per frame ---------------------------------------------------------------------
    def circles(self, frame: np.ndarray) -> np.ndarray:
        """(N, 3) image circles (u, v, r) in the play area."""
        gray = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        gray = cv2.medianBlur(gray, self.p.blur)
        rmin, rmax = self.r_px
        c = cv2.HoughCircles(gray, cv2.HOUGH_GRADIENT, dp=self.p.hough_dp, minDist=max(4.0, 1.6 * rmin),
                             param1=self.p.canny_high, param2=self.p.accumulator, minRadius=rmin, maxRadius=rmax)
        if c is None:
            return np.zeros((0, 3))
        c = c.reshape(-1, 3).astype(float)
        xy = self.to_world(c[:, :2])
        inside = (xy[:, 0] >= 0) & (xy[:, 0] <= self.play_w) & (xy[:, 1] >= 0) & (xy[:, 1] <= self.play_d)
        return c[inside]

    def side_of(self, hsv: np.ndarray, u: float, v: float, r: float) -> int:
        h, w = hsv.shape[:2]
        r0, r1 = self.p.ring[0] * r, self.p.ring[1] * r
        x0, x1 = max(0, int(u - r1 - 1)), min(w, int(u + r1 + 2))
        y0, y1 = max(0, int(v - r1 - 1)), min(h, int(v + r1 + 2))
        yy, xx = np.mgrid[y0:y1, x0:x1]
        d = np.hypot(xx - u, yy - v)
        m = (d >= r0) & (d <= r1)
        patch = hsv[y0:y1, x0:x1][m]
        if len(patch) == 0:
            return self.sides[0]["index"]
        hue = float(np.median(patch[:, 0]))
        if self.achromatic:
            sat = float(np.median(patch[:, 1]))
            grey = [s for s in self.sides if s["sat"] < self.p.achromatic_sat]
            colour = [s for s in self.sides if s["sat"] >= self.p.achromatic_sat]
            if grey and (sat < self.p.achromatic_sat or not colour):
                return grey[0]["index"]
            cands = colour
        else:
            cands = self.sides
        dist = _hue_dist(hue, [s["hue"] for s in cands])
        return cands[int(np.argmin(dist))]["index"]

    def process(self, frame: np.ndarray, index: int = 0) -> dict:
        if self.H is None and not self.calibrate(frame):
            return {"frame": int(index), "fighters": [], "tokens": []}
        circ = self.circles(frame)
        if len(circ) == 0:
            return {"frame": int(index), "fighters": [], "tokens": []}
        hsv = cv2.cvtColor(frame, cv2.COLOR_BGR2HSV)
        xy = self.to_world(circ[:, :2])
        fighters = [{"x": float(x), "y": float(y), "z": 0.0, "team": int(self.side_of(hsv, u, v, r))}
                    for (x, y), (u, v, r) in zip(xy, circ)]
        return {"frame": int(index), "fighters": fighters, "tokens": []}


def main() -> None:  # pragma: no cover - a convenience: write predictions for one folder
    import argparse

    from tracker.sources import open_source

    ap = argparse.ArgumentParser(description="naive baseline predictions for a footage/eval folder")
    ap.add_argument("folder")
    ap.add_argument("out")
    ap.add_argument("--achromatic", action="store_true")
    a = ap.parse_args()
    nt = NaiveTracker.from_folder(a.folder, achromatic=a.achromatic)
    with open_source(a.folder) as src:
        frames = [nt.process(f, i) for i, _, f in src]
    Path(a.out).write_text(json.dumps({"frames": frames}))


if __name__ == "__main__":  # pragma: no cover
    main()
