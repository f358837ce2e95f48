"""The picture's sharpness, read off the table markers' printed edges
(calibration.sharpness), and set-up's warning when the picture is too soft for the rims
(tracker.calibrate.picture_warnings)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
from evalsets import eval_set, truth

from calibration.markers import detect_markers
from calibration.sharpness import edge_blur_px
from tracker.calibrate import SOFT_PICTURE_PX, calibrate_folder, picture_blur
from tracker.config import GameConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.sharpness import drawn_marker as _drawn_marker  # noqa: E402

DEMO = Path(__file__).resolve().parents[1] / "sample_footage" / "warcry-demo"


@pytest.mark.parametrize("sigma", [0.5, 1.0, 1.5])
def test_the_blur_of_a_drawn_marker_is_read_back(sigma):
    img = _drawn_marker(sigma)
    found = detect_markers(img, "DICT_4X4_100", downscale=1.0)
    assert len(found) == 1
    # What the picture holds: the blur and each pixel's own width (a 1 px box, sigma 0.29).
    held = float(np.hypot(sigma, 0.29))
    assert edge_blur_px(img, found.corners) == pytest.approx(held, abs=0.12)


def test_a_softer_picture_reads_softer():
    readings = []
    for sigma in (0.4, 0.7, 1.0, 1.3):
        img = _drawn_marker(sigma, seed=1)
        readings.append(edge_blur_px(img, detect_markers(img, "DICT_4X4_100", downscale=1.0).corners))
    assert all(b > a + 0.15 for a, b in zip(readings, readings[1:])), readings


def test_no_reading_without_printed_edges():
    blank = np.full((120, 160, 3), 128, np.uint8)
    square = np.array([[[40, 30], [100, 30], [100, 90], [40, 90]]], np.float32)
    assert edge_blur_px(blank, square) is None
    # A marker on a dark mat, no white paper round it: its edge is no step to read.
    dark = np.full((120, 160), 30, np.uint8)
    dark[30:90, 40:100] = 20
    assert edge_blur_px(dark, square) is None


def test_the_eval_sets_tables_read_their_rendered_blur():
    """The shared sets' empty tables (another renderer; its truth files give the blur it
    applied): each reads a little over that blur (the pixels' own width, JPEG), in the
    same order, and a copy blurred by 0.6 px more reads as the two added."""
    got, applied = [], []
    for name in ("warcry-1", "warcry-2", "warcry-3"):
        folder = eval_set(name)
        img = cv2.imread(str(folder / "table.jpg"), cv2.IMREAD_COLOR)
        found = detect_markers(img, "DICT_4X4_100", downscale=1.0)
        sigma = edge_blur_px(img, found.corners)
        rendered = truth(folder)["photometric"]["blur_sigma"]
        assert rendered < sigma < rendered + 0.2
        softer = edge_blur_px(cv2.GaussianBlur(img, (0, 0), 0.6), found.corners)
        assert softer == pytest.approx(np.hypot(sigma, 0.6), abs=0.08)
        got.append(sigma)
        applied.append(rendered)
    assert np.argsort(got).tolist() == np.argsort(applied).tolist()


def test_a_soft_table_picture_is_warned_about_at_set_up(tmp_path):
    """Set-up from the bundled sample's own files, and from a copy whose empty-table photo
    is out of focus (Gaussian sigma 1.3 px): only the copy gets the warning."""
    config = GameConfig.load(DEMO / "game.yaml")
    sharp = calibrate_folder(DEMO, config)
    assert sharp.blur_in is not None and sharp.blur_in < 0.03
    assert not any("soft" in w for w in sharp.warnings)

    soft_dir = tmp_path / "soft"
    soft_dir.mkdir()
    shutil.copytree(DEMO / "calib", soft_dir / "calib")
    shutil.copy2(DEMO / "game.yaml", soft_dir / "game.yaml")
    table = cv2.imread(str(DEMO / "table.jpg"), cv2.IMREAD_COLOR)
    cv2.imwrite(str(soft_dir / "table.jpg"), cv2.GaussianBlur(table, (0, 0), 1.3), [cv2.IMWRITE_JPEG_QUALITY, 95])
    soft = calibrate_folder(soft_dir, config)
    warned = [w for w in soft.warnings if w.startswith("the picture is soft")]
    assert len(warned) == 1 and "focus the camera" in warned[0]
    blur = picture_blur(config, cv2.imread(str(soft_dir / "table.jpg"), cv2.IMREAD_COLOR),
                           detect_markers(cv2.imread(str(soft_dir / "table.jpg")), config.table.dictionary,
                                          downscale=1.0))
    assert blur[1] > SOFT_PICTURE_PX and soft.blur_in == pytest.approx(blur[0])


def test_the_pipeline_reads_the_pictures_blur_as_the_game_goes_on():
    """The live pipeline reads the blur off one table marker at a time, a second or more
    apart: on the bundled clip as recorded it reads sharp, on the same frames out of focus
    (Gaussian sigma 1.3 px, an autofocus wandering mid-game) soft; each within 3 s of
    play. A fresh pipeline (a recorded game starting again on loop) keeps the readings."""
    from tracker.pipeline import Pipeline
    from tracker.sources import open_source

    base = Pipeline.from_footage(DEMO)
    for sigma in (0.0, 1.3):
        pipe = base.fresh()
        assert pipe.picture_blur is None
        with open_source(DEMO) as src:
            for index, t, frame in src:
                if sigma:
                    frame = cv2.GaussianBlur(frame, (0, 0), sigma)
                pipe.process(frame, index, t)
                if index >= 3 * pipe.fps:
                    break
        blur = pipe.picture_blur
        assert blur is not None and len(pipe._blur_read) >= 2
        assert (blur[1] > SOFT_PICTURE_PX) == bool(sigma), blur
        assert pipe.fresh().picture_blur == blur
