"""Hard cases of ``benchmarks/heldout.py``, classified on the SCORING side only, from a set's
truth.json (the renderer's camera and fighters), setup.json's rim colours and the images.
Nothing here is ever given to the tracker.

Each true fighter in each frame is projected with the truth camera (``K``, ``dist``,
``rvec``, ``tvec``: world -> camera, inches); its base top lies at z + 4 mm. Colours are
compared in CIE L*a*b* (OpenCV's float conversion: L 0-100), distance ΔE = CIE76
(Euclidean); pixels are read bilinearly; a region's colour is the per-channel median of
the pixels sampled in it. r is the base-top's radius (a round base's; for an oval or
rectangle the base's outline is scaled, or offset inward, instead).

**The rim band** is what ``../shared/eval/render.py`` paints: the side's colour where the
base top lies within ``ring_w`` of the outline, ``ring_w`` drawn per fighter from 2.0-3.5
mm (Epic stands 2.0-3.0 mm; ``draw_fighter`` / ``draw_shaped_fighter``). It is sampled
0.25-1.75 mm inside the top's outline (4 depths), inside every fighter's band and clear of
the outline's own half-pixel blur, in 72 sectors of 5° round the outline (8 samples along
each); a sector's colour is the median of its samples; sectors outside the image are not
seen.

**The rim colour as seen.** setup.json's nominal ``rim_bgr`` is how a player would paint
it; rendered rims read ΔE 25-60 from it (white balance, exposure, light gradient and
vignetting, blur, noise, JPEG), so the cases compare pixels with each side's rim colour as
seen in that set instead: per set and side, over that side's true fighters with
``visible_fraction == 1`` in every frame, each fighter's sector colours nearest the nominal
colour (the nearer half of its seen sectors, so miniature pixels hanging over the rim do
not pollute it), pooled; the per-channel median of the pool. A side with no wholly visible
fighter in the set falls back to the nominal colour. Where the band is only 1-2 px wide
(Epic stands at 720p) its seen colour is a blend with the side wall, mat and basing (e.g.
a purple side read at ΔE 50 from its paint, desaturated), and that side's fighters then
often fall in ``rim near mat`` / ``rim matches miniature``: as a colour test on the image
would find them too.

* ``crescent`` (fighters at least half visible only): the fighter's *rim-visible share*,
  the share of its seen sectors whose colour lies within ΔE 20 of its side's seen colour,
  is under 0.3.
* ``rim matches miniature``: the inner disc of the base top (< 0.5 r, the outline scaled by
  0.5) has a colour within ΔE 20 of the side's *seen* rim colour. (It was the nominal
  colour at ΔE 30, which compared a rendered miniature with a paint chip and missed e.g.
  a yellow miniature on a yellow rim; now both are as rendered, at the ΔE the crescent
  test calls a sector rim-coloured. Checked by eye on tuning-6 and the public sets: the
  fighters it flags carry miniatures of their rim's colour, yellow on yellow, purple on
  purple, red on red, white on white; one, on a purple rim seen dark, a dark miniature.)
* ``rim near mat``: the empty table (setup.json's ``empty_table``, rendered through the
  same camera and photometric model as the frames) in the annulus 1.05-1.3 r round the
  base (the outline scaled), at the height of the surface the base stands on, has a
  colour within ΔE 25 of the side's *seen* rim colour (the nominal one before: the mat as
  rendered against the rim as painted; now e.g. a white rim read light grey on a pale mat).

``classify_set`` returns each fighter-frame's cases; ``measure_set`` also the figures they
come from (shares, ΔEs, the seen colours) for diagnostics.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

MM_PER_IN = 25.4
BASE_TOP_IN = 4.0 / MM_PER_IN
BAND_MM = (0.25, 1.75)  # sampled depths inside the top's outline (painted band: 2.0-3.5 mm)
BAND_DEPTHS, ALONG = 4, 8  # samples across the band, and along it in each sector
SEEN_KEEP = 0.5  # of a wholly visible fighter's seen sectors, the share nearest the nominal colour
RIM_DE, CRESCENT_SHARE, MINIATURE_DE, MAT_DE = 20.0, 0.3, 20.0, 25.0
SECTORS = 72
CASES = ("rim matches miniature", "crescent", "rim near mat")


def lab(bgr: np.ndarray) -> np.ndarray:
    """(N, 3) BGR 0-255 -> (N, 3) L*a*b* (L 0-100)."""
    px = np.asarray(bgr, np.float32).reshape(-1, 1, 3) / 255.0
    return cv2.cvtColor(px, cv2.COLOR_BGR2Lab).reshape(-1, 3)


def base_geometry(f: dict) -> tuple[str, float, float, float]:
    """(shape, half width, half depth in inches, heading in radians) of a truth fighter."""
    shape = f.get("shape", "round")
    if shape == "round" or "size_mm" not in f:
        r = float(f["base_mm"]) / 2 / MM_PER_IN
        return "round", r, r, 0.0
    w, d = (float(v) / 2 / MM_PER_IN for v in f["size_mm"])
    return shape, w, d, np.radians(float(f.get("angle_deg", 0.0)))


def outline(shape: str, hx: float, hy: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n points round a base outline (own frame) and their inward unit normals."""
    t = np.linspace(0, 2 * np.pi, n, endpoint=False)
    if shape == "rect":  # the rectangle's boundary along rays from its centre
        c, s = np.cos(t), np.sin(t)
        k = np.minimum(hx / np.maximum(np.abs(c), 1e-9), hy / np.maximum(np.abs(s), 1e-9))
        pts = np.column_stack([k * c, k * s])
        on_x = hx / np.maximum(np.abs(c), 1e-9) <= hy / np.maximum(np.abs(s), 1e-9)
        nrm = np.where(on_x[:, None], np.column_stack([-np.sign(c), 0 * c]), np.column_stack([0 * s, -np.sign(s)]))
        return pts, nrm
    pts = np.column_stack([hx * np.cos(t), hy * np.sin(t)])
    nrm = -np.column_stack([np.cos(t) / hx, np.sin(t) / hy])
    return pts, nrm / np.linalg.norm(nrm, axis=1, keepdims=True)


