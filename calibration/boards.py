"""Calibration targets: the spec's ChArUco board, a chessboard, an asymmetric circles grid.

Each board's ``detect(gray)`` returns a BoardView (object points in board units, image
points in pixels) or raises BoardNotFound with the reason (no board / too few corners).
``parse_board("charuco" | "chessboard:9x6:25" | "circles:4x11:20")`` makes one from the
command-line form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import cv2
import numpy as np

from tracker.errors import UserError

from .board_outline import OutlineFitter, find_board_by_outline
from .markers import get_dictionary, to_gray

__all__ = ["BoardView", "BoardNotFound", "CharucoBoard", "ChessBoard", "CirclesGrid", "parse_board", "board_from_config"]


class BoardNotFound(Exception):
    """Not a user error: a view without a (usable) board is skipped with this reason."""


class BoardSpecError(UserError):
    pass


@dataclass
class BoardView:
    obj: np.ndarray  # (N,3) float32
    img: np.ndarray  # (N,2) float32
    ids: np.ndarray | None = None
    by_outline: bool = False  # found by the board's outline and picture, its markers unread


class CharucoBoard:
    name = "charuco"

    def __init__(self, squares=(7, 5), square=1.25, marker=0.9, dictionary="DICT_5X5_100", min_corners=8,
                 margin=0.5):
        self.squares = (int(squares[0]), int(squares[1]))
        self.square, self.marker = float(square), float(marker)
        self.dictionary = dictionary
        self.board = cv2.aruco.CharucoBoard(self.squares, self.square, self.marker, get_dictionary(dictionary))
        params = cv2.aruco.CharucoParameters()
        dp = cv2.aruco.DetectorParameters()
        dp.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_NONE
        dp.minMarkerPerimeterRate = 0.01
        self.detector = cv2.aruco.CharucoDetector(self.board, params, dp)
        self.all_corners = np.asarray(self.board.getChessboardCorners(), np.float32).reshape(-1, 3)
        self.min_corners = min_corners
        self.outline = OutlineFitter(self.board, self.squares, self.square, margin)

    @property
    def n_corners(self) -> int:
        return len(self.all_corners)

    def describe(self) -> str:
        return f"ChArUco {self.squares[0]}x{self.squares[1]} squares {self.square:g}, markers {self.marker:g}, {self.dictionary}"

    def detect(self, gray) -> BoardView:
        gray = to_gray(gray)
        cc, cids, mc, mids = self._detect_scaled(gray)
        if cids is None or len(cids) < self.min_corners:
            # markers too small to read: the board is found by its outline and its picture
            fit = find_board_by_outline(gray, self.outline)
            if fit is not None:
                return BoardView(self.all_corners.copy(), fit[1], np.arange(self.n_corners), by_outline=True)
        if cids is None or len(cids) == 0:
            if mids is not None and len(mids) > 0:
                raise BoardNotFound(f"{len(mids)} board markers but no chessboard corners (wrong board size or dictionary?)")
            raise BoardNotFound("no board found")
        cids = np.asarray(cids).reshape(-1).astype(int)
        img = np.asarray(cc, np.float32).reshape(-1, 2)
        if len(cids) < self.min_corners:
            raise BoardNotFound(f"too few corners ({len(cids)} < {self.min_corners})")
        img = cv2.cornerSubPix(gray, img.reshape(-1, 1, 2).copy(), (4, 4), (-1, -1),
                               (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_COUNT, 40, 0.001)).reshape(-1, 2)
        return BoardView(self.all_corners[cids].copy(), img, cids)


    def _detect_scaled(self, gray):
        """detectBoard at the picture's own size, then, while too few corners are found,
        on the picture enlarged 2x and 3x (coordinates scaled back): a board a few feet
        below a 720p camera has markers of 3 px a cell, under what the marker detector
        reads; enlarged, it reads them (cornerSubPix then refines at the native size)."""
        best = self.detector.detectBoard(gray)
        for scale in UPSCALES:
            n = 0 if best[1] is None else len(best[1])
            if n >= self.min_corners:
                break
            big = cv2.resize(gray, None, fx=scale, fy=scale, interpolation=cv2.INTER_CUBIC)
            cc, cids, mc, mids = self.detector.detectBoard(big)
            if cids is not None and len(cids) > n:
                # a pixel centre at c in the enlarged picture is (c + 0.5) / scale - 0.5 here
                best = (np.asarray(cc, np.float32) * (1 / scale) + (0.5 / scale - 0.5), cids,
                        mc, mids)
            elif best[3] is None and mids is not None:
                best = (best[0], best[1], mc, mids)
        return best


# Enlargements tried in turn when a ChArUco board's corners are too few at native size.
UPSCALES = (2, 3)


class ChessBoard:
    name = "chessboard"

    def __init__(self, cols: int, rows: int, square: float):
        self.size = (int(cols), int(rows))
        self.square = float(square)
        g = np.mgrid[0:cols, 0:rows].T.reshape(-1, 2)
        self.all_corners = np.c_[g * self.square, np.zeros(len(g))].astype(np.float32)

    @property
    def n_corners(self) -> int:
        return len(self.all_corners)

    def describe(self) -> str:
        return f"chessboard {self.size[0]}x{self.size[1]} inner corners, square {self.square:g}"

    def detect(self, gray) -> BoardView:
        gray = to_gray(gray)
        ok, c = cv2.findChessboardCornersSB(gray, self.size, flags=cv2.CALIB_CB_NORMALIZE_IMAGE | cv2.CALIB_CB_ACCURACY)
        if not ok:
            ok, c = cv2.findChessboardCorners(gray, self.size, cv2.CALIB_CB_ADAPTIVE_THRESH | cv2.CALIB_CB_NORMALIZE_IMAGE)
            if not ok:
                raise BoardNotFound(f"no {self.size[0]}x{self.size[1]} chessboard found")
            c = cv2.cornerSubPix(gray, c, (5, 5), (-1, -1), (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_COUNT, 40, 0.001))
        return BoardView(self.all_corners.copy(), np.asarray(c, np.float32).reshape(-1, 2))


class CirclesGrid:
    """Asymmetric circles grid, OpenCV layout: cols x rows circles, centre (2j + i%2, i) * spacing."""

    name = "circles"

    def __init__(self, cols: int, rows: int, spacing: float):
        self.size = (int(cols), int(rows))
        self.spacing = float(spacing)
        pts = [((2 * j + i % 2) * self.spacing, i * self.spacing, 0.0) for i in range(rows) for j in range(cols)]
        self.all_corners = np.array(pts, np.float32)

    @property
    def n_corners(self) -> int:
        return len(self.all_corners)

    def describe(self) -> str:
        return f"asymmetric circles grid {self.size[0]}x{self.size[1]}, spacing {self.spacing:g}"

    def detect(self, gray) -> BoardView:
        gray = to_gray(gray)
        flags = cv2.CALIB_CB_ASYMMETRIC_GRID
        ok, c = cv2.findCirclesGrid(gray, self.size, flags=flags)
        if not ok:
            ok, c = cv2.findCirclesGrid(gray, self.size, flags=flags | cv2.CALIB_CB_CLUSTERING)
        if not ok:
            raise BoardNotFound(f"no {self.size[0]}x{self.size[1]} asymmetric circles grid found")
        return BoardView(self.all_corners.copy(), np.asarray(c, np.float32).reshape(-1, 2))


def board_from_config(cb) -> CharucoBoard:
    """tracker.config.CalibrationBoard -> CharucoBoard."""
    if cb.type != "charuco":
        raise BoardSpecError(f"calibration_board.type '{cb.type}' is not supported in a game config; use charuco")
    return CharucoBoard(cb.squares, cb.square_in, cb.marker_in, cb.dictionary, margin=cb.margin_in)


_SPEC = re.compile(r"^(chessboard|circles):(\d+)x(\d+):([0-9]*\.?[0-9]+)$")


def parse_board(spec: str, config_board=None):
    """'charuco' (the spec's board, or the game's) | 'chessboard:COLSxROWS:SIZE' | 'circles:COLSxROWS:SPACING'."""
    s = spec.strip().lower()
    if s == "charuco":
        if config_board is not None:
            return board_from_config(config_board)
        return CharucoBoard()
    m = _SPEC.match(s)
    if not m:
        raise BoardSpecError(f"--board '{spec}' not understood; use charuco, chessboard:COLSxROWS:SIZE "
                             "(inner corners, e.g. chessboard:9x6:1.0) or circles:COLSxROWS:SPACING (e.g. circles:4x11:20)")
    kind, c, r, size = m.group(1), int(m.group(2)), int(m.group(3)), float(m.group(4))
    if c < 2 or r < 2 or size <= 0:
        raise BoardSpecError(f"--board '{spec}': need at least 2x2 points and a positive size")
    return ChessBoard(c, r, size) if kind == "chessboard" else CirclesGrid(c, r, size)
