"""cv2.remap for long lists of sample points.

OpenCV's remap takes maps of at most 32767 rows (SHRT_MAX). Profiles of many fits at
once (every candidate's rays, stacked as rows) pass that on a big table at 4K (an Epic
table's forty stands, 96 rays each, several sizes): the points are sampled in blocks.
Each point is sampled alone, so the result is the same as one remap.

In: an image and the points' maps (any number of rows). Out: the image sampled there.

>>> import numpy as np
>>> img = np.arange(12, dtype=np.float32).reshape(3, 4)
>>> X = np.full((40000, 1), 1.0, np.float32); Y = np.full((40000, 1), 2.0, np.float32)
>>> out = remap_rows(img, X, Y)
>>> out.shape, float(out[-1, 0])
((40000, 1), 9.0)
"""

from __future__ import annotations

import cv2
import numpy as np

MAX_ROWS = 32000


def remap_rows(src: np.ndarray, X: np.ndarray, Y: np.ndarray, interpolation: int = cv2.INTER_LINEAR,
               border: int = cv2.BORDER_CONSTANT, value: float = 0) -> np.ndarray:
    """cv2.remap(src, X, Y, ...) for maps of any number of rows."""
    if X.shape[0] <= MAX_ROWS:
        return cv2.remap(src, X, Y, interpolation, borderMode=border, borderValue=value)
    return np.concatenate([cv2.remap(src, X[a:a + MAX_ROWS], Y[a:a + MAX_ROWS], interpolation, borderMode=border,
                                     borderValue=value) for a in range(0, X.shape[0], MAX_ROWS)])