def _to_world(local: np.ndarray, f: dict, heading: float, z: float) -> np.ndarray:
    c, s = np.cos(heading), np.sin(heading)
    xy = local @ np.array([[c, s], [-s, c]]) + [float(f["x"]), float(f["y"])]
    return np.column_stack([xy, np.full(len(xy), z)])


def _visible(f: dict) -> float:
    return float(f.get("visible_fraction", 0.0 if f.get("occluded") else 1.0))


@dataclass
class Look:
    """What one true fighter shows in one frame (Lab colours; None / NaN where unseen)."""

    sectors: np.ndarray  # (SECTORS, 3) median colour of each rim-band sector, NaN if out of the image
    inner: np.ndarray | None  # median colour of the inner disc (< 0.5 r)
    mat: np.ndarray | None  # median colour of the empty table round the base


@dataclass
class FighterCases:
    """A fighter-frame's hard cases and the figures they come from."""

    cases: list[str] = field(default_factory=list)
    rim_share: float | None = None  # share of seen sectors within RIM_DE of the side's seen colour
    inner_de: float | None = None  # inner disc's ΔE from the side's seen rim colour
    mat_de: float | None = None  # empty table's ΔE round the base from it


class CaseClassifier:
    """Projects truth fighters with the truth camera and samples a frame's pixels."""

    def __init__(self, truth: dict, setup: dict, table_bgr: np.ndarray | None):
        cam = truth["camera"]
        self.K = np.asarray(cam["K"], np.float64)
        self.dist = np.asarray(cam["dist"], np.float64)
        self.rvec = np.asarray(cam["rvec"], np.float64)
        self.tvec = np.asarray(cam["tvec"], np.float64)
        self.nominal = {int(s["index"]): lab(np.array([s["rim_bgr"]]))[0] for s in setup["sides"]}
        self.seen: dict[int, np.ndarray] = dict(self.nominal)  # replaced by learn_seen()
        self.seen_from: dict[int, int] = {k: 0 for k in self.nominal}  # fighter-frames pooled per side
        self.table = table_bgr

    def _sample(self, img: np.ndarray, world: np.ndarray) -> np.ndarray:
        """Lab colours (bilinear) of the pixels under world points; NaN outside the image."""
        uv, _ = cv2.projectPoints(world.reshape(-1, 1, 3), self.rvec, self.tvec, self.K, self.dist)
        uv = uv.reshape(-1, 2).astype(np.float32)
        h, w = img.shape[:2]
        ok = (uv[:, 0] >= 0) & (uv[:, 0] <= w - 1) & (uv[:, 1] >= 0) & (uv[:, 1] <= h - 1)
        out = np.full((len(world), 3), np.nan, np.float32)
        if ok.any():
            px = cv2.remap(img, uv[ok, 0].reshape(-1, 1), uv[ok, 1].reshape(-1, 1), cv2.INTER_LINEAR)
            out[ok] = lab(px.reshape(-1, 3))
        return out

    def _region(self, img: np.ndarray, f: dict, scales: np.ndarray, z: float) -> np.ndarray | None:
        """Median colour of the base outline scaled by ``scales``, or None if out of the image."""
        shape, hx, hy, heading = base_geometry(f)
        pts, _ = outline(shape, hx, hy, 180)
        local = (scales[:, None, None] * pts[None]).reshape(-1, 2)
        col = self._sample(img, _to_world(local, f, heading, z))
        ok = ~np.isnan(col[:, 0])
        return np.median(col[ok], axis=0) if ok.any() else None

    def band(self, img: np.ndarray, f: dict) -> np.ndarray:
        """(SECTORS, 3) median colour of each sector of the rim band (NaN: out of the image)."""
        shape, hx, hy, heading = base_geometry(f)
        pts, nrm = outline(shape, hx, hy, SECTORS * ALONG)
        depth = np.linspace(*BAND_MM, BAND_DEPTHS) / MM_PER_IN
        local = (pts[None] + depth[:, None, None] * nrm[None]).reshape(-1, 2)
        col = self._sample(img, _to_world(local, f, heading, float(f["z"]) + BASE_TOP_IN))
        col = col.reshape(BAND_DEPTHS, SECTORS, ALONG, 3).transpose(1, 0, 2, 3).reshape(SECTORS, -1, 3)
        out = np.full((SECTORS, 3), np.nan, np.float32)
        for k in range(SECTORS):
            c = col[k][~np.isnan(col[k][:, 0])]
            if len(c):
                out[k] = np.median(c, axis=0)
        return out

    def look(self, img: np.ndarray, f: dict) -> Look:
        top = float(f["z"]) + BASE_TOP_IN
        mat = None if self.table is None else self._region(self.table, f, np.linspace(1.05, 1.3, 6), float(f["z"]))
        return Look(self.band(img, f), self._region(img, f, np.linspace(0.0, 0.5, 8)[1:], top), mat)

    def learn_seen(self, fighters: list[tuple[dict, Look]]) -> None:
        """Each side's rim colour as seen: the median of the sector colours nearest the
        nominal colour (SEEN_KEEP of each) of that side's wholly visible fighters."""
        pool: dict[int, list[np.ndarray]] = {k: [] for k in self.nominal}
        count = {k: 0 for k in self.nominal}
        for f, lk in fighters:
            side = int(f["team"])
            if _visible(f) < 1.0 or side not in pool:
                continue
            sec = lk.sectors[~np.isnan(lk.sectors[:, 0])]
            if not len(sec):
                continue
            de = np.linalg.norm(sec - self.nominal[side], axis=1)
            keep = max(1, int(round(SEEN_KEEP * len(sec))))
            pool[side].append(sec[np.argsort(de)[:keep]])
            count[side] += 1
        for side, parts in pool.items():
            if parts:
                self.seen[side] = np.median(np.concatenate(parts), axis=0)
            self.seen_from[side] = count[side]

    def classify(self, f: dict, lk: Look) -> FighterCases:
        """The hard cases (names in CASES) one true fighter falls in, given its look."""
        out = FighterCases()
        seen = self.seen[int(f["team"])]
        if lk.inner is not None:
            out.inner_de = float(np.linalg.norm(lk.inner - seen))
            if out.inner_de <= MINIATURE_DE:
                out.cases.append(CASES[0])
        sec = lk.sectors[~np.isnan(lk.sectors[:, 0])]
        if len(sec):
            out.rim_share = float(np.mean(np.linalg.norm(sec - seen, axis=1) <= RIM_DE))
            if _visible(f) >= 0.5 and out.rim_share < CRESCENT_SHARE:
                out.cases.append(CASES[1])
        if lk.mat is not None:
            out.mat_de = float(np.linalg.norm(lk.mat - seen))
            if out.mat_de < MAT_DE:
                out.cases.append(CASES[2])
        return out


