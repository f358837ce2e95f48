"""How well set-up reads the picture's blur off the table markers' edges (issue #4;
calibration.sharpness, tracker.calibrate.picture_blur).

    python benchmarks/sharpness.py

Prints, for each shared evaluation set's empty-table photo (another renderer; its truth
file says what blur it applied, used here only to score), the blur read as it is and
with 0.6 and 1.2 px more Gaussian blur (with what adding them in quadrature predicts),
and whether set-up would warn; then markers drawn at known blurs (at 8x, averaged down:
what the picture holds is the blur and each pixel's own width, sigma 0.29).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.eval_sets import SETS  # noqa: E402
from calibration.markers import detect_markers  # noqa: E402
from calibration.sharpness import edge_blur_px  # noqa: E402
from tracker.calibrate import SOFT_PICTURE_PX, picture_blur  # noqa: E402
from tracker.config import GameConfig  # noqa: E402


def drawn_marker(sigma: float, seed: int = 0, k: int = 8) -> np.ndarray:
    """A printed ArUco marker on white paper, turned 17 deg, drawn at ``k`` x, blurred by
    ``sigma`` (final pixels), averaged down to 1x (each pixel integrates its area, as a
    sensor's does) and given sensor noise of 3 levels."""
    paper = np.full((160 * k, 200 * k), 230, np.uint8)
    marker = cv2.aruco.generateImageMarker(cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_4X4_100), 3, 48 * k)
    paper[50 * k:98 * k, 70 * k:118 * k] = np.where(marker > 127, 230, 25).astype(np.uint8)
    turn = cv2.getRotationMatrix2D((94 * k, 74 * k), 17, 1.0)
    paper = cv2.warpAffine(paper, turn, paper.shape[::-1], flags=cv2.INTER_LINEAR, borderValue=230)
    img = cv2.resize(cv2.GaussianBlur(paper, (0, 0), sigma * k), None, fx=1 / k, fy=1 / k,
                     interpolation=cv2.INTER_AREA).astype(np.float32)
    img += np.random.default_rng(seed).normal(0, 3, img.shape)
    return cv2.cvtColor(np.clip(img, 0, 255).astype(np.uint8), cv2.COLOR_GRAY2BGR)


def main() -> int:
    print(f"warning above sigma {SOFT_PICTURE_PX:.2f} px")
    print(f"{'set':10s}{'rendered':>9s}{'read px':>9s}{'in':>7s}  {'+0.6: read (predicted)':>24s}  "
          f"{'+1.2: read (predicted)':>24s}  warned (as given, +0.6, +1.2)")
    for folder in sorted(p for p in SETS.iterdir() if (p / "truth.json").is_file()):
        config = GameConfig.load(folder / "setup.json")
        img = cv2.imread(str(folder / "table.jpg"), cv2.IMREAD_COLOR)
        found = detect_markers(img, config.table.dictionary, downscale=1.0)
        rendered = json.loads((folder / "truth.json").read_text())["photometric"]["blur_sigma"]
        reads = [picture_blur(config, cv2.GaussianBlur(img, (0, 0), extra) if extra else img, found)
                 for extra in (0.0, 0.6, 1.2)]
        base = reads[0][1]
        cols = [f"{r[1]:.2f} ({np.hypot(base, extra):.2f})" for r, extra in zip(reads[1:], (0.6, 1.2))]
        warned = ", ".join("yes" if r[1] > SOFT_PICTURE_PX else "no" for r in reads)
        print(f"{folder.name:10s}{rendered:9.2f}{base:9.2f}{reads[0][0]:7.3f}  {cols[0]:>24s}  {cols[1]:>24s}  {warned}")
    print("\ndrawn marker: blur  held (blur and pixel width)  read")
    for sigma in (0.3, 0.5, 0.8, 1.0, 1.5, 2.0):
        img = drawn_marker(sigma)
        read = edge_blur_px(img, detect_markers(img, "DICT_4X4_100", downscale=1.0).corners)
        print(f"              {sigma:4.1f}  {np.hypot(sigma, 0.29):26.2f}  {read:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
