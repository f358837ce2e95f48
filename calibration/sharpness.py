"""How sharp the picture is, read off the table markers' printed edges.

A marker's outer edge is a step from its black border to the white paper round it, as
sharp as printing makes it; in the picture it is spread by the lens's focus, the
sensor and the codec. Across the edge the brightness rises as the step blurred, and
for a Gaussian blur of sigma the rise from 20 % to 80 % of the step spans 1.683 sigma.
The tracker reads bases from their rims, a millimetre or two of paint: a picture softer
than the one it was measured on loses the rims it sees least of (docs/benchmarks.md,
"When the picture changes").

>>> import numpy as np
>>> round(RISE_20_80_PER_SIGMA, 3)
1.683
"""

from __future__ import annotations

import cv2
import numpy as np

__all__ = ["RISE_20_80_PER_SIGMA", "edge_blur_px"]

#: The 20-80 % rise of a Gaussian-blurred step, in units of the blur's sigma: 2 x 0.8416.
RISE_20_80_PER_SIGMA = 2.0 * 0.8416


def edge_blur_px(image: np.ndarray, corners: np.ndarray, min_step: float = 40.0) -> float | None:
    """The picture's blur (Gaussian sigma, pixels) measured across the outer edges of
    ArUco markers: ``corners`` (N, 4, 2), each marker's outer corners in the image. The
    median over profiles across the middle three-fifths of every edge; a profile counts
    only if its step from black border to paper is ``min_step`` levels or more and the
    brightness rises through it once (not a marker on a dark mat, a glare or a shadow
    across it). None when fewer than 8 profiles count.

    A profile is read 4 px either side of the edge, so the black border, a sixth of the
    marker, must be 4 px wide or more: a 2 in marker seen at 12 px an inch or more. Over
    sigma 1.5 px the ends of the profile are still on the blur's slope, and the reading
    falls short (a true 2.0 reads 1.8).
    """
    # Only the markers' surroundings are converted (profiles reach 4 px out, the crop 6),
    # and every profile is read in one remap and judged at once: a marker's reading at
    # 1080p 4.5 -> 0.7 ms, the same to 1e-7 px, for the live pipeline's readings.
    corners = np.asarray(corners, np.float32).reshape(-1, 4, 2)
    if not len(corners):
        return None
    h, w = image.shape[:2]
    x0, y0 = np.maximum(np.floor(corners.reshape(-1, 2).min(axis=0)) - 6, 0).astype(int)
    x1, y1 = np.minimum(np.ceil(corners.reshape(-1, 2).max(axis=0)) + 7, (w, h)).astype(int)
    crop = image[y0:y1, x0:x1]
    corners = corners - np.array([x0, y0], np.float32)
    gray = crop if crop.ndim == 2 else cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY)
    gray = gray.astype(np.float32)
    u = np.arange(-4.0, 4.0 + 1e-6, 0.25, dtype=np.float32)  # across the edge, outward
    lines = []
    for quad in corners:
        centre = quad.mean(axis=0)
        for k in range(4):
            p0, p1 = quad[k], quad[(k + 1) % 4]
            t = p1 - p0
            length = float(np.hypot(*t))
            if length < 12:
                continue
            t /= length
            n = np.array([-t[1], t[0]], np.float32)
            if n @ (0.5 * (p0 + p1) - centre) < 0:
                n = -n  # outward: from the black border to the paper
            s = np.linspace(0.2, 0.8, 9, dtype=np.float32)
            base = p0[None] + (s * length)[:, None] * t[None]
            lines.append(base[:, None, :] + u[None, :, None] * n[None, None, :])
    if not lines:
        return None
    pts = np.concatenate(lines)  # (profiles, samples, 2), all read in one remap
    prof = cv2.remap(gray, pts[..., 0], pts[..., 1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    lo, hi = prof[:, :3].mean(axis=1), prof[:, -3:].mean(axis=1)
    step = hi - lo
    counts = step >= min_step
    level = (prof - lo[:, None]) / np.where(counts, step, 1.0)[:, None]
    # Rising through 20 % and 80 % once each: the first sample past each, never back under.
    j20, once20 = _first_past(level, 0.2)
    j80, once80 = _first_past(level, 0.8)
    counts &= once20 & once80
    widths = _crossing(u, level, j80, 0.8) - _crossing(u, level, j20, 0.2)
    if counts.sum() < 8:
        return None
    return float(np.median(widths[counts])) / RISE_20_80_PER_SIGMA


def _first_past(level: np.ndarray, at: float) -> tuple[np.ndarray, np.ndarray]:
    """Per profile (row): the first sample at or over ``at``, and whether there is one
    and no later sample falls back under it."""
    over = level >= at
    j = over.argmax(axis=1)
    after = np.arange(level.shape[1])[None, :] >= j[:, None]
    return j, over.any(axis=1) & ~(after & ~over).any(axis=1)


def _crossing(u: np.ndarray, level: np.ndarray, j: np.ndarray, at: float) -> np.ndarray:
    """Per profile, where ``level`` rises through ``at`` between samples j - 1 and j
    (linear); u[0] where j is 0."""
    rows = np.arange(len(level))
    i = np.maximum(j - 1, 0)
    a, b = level[rows, i], level[rows, j]
    x = u[i] + (at - a) / np.maximum(b - a, 1e-6) * (u[j] - u[i])
    return np.where(j == 0, u[0], x)