def _table_image(folder: Path, setup: dict) -> np.ndarray | None:
    for name in (setup.get("empty_table"), "table.jpg", "table.png"):
        if name and (folder / name).is_file():
            return cv2.imread(str(folder / name))
    return None


def measure_set(folder: Path, truth: dict) -> tuple[list[list[FighterCases]], CaseClassifier]:
    """Every true fighter's cases and figures, ``[frame][fighter]`` (truth order), and the
    classifier (its ``seen`` rim colours, Lab, per side)."""
    setup = json.loads((folder / "setup.json").read_text())
    cc = CaseClassifier(truth, setup, _table_image(folder, setup))
    files = setup.get("frames") or [f"frames/{i:06d}.jpg" for i in range(len(truth["frames"]))]
    looks: list[list[Look] | None] = []
    for fr in truth["frames"]:
        img = cv2.imread(str(folder / files[int(fr["frame"])]))
        looks.append(None if img is None else [cc.look(img, f) for f in fr["fighters"]])
    cc.learn_seen([(f, lk) for fr, ls in zip(truth["frames"], looks) if ls for f, lk in zip(fr["fighters"], ls)])
    out = [[cc.classify(f, lk) for f, lk in zip(fr["fighters"], ls)] if ls else [FighterCases() for _ in fr["fighters"]]
           for fr, ls in zip(truth["frames"], looks)]
    return out, cc


def classify_set(folder: Path, truth: dict) -> list[list[list[str]]]:
    """Hard cases of every true fighter of every frame: ``[frame][fighter] -> [case, ...]``
    (frames in truth order, fighters in truth order)."""
    return [[c.cases for c in fr] for fr in measure_set(folder, truth)[0]]


def eligible(truth: dict) -> dict[str, int]:
    """How many fighter-frames each case is asked of (crescent: those at least half visible)."""
    n = sum(len(fr["fighters"]) for fr in truth["frames"])
    half = sum(_visible(f) >= 0.5 for fr in truth["frames"] for f in fr["fighters"])
    return {CASES[0]: n, CASES[1]: half, CASES[2]: n}
