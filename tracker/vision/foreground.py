"""What is not the empty table: foreground and the table's own shadows.

In: Lab views (``colour.detector_lab``) of the frame and of the empty table, and where the
view can be seen. Out: per pixel, how surely it is not the empty table (``foreground``),
and whether it is the table dimmed by a shadow, its pattern still showing (``shadow``,
``keeps_pattern``): what ``vision.stands.pursue`` explains with base outlines.
"""

from __future__ import annotations

import cv2
import numpy as np

# A pixel is foreground from this Lab distance to the empty table (L weighed 0.35, as
# the detector's), surely so at FG_LEVEL + FG_SPAN: sensor noise and JPEG stay under
# the first, a base's rim or a miniature's paint pass the second.
FG_LEVEL, FG_SPAN = 4.0, 8.0
# Shadow: at least this much darker (detector Lab's L units) with colour within this.
SHADOW_L, SHADOW_CHROMA = 3.0, 6.0
# A shadow keeps the mat's pattern: local correlation of lightness with the empty table
# over this window at least this; a table with a lightness spread under PATTERN_SD there
# has too little pattern to tell by.
PATTERN_WINDOW_PX, PATTERN_NCC, PATTERN_SD = 5, 0.4, 1.0
# Detector Lab's lightness per unit of L* (colour.detector_lab: 8-bit L, 2.55 a unit, scaled by 0.35).
LAB_L_SCALE = 0.35 * 2.55


def foreground(lab: np.ndarray, empty_lab: np.ndarray, usable: np.ndarray) -> np.ndarray:
    """How surely each pixel is not the empty table, 0..1 (0 where not ``usable``)."""
    d = cv2.GaussianBlur(cv2.subtract(lab, empty_lab), (3, 3), 0)  # (the blur is linear: one for both)
    dist = cv2.sqrt(cv2.transform(cv2.multiply(d, d), np.ones((1, 3), np.float32)))
    fg = np.clip((dist - FG_LEVEL) * (1.0 / FG_SPAN), 0.0, 1.0)
    fg[~usable] = 0.0
    return fg


def shadow(lab: np.ndarray, empty_lab: np.ndarray, scaled: bool = False, pattern: bool = False) -> np.ndarray:
    """Where the picture is the empty table in shadow: darker than it (by SHADOW_L at
    least) with the colour a shadow leaves it (within SHADOW_CHROMA). A miniature's
    shadow on the mat is a patch of foreground a base's size; a base's rim, its wall and
    most paint differ in colour, not only in light. ``lab``: detector Lab
    (``colour.detector_lab``: L* scaled by 0.8925, a and b centred on 0).

    Strictly (the default), a shadow keeps the mat's a and b. ``scaled``: as light
    works, a shadow scales the light, and so a surface's X, Y and Z alike: L* + 16, a*
    and b* all shrink by the same factor (their cube root), a shadowed green mat a
    darker, greyer green (an arm's shadow on a brown mat left it 6-8 units less yellow,
    which the strict test calls paint). But a base darker than the mat and of its hue (a
    green rim on a green mat) is then a shadow too: the strict test where losing a
    base's patch costs a fighter, the scaled one where a shadow taken for a stand would
    be one that is not there.

    >>> empty = np.full((1, 3, 3), (60.0, -18.0, 25.0), np.float32)  # a green mat
    >>> seen = np.array([[(40.0, -18.5, 25.5), (40.0, -13.5, 18.8), (40.0, 10.0, 18.8)]], np.float32)
    >>> shadow(seen, empty).tolist(), shadow(seen, empty, scaled=True).tolist()  # (same ab; scaled ab; red paint)
    ([[True, False, False]], [[False, True, False]])
    """
    k: float | np.ndarray = 1.0
    if scaled:
        k = (lab[..., 0] * (1 / LAB_L_SCALE) + 16.0) / np.maximum(empty_lab[..., 0] * (1 / LAB_L_SCALE) + 16.0, 1.0)
    da = lab[..., 1] - k * empty_lab[..., 1]
    db = lab[..., 2] - k * empty_lab[..., 2]
    out = (lab[..., 0] - empty_lab[..., 0] <= -SHADOW_L) & (np.hypot(da, db) <= SHADOW_CHROMA)
    if pattern:
        out &= keeps_pattern(lab[..., 0], empty_lab[..., 0])
    return out


def keeps_pattern(lum: np.ndarray, empty_lum: np.ndarray) -> np.ndarray:
    """Where the picture still shows the empty table's own pattern (its mottling, print,
    grain), however much darker: a shadow dims the mat and leaves its pattern, a black
    or grey miniature replaces it. The local correlation (PATTERN_WINDOW_PX square) of
    the two lightnesses is at least PATTERN_NCC there, or the table has too little
    pattern there to tell by (under PATTERN_SD: then True, the colour alone decides).

    >>> rng = np.random.default_rng(1)
    >>> mat = 60 + 3 * rng.standard_normal((20, 40)).astype(np.float32)
    >>> seen = mat.copy(); seen[:, :20] *= 0.6      # a shadow on the left half
    >>> seen[:, 20:] = 10 + rng.standard_normal((20, 20))  # a black miniature on the right
    >>> kept = keeps_pattern(seen, mat)
    >>> bool(kept[5:15, 3:16].mean() > 0.9), bool(kept[5:15, 24:37].mean() < 0.2)
    (True, True)
    """
    a, b = lum.astype(np.float64), empty_lum.astype(np.float64)  # (sums of squares: float32 rounds cov off zero)
    k = (PATTERN_WINDOW_PX, PATTERN_WINDOW_PX)
    ma, mb = cv2.boxFilter(a, -1, k), cv2.boxFilter(b, -1, k)
    cov = cv2.boxFilter(a * b, -1, k) - ma * mb
    va = cv2.boxFilter(a * a, -1, k) - ma * ma
    vb = cv2.boxFilter(b * b, -1, k) - mb * mb
    return (cov >= PATTERN_NCC * np.sqrt(np.maximum(va * vb, 1e-6))) | (vb < PATTERN_SD * PATTERN_SD)
