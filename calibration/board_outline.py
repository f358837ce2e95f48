"""A ChArUco board found by its outline and its picture, when its markers are too small to read.

In: a grey picture and the board's geometry (squares, square size, marker size, dictionary,
the white margin round the squares). Out: the image positions of all the board's
chessboard corners, or None.

A 7x5 board held a few feet under a 720p camera that sees a 6 ft table is about 100 px
wide: its markers are 1-2 px a cell, under what the marker detector reads even enlarged,
yet the board itself, a white sheet with a black checker, is plain to see. So:

1. bright four-sided shapes of about the board's proportions are its candidates;
2. the board's own picture (``CharucoBoard.generateImage``, blurred to the camera's scale)
   is fitted to each candidate by ECC (``cv2.findTransformECC``, a homography), from each
   of the outline's four starting rotations;
3. the fit whose picture correlates best, if it correlates well (``MIN_CORRELATION``), gives
   the corners: the fitted homography applied to the board's corner positions.

Every pixel of the board takes part in the fit, so the corners are placed to a tenth of a
pixel or so even at 10 px a square (lens distortion across so small a board is a few
tenths of a pixel at the picture's edge). A fit that matches the checker but not the
markers (the board turned or seen from behind) labels the corners as the same board
turned or flipped in its plane: a rigid motion of a flat target, so calibration takes
it as it is.
"""

from __future__ import annotations

import cv2
import numpy as np

from .markers import fit_picture

__all__ = ["find_board_by_outline", "MIN_CORRELATION"]

# ECC correlation (-1..1) of the board's picture with the view above which a fit is the
# board; the board fits at 0.93-0.99 on rendered and photographed views, a wrong turn of
# it at about 0.7, a white tile or token well under.
MIN_CORRELATION = 0.85
MIN_SQUARE_PX = 4.0     # under this the checker is not resolved at all
THRESHOLDS = range(90, 240, 15)  # grey levels at which bright shapes are outlined


