"""Boards too small for their markers to be read: found by their outline and picture, and a
camera calibrated from them with its focal length in the right valley and an honest sigma.

The views are rendered here with OpenCV: the spec's ChArUco board warped by a pinhole
camera's exact homography into a 1280x720 picture of a grey table, as a 720p camera
45 in above a 6 ft table sees a board held a few inches up and tilted 12-20 degrees:
about 100 px wide, 1-2 px a marker cell.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from calibration.board_outline import OutlineFitter, find_board_by_outline
from calibration.boards import BoardNotFound, CharucoBoard
from calibration.intrinsics import FocalProfile, calibrate_camera, focal_profile

SIZE = (1280, 720)
K_TRUE = np.array([[492.0, 0, 643.0], [0, 492.0, 365.0], [0, 0, 1]])
PP_SQ, MARGIN_PX = 40, 16  # the board's picture: 40 px a 1.25 in square, 0.5 in margin


def _board_picture(board: CharucoBoard) -> np.ndarray:
    nx, ny = board.squares
    return board.board.generateImage((nx * PP_SQ + 2 * MARGIN_PX, ny * PP_SQ + 2 * MARGIN_PX), marginSize=MARGIN_PX)


def _render(board: CharucoBoard, rvec, tvec, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(grey view, true image positions of the board's chessboard corners)."""
    rng = np.random.default_rng(seed)
    R = cv2.Rodrigues(np.asarray(rvec, float))[0]
    H_board = K_TRUE @ np.c_[R[:, :2], np.asarray(tvec, float)]  # board inches (z=0) -> pixels
    s = board.square / PP_SQ
    A = np.array([[s, 0, (0.5 - MARGIN_PX) * s], [0, s, (0.5 - MARGIN_PX) * s], [0, 0, 1]])  # picture px -> inches
    H = H_board @ A
    pic = _board_picture(board)
    view = np.full((SIZE[1], SIZE[0]), 95, np.float32) + rng.normal(0, 6, (SIZE[1], SIZE[0])).astype(np.float32)
    warped = cv2.warpPerspective(pic.astype(np.float32), H, SIZE, flags=cv2.INTER_AREA)
    mask = cv2.warpPerspective(np.ones_like(pic, np.float32), H, SIZE, flags=cv2.INTER_AREA)
    view = view * (1 - mask) + warped * mask
    view = cv2.GaussianBlur(view, (0, 0), 0.7) + rng.normal(0, 2, view.shape)
    corners = cv2.perspectiveTransform(board.all_corners[:, :2].reshape(-1, 1, 2).astype(np.float64), H_board)
    return np.clip(view, 0, 255).astype(np.uint8), corners.reshape(-1, 2)


