"""Straight edges of the table photo refine the lens (calibration.straight_edges)."""

from __future__ import annotations

import json

import cv2
import numpy as np

from calibration.camera import CameraModel, Intrinsics
from calibration.straight_edges import distort_px, find_straight_edges, refine_with_straight_edges, undistort_px

K = np.array([[520.0, 0, 322.0], [0, 520.0, 236.0], [0, 0, 1]])
DIST = np.array([-0.12, 0.05, 0.0, 0.0, -0.01])
SIZE = (640, 480)


def _distorted_picture() -> np.ndarray:
    """A pale sheet with a dark frame whose edges are straight, seen through DIST."""
    w, h = SIZE
    flat = np.full((h, w), 200, np.uint8)
    flat[40:440, 40:60] = flat[40:440, 580:600] = 40
    flat[40:60, 40:600] = flat[420:440, 40:600] = 40
    flat = cv2.GaussianBlur(flat, (0, 0), 0.8)
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    und = undistort_px(np.c_[xs.ravel(), ys.ravel()], K, DIST)  # where each picture pixel looks
    mx, my = und[:, 0].reshape(h, w).astype(np.float32), und[:, 1].reshape(h, w).astype(np.float32)
    return cv2.remap(flat, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def _straightness(edges, intr) -> float:
    out = []
    for e in edges:
        p = undistort_px(e, intr.K, intr.dist)
        c = p - p.mean(axis=0)
        out.append(np.sqrt(np.mean((c @ np.linalg.svd(c)[2][1]) ** 2)))
    return float(np.median(out))


def test_distort_undistort_round_trip():
    p = np.array([[10.0, 12.0], [320, 240], [630, 470]])
    assert np.abs(distort_px(undistort_px(p, K, DIST), K, DIST) - p).max() < 1e-6


def test_edges_found_are_straight_through_the_true_lens_only():
    img = _distorted_picture()
    guess = Intrinsics(K, np.zeros(5), SIZE, 0.1)
    edges = find_straight_edges(img, guess)
    assert len(edges) >= 6  # the frame's inner and outer edges, four sides
    true = Intrinsics(K, DIST, SIZE, 0.1)
    assert _straightness(edges, true) < 0.08
    assert _straightness(edges, guess) > 10 * _straightness(edges, true)  # the lens bends them


def _board_views(rng, sigma):
    """Four small boards near the picture's centre (what a weak calibration has)."""
    obj = np.array([[x, y, 0] for y in range(5) for x in range(7)], np.float64)
    views, poses = [], []
    for rv, tv in (([0.3, 0.1, 0], [-3, -2, 30]), ([-0.2, 0.3, 0.1], [-1, -3, 28]),
                   ([0.1, -0.3, 0.2], [-4, 0, 32]), ([-0.3, -0.2, -0.1], [0, 0, 29])):
        img, _ = cv2.projectPoints(obj, np.array(rv, float), np.array(tv, float), K, DIST)
        views.append((obj, img.reshape(-1, 2) + rng.normal(0, sigma, (len(obj), 2))))
        poses.append((np.array(rv, float), np.array(tv, float)))
    return views, poses


def test_refinement_recovers_the_distortion_the_boards_miss():
    rng = np.random.default_rng(3)
    views, poses = _board_views(rng, 0.1)
    guess = Intrinsics(K * [[1.02], [1.02], [1]], np.zeros(5), SIZE, 0.1)
    edges = find_straight_edges(_distorted_picture(), guess)
    fit = refine_with_straight_edges(guess, views, poses, edges)
    assert fit is not None and len(fit.edges) >= 6
    ys, xs = np.mgrid[20:460:40, 20:620:40]
    grid = np.c_[xs.ravel(), ys.ravel()].astype(np.float64)
    truth = undistort_px(grid, K, DIST)
    before = np.abs(undistort_px(grid, guess.K, guess.dist) - truth).max()
    after = np.abs(undistort_px(grid, fit.intrinsics.K, fit.intrinsics.dist) - truth).max()
    assert before > 5.0 and after < 0.5, (before, after)
    assert _straightness(fit.edges, fit.intrinsics) < 0.08


def test_edges_that_are_not_straight_leave_the_boards_alone():
    rng = np.random.default_rng(4)
    views, poses = _board_views(rng, 0.1)
    guess = Intrinsics(K, DIST, SIZE, 0.1)
    t = np.linspace(0.3, 1.2, 80)
    arcs = [np.c_[320 + r * np.cos(t), 240 + r * np.sin(t)] for r in (120.0, 150.0, 180.0, 200.0, 230.0)]  # circles
    assert refine_with_straight_edges(guess, views, poses, arcs) is None


def test_epic_720p_table_floor_within_five_hundredths(epic_720p_table):
    """The shared renderer's 720p Epic table (a 6 ft table under a 105 degree lens): the
    board views alone put the floor 0.13 in off the true camera's; with the table's
    straight edges and its markers, 0.04 in."""
    from calibration.boards import board_from_config
    from calibration.intrinsics import calibrate_camera
    from calibration.markers import detect_markers
    from calibration.table import estimate_table_pose
    from evalsets import camera_floor_rms
    from tracker.calibrate import FOOTAGE_MAX_FOCAL_SIGMA, _straightened, empty_table_photo
    from tracker.config import GameConfig

    folder, _ = epic_720p_table
    config = GameConfig.load(folder)
    photo = empty_table_photo(folder)
    views = sorted((folder / "calib").iterdir())
    boards = calibrate_camera(views, board_from_config(config.calibration_board), progress=False,
                              max_focal_sigma=FOOTAGE_MAX_FOCAL_SIGMA)
    truth = json.loads((folder / "truth.json").read_text())
    table = cv2.imread(str(photo))
    markers = detect_markers(table, config.table.dictionary, downscale=1.0)

    def floor_rms(intr):
        return camera_floor_rms(CameraModel(intr, estimate_table_pose(table, intr, config.table, detections=markers)),
                                truth)

    before, after = floor_rms(boards.intrinsics), floor_rms(_straightened(boards, photo, config))
    assert before > 0.08, before  # what the boards alone leave
    assert after < 0.05 and after < before / 2.5, (before, after)


def test_a_photo_without_edges_or_markers_keeps_the_board_calibration(tmp_path, epic_720p_table):
    from tracker.calibrate import _straightened
    from tracker.config import GameConfig

    class Boards:  # what calibrate_camera returns, as far as _straightened reads it
        intrinsics = Intrinsics(K, DIST, SIZE, 0.1)
        views_used, points, extrinsics = [], {}, {}

    config = GameConfig.load(epic_720p_table[0])
    plain = tmp_path / "table.jpg"
    cv2.imwrite(str(plain), np.full((SIZE[1], SIZE[0]), 128, np.uint8))
    assert _straightened(Boards(), plain, config) is Boards.intrinsics
    bent = tmp_path / "frame.jpg"
    cv2.imwrite(str(bent), _distorted_picture())
    Boards.intrinsics = Intrinsics(K, np.zeros(5), SIZE, 0.1)
    assert _straightened(Boards(), bent, config) is Boards.intrinsics  # bent edges, but no table markers


def test_another_line_a_pixel_aside_is_left_out_of_an_edge(monkeypatch):
    """A table marker's paper (or a shadow) continuing the frame's edge 2 px aside: LSD
    takes both for one line, but only the points of the longer run are the edge. Kept,
    the other run's points bend the edge by half a pixel through the true lens."""
    import calibration.straight_edges as se

    w, h = SIZE
    flat = np.full((h, w), 200, np.uint8)
    flat[40:440, 40:60] = flat[40:440, 580:600] = 40
    flat[40:60, 40:600] = flat[420:440, 40:600] = 40
    flat[446:476, 42:60] = 40  # the paper's edge: on the frame's outer edge's line, 2 px in
    flat = cv2.GaussianBlur(flat, (0, 0), 0.8)
    true = Intrinsics(K, DIST, SIZE, 0.1)
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    und = undistort_px(np.c_[xs.ravel(), ys.ravel()], K, DIST)
    img = cv2.remap(flat, und[:, 0].reshape(h, w).astype(np.float32), und[:, 1].reshape(h, w).astype(np.float32),
                    cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)

    def worst(edges):
        return max(_straightness([e], true) for e in edges)

    edges = find_straight_edges(img, true)
    assert len(edges) >= 6 and worst(edges) < 0.1, worst(edges)
    monkeypatch.setattr(se, "_one_line", lambda pts, K, dist: np.ones(len(pts), bool))
    assert worst(find_straight_edges(img, true)) > 0.2  # both runs as one edge


def test_the_pictures_own_border_is_not_an_edge():
    """A picture with no straight edge in it (a textured mat filling the frame), seen
    through a lens with pincushion distortion: undistorted, its border is a long step to
    the black beyond, straight in the picture, not in the world. No edge is found there.
    (Found, the picture's border taught a 720p Epic tuning table's lens to bend itself
    straight: the floor 0.30 in off, against 0.08 in without; 3-8 such edges here.)"""
    w, h = SIZE
    rng = np.random.default_rng(5)
    for amplitude, blur in ((25, 1.5), (10, 0.7), (5, 0.5)):
        mat = cv2.GaussianBlur(rng.normal(110, amplitude, (h, w)).astype(np.float32), (0, 0), blur)
        picture = np.clip(mat, 0, 255).astype(np.uint8)
        for k1 in (0.04, 0.08):
            pincushion = np.array([k1, 0.0, 0.0, 0.0, 0.0])
            assert find_straight_edges(picture, Intrinsics(K, pincushion, SIZE, 0.1)) == [], (amplitude, k1)
    # The frame of _distorted_picture is still found, well inside the picture.
    edges = find_straight_edges(_distorted_picture(), Intrinsics(K, DIST, SIZE, 0.1))
    assert len(edges) >= 4


def test_each_view_counts_by_how_finely_it_is_measured(tmp_path, monkeypatch):
    """The bundled Epic clip: big boards whose printed corners fit to 0.1 px under a
    narrow lens, and the table markers' tag corners to some 0.3 px. Each view's pixels
    weighed by its own error, the floor comes out where the boards put it; every pixel
    counted alike, the markers' coarser corners pull the lens (0.005 in against 0.003 in
    off the true camera when written)."""
    from pathlib import Path

    import calibration.straight_edges as se
    from calibration.markers import detect_markers
    from evalsets import camera_floor_rms
    from calibration.table import estimate_table_pose
    from tracker.calibrate import empty_table_photo, intrinsics_for_folder
    from tracker.config import GameConfig

    folder = Path(__file__).resolve().parents[1] / "sample_footage" / "epic-demo"
    config = GameConfig.load(folder / "game.yaml")
    truth = json.loads((folder / "truth.json").read_text())
    table = cv2.imread(str(empty_table_photo(folder)))
    markers = detect_markers(table, config.table.dictionary, downscale=1.0)

    def floor_rms(cache: str) -> float:
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / cache))
        intr = intrinsics_for_folder(folder, config)
        return camera_floor_rms(CameraModel(intr, estimate_table_pose(table, intr, config.table, detections=markers)),
                                truth)

    weighed = floor_rms("weighed")
    monkeypatch.setattr(se, "MIN_VIEW_SIGMA_PX", se.VIEW_SIGMA_PX)  # every view's pixels alike
    alike = floor_rms("alike")
    assert weighed < 0.004 and alike > weighed + 0.001, (weighed, alike)