def _bright_quads(gray: np.ndarray, min_area: float) -> list[np.ndarray]:
    """Four-cornered outlines of bright blobs (4,2) at several grey levels, near-duplicates dropped."""
    g = cv2.GaussianBlur(gray, (3, 3), 0)
    out: list[np.ndarray] = []
    seen: list[tuple[float, float, float]] = []
    for thr in THRESHOLDS:
        bw = cv2.morphologyEx((g >= thr).astype(np.uint8), cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
        contours, _ = cv2.findContours(bw, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        for c in contours:
            area = cv2.contourArea(c)
            if area < min_area or area > 0.3 * gray.size:
                continue
            hull = cv2.convexHull(c)
            if area < 0.85 * cv2.contourArea(hull):
                continue
            p = cv2.approxPolyDP(hull, 0.04 * cv2.arcLength(hull, True), True)
            if len(p) != 4:
                continue
            q = p.reshape(4, 2).astype(np.float32)
            cx, cy = q.mean(axis=0)
            if any(abs(cx - x) < 3 and abs(cy - y) < 3 and abs(area / a - 1) < 0.15 for x, y, a in seen):
                continue
            seen.append((float(cx), float(cy), float(area)))
            out.append(q)
    return out


class OutlineFitter:
    """Fits one ChArUco board's picture to bright outlines in a view."""

    def __init__(self, board: cv2.aruco.CharucoBoard, squares: tuple[int, int], square: float, margin: float):
        self.board, self.squares, self.square, self.margin = board, squares, float(square), float(margin)
        # corner positions measured from the board's outer edge (margin included), inches
        self.corners = np.asarray(board.getChessboardCorners(), np.float32)[:, :2] + self.margin
        nx, ny = squares
        w, h = nx * self.square + 2 * self.margin, ny * self.square + 2 * self.margin
        self.outline = np.float32([[0, 0], [w, 0], [w, h], [0, h]])
        self.aspect = max(w, h) / min(w, h)
        self._pictures: dict[tuple[int, int], np.ndarray] = {}

    def _picture(self, pp: int, blur_px: float) -> np.ndarray:
        """The board drawn at pp pixels a square, blurred by blur_px (float32)."""
        key = (pp, int(round(blur_px * 10)))
        if key not in self._pictures:
            nx, ny = self.squares
            m = int(round(self.margin / self.square * pp))
            img = self.board.generateImage((nx * pp + 2 * m, ny * pp + 2 * m), marginSize=m).astype(np.float32)
            self._pictures[key] = cv2.GaussianBlur(img, (0, 0), blur_px) if blur_px > 0.3 else img
        return self._pictures[key]

    def _shape_ok(self, q: np.ndarray) -> bool:
        sides = np.linalg.norm(np.roll(q, -1, axis=0) - q, axis=1)
        long_, short = (sides[0] + sides[2]) / 2, (sides[1] + sides[3]) / 2
        r = max(long_, short) / max(min(long_, short), 1e-6)
        return self.aspect / 1.6 <= r <= self.aspect * 1.6

    def fit(self, grayf: np.ndarray, quad: np.ndarray) -> tuple[float, np.ndarray] | None:
        """(correlation, corners (N,2)) of the best of the outline's four starting turns;
        None for an outline not of the board's proportions."""
        if not self._shape_ok(quad):
            return None
        best = None
        nx = self.squares[0]
        for k in range(4):
            H0 = cv2.getPerspectiveTransform(self.outline, np.roll(quad, k, axis=0))
            c0 = cv2.perspectiveTransform(self.corners.reshape(-1, 1, 2), H0).reshape(-1, 2)
            s = float(np.median(np.linalg.norm(np.diff(c0.reshape(-1, nx - 1, 2), axis=1), axis=2)))
            if not np.isfinite(s) or s < MIN_SQUARE_PX:
                continue
            # the marker drawer needs 7 px a marker; the picture is blurred down to the view's scale
            pp = int(np.clip(round(s), 14, 40))
            pic = self._picture(pp, 0.7 * pp / s)
            A = np.array([[self.square / pp, 0, 0.5 * self.square / pp],
                          [0, self.square / pp, 0.5 * self.square / pp], [0, 0, 1]])  # picture px -> board in
            got = fit_picture(pic, grayf, H0 @ A)
            if got is None:
                continue
            cc, warp = got
            if best is None or cc > best[0]:
                # the corners where this picture has them: its margin is rounded to whole pixels
                m_in = round(self.margin / self.square * pp) * self.square / pp
                at = (self.corners - self.margin + m_in).reshape(-1, 1, 2).astype(np.float64)
                H = warp @ np.linalg.inv(A)
                corners = cv2.perspectiveTransform(at, H).reshape(-1, 2)
                best = (float(cc), corners.astype(np.float32))
        return best


def find_board_by_outline(gray: np.ndarray, fitter: OutlineFitter) -> tuple[float, np.ndarray] | None:
    """(correlation, corners (N,2) in ``board.getChessboardCorners()`` order) of the best
    board fit in the view, or None when nothing fits at MIN_CORRELATION.

    >>> import cv2, numpy as np
    >>> b = cv2.aruco.CharucoBoard((7, 5), 1.25, 0.9, cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_5X5_100))
    >>> view = np.full((240, 320), 90, np.uint8)
    >>> view[60:60 + 116, 80:80 + 156] = b.generateImage((156, 116), marginSize=8)
    >>> cc, corners = find_board_by_outline(view, OutlineFitter(b, (7, 5), 1.25, 0.5))
    >>> bool(cc > 0.9), corners.shape
    (True, (24, 2))
    """
    grayf = gray.astype(np.float32)
    best = None
    min_area = (MIN_SQUARE_PX * 4) ** 2
    for q in _bright_quads(gray, min_area):
        r = fitter.fit(grayf, q)
        if r is not None and r[0] >= MIN_CORRELATION and (best is None or r[0] > best[0]):
            best = r
    return best