def _poses(n: int, seed: int = 3):
    """Boards 36-40 in from the camera, anywhere in the picture, tilted 12-20 degrees."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        ang = rng.uniform(0, 2 * np.pi)
        axis = np.array([np.cos(ang), np.sin(ang), 0.0])
        tilt = np.deg2rad(rng.uniform(12, 20))
        R = cv2.Rodrigues(axis * tilt)[0] @ cv2.Rodrigues(np.array([0, 0, rng.uniform(-np.pi, np.pi)]))[0]
        z = rng.uniform(36, 40)
        u, v = rng.uniform(150, SIZE[0] - 150), rng.uniform(110, SIZE[1] - 110)
        centre = z * np.linalg.inv(K_TRUE) @ np.array([u, v, 1.0])
        t = centre - R @ np.array([4.375, 3.125, 0.0])  # the board's middle at that pixel
        out.append((cv2.Rodrigues(R)[0].reshape(3), t))
    return out


@pytest.fixture(scope="module")
def board():
    return CharucoBoard()


@pytest.fixture(scope="module")
def views(board):
    return [_render(board, r, t, seed=k) for k, (r, t) in enumerate(_poses(12))]


def test_markers_too_small_for_the_marker_detector(board, views):
    # the case this module exists for: the ArUco detector (even enlarged 2x and 3x) reads too few
    gray, _ = views[0]
    cc, cids, _, _ = board._detect_scaled(gray)
    assert cids is None or len(cids) < board.min_corners


def test_board_found_by_outline_to_a_fraction_of_a_pixel(board, views):
    errs = []
    for gray, truth in views:
        v = board.detect(gray)
        assert v.by_outline
        assert len(v.img) == board.n_corners
        e = np.linalg.norm(v.img - truth, axis=1)
        e_turned = np.linalg.norm(v.img[::-1] - truth, axis=1)  # the board turned half-way is the same grid
        errs.append(min(e, e_turned, key=np.mean))
    errs = np.concatenate(errs)
    assert np.median(errs) < 0.2 and errs.max() < 0.6, (np.median(errs), errs.max())


def test_a_white_card_or_a_bare_table_is_no_board(board):
    rng = np.random.default_rng(0)
    gray = np.clip(95 + rng.normal(0, 6, (SIZE[1], SIZE[0])), 0, 255).astype(np.uint8)
    with pytest.raises(BoardNotFound):
        board.detect(gray)
    card = gray.copy()
    cv2.fillConvexPoly(card, np.int32([[500, 300], [610, 290], [615, 370], [505, 380]]), 235)
    cv2.rectangle(card, (540, 320), (560, 340), 20, -1)  # a dark print on it
    assert find_board_by_outline(card, OutlineFitter(board.board, board.squares, board.square, 0.5)) is None


def test_focal_length_from_small_boards_lands_in_the_right_valley(board, views, tmp_path):
    paths = []
    for k, (gray, _) in enumerate(views):
        p = tmp_path / f"{k:02d}.png"
        cv2.imwrite(str(p), gray)
        paths.append(p)
    res = calibrate_camera(paths, board, progress=False, max_focal_sigma=0.5)
    fx, sigma = res.intrinsics.fx, float(res.intrinsics.std[0])
    assert abs(fx / K_TRUE[0, 0] - 1) < 0.03, fx
    assert abs(fx - K_TRUE[0, 0]) < 3 * sigma, (fx, sigma)  # the stated sigma covers the error


def test_focal_profile_finds_the_minimum_from_exact_corners(board):
    # exact projections of small tilted boards: OpenCV's own starting guess can end in a
    # wrong valley, the profile's minimum is within a grid step of the truth
    obj, img = [], []
    for r, t in _poses(12, seed=5):
        uv = cv2.projectPoints(board.all_corners.astype(np.float64), r, t, K_TRUE, np.zeros(5))[0]
        obj.append(board.all_corners.reshape(-1, 1, 3).astype(np.float32))
        img.append(uv.reshape(-1, 1, 2).astype(np.float32))
    prof = focal_profile(obj, img, SIZE, 0)
    assert isinstance(prof, FocalProfile)
    step = float(prof.focal[1] / prof.focal[0])
    assert 1 / step < prof.best_focal / K_TRUE[0, 0] < step
    assert prof.best_rms < 0.05


def test_table_markers_make_one_planar_view_of_known_geometry(tmp_path):
    # the empty-table photo's four markers as an extra calibration view: 16 corners at the
    # world positions the config gives, where the bundled clip's own camera projects them
    from pathlib import Path

    from tracker.calibrate import _table_marker_view, empty_table_photo, intrinsics_for_folder
    from tracker.config import GameConfig

    folder = Path(__file__).resolve().parents[1] / "sample_footage" / "warcry-demo"
    cfg = GameConfig.load(folder)
    [(name, obj, img)] = _table_marker_view(empty_table_photo(folder), cfg)
    assert obj.shape == (16, 3) and img.shape == (16, 2) and np.all(obj[:, 2] == 0)
    intr = intrinsics_for_folder(folder, cfg)
    ok, r, t = cv2.solvePnP(obj, img, intr.K, intr.dist)
    back = cv2.projectPoints(obj, r, t, intr.K, intr.dist)[0].reshape(-1, 2)
    assert np.abs(back - img).max() < 1.0
    assert _table_marker_view(empty_table_photo(tmp_path), cfg) == []  # no table.jpg: nothing to add


def test_doctests_of_the_outline_finder_and_the_focal_warning():
    import doctest

    import calibration.board_outline
    import tracker.calibrate

    for mod in (calibration.board_outline, tracker.calibrate):
        failed, tried = doctest.testmod(mod)
        assert tried > 0 and failed == 0, mod.__name__
