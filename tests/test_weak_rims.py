"""A rim whose colour is close to the mat's (set-up warns about it) has its edge read above
the mat's own evidence, not at half its peak: the mat that reads a little of the rim's
colour held a half-peak edge out past the true one, and a crescent's centre with it."""

from pathlib import Path

import cv2
import numpy as np
import pytest

from tracker.detection import TableDetector
from tracker.vision.rim_fit import _fit_rims_at

ROOT = Path(__file__).resolve().parents[1]


def drawn_rim(mat: float, peak: float = 0.25, r: float = 40.0, blur: float = 1.5, crescent: bool = False):
    """An evidence image drawn by OpenCV: a rim 5 px wide of ``peak`` evidence, outer edge
    radius ``r`` round (100, 100), on a mat reading ``mat`` of the rim's colour, blurred as
    a lens does; or only the arc of it facing left (a miniature hiding the rest)."""
    ev = np.full((200, 200), mat, np.float32)
    cv2.circle(ev, (100 * 16, 100 * 16), int(r * 16), peak, -1, cv2.LINE_AA, shift=4)
    cv2.circle(ev, (100 * 16, 100 * 16), int((r - 5) * 16), 0.0, -1, cv2.LINE_AA, shift=4)  # the base's top
    if crescent:
        cv2.rectangle(ev, (95, 0), (199, 199), 0.0, -1)  # the miniature over the right-hand side
    return cv2.GaussianBlur(ev, (0, 0), blur)


def edge_radius(ev, mat_floor=False):
    (fit,) = _fit_rims_at(ev, np.array([100.0]), np.array([100.0]), 24, 52, mat_floor=mat_floor)
    return fit[2]


SHARP = 40.53  # the drawn edge, as a sharp rim on a mat of no evidence reads either way


@pytest.mark.parametrize("crescent", [False, True])
@pytest.mark.parametrize("blur, plain_out, above_within", [(0.5, 0.5, 0.05), (1.0, 1.0, 0.05), (1.5, 1.9, 0.45)])
def test_a_weak_rims_edge_is_read_above_the_mats_evidence(blur, plain_out, above_within, crescent):
    """A rim reading 0.25 of its colour on a mat reading 0.10: at half its peak the edge
    lies a pixel or two out (more the softer the picture); above the mat's evidence it is
    the drawn one (a little out at 1.5 px of blur, where the 5 px rim's peak itself is
    blurred down)."""
    ev = drawn_rim(mat=0.10, blur=blur, crescent=crescent)
    assert edge_radius(drawn_rim(mat=0.0, blur=0.5)) == pytest.approx(SHARP, abs=0.02)
    assert edge_radius(ev) - SHARP > plain_out
    assert abs(edge_radius(ev, mat_floor=True) - SHARP) < above_within


def test_a_rim_on_a_mat_of_no_evidence_reads_the_same_either_way():
    ev = drawn_rim(mat=0.0, blur=1.0)
    (plain,) = _fit_rims_at(ev, np.array([100.0]), np.array([100.0]), 24, 52)
    (above,) = _fit_rims_at(ev, np.array([100.0]), np.array([100.0]), 24, 52, mat_floor=True)
    assert np.allclose(plain[:4], above[:4], atol=0.01)  # (to a hundredth of a pixel)


def test_only_the_sides_set_up_warns_about_are_read_above_the_mat():
    """The bundled sample's sides stand out from its mat: none is. With its first side
    painted green (the renders' green, which set-up warns is close to the mat), that side
    alone is."""
    import dataclasses

    from tracker.calibrate import calibrate_folder
    from tracker.config import GameConfig

    demo = ROOT / "sample_footage" / "warcry-demo"
    cfg = GameConfig.load(demo / "game.yaml")
    setup = calibrate_folder(demo, cfg)
    detector = TableDetector(cfg, setup.camera, background=setup.background)
    sides = [s.index for s in cfg.sides]
    assert detector._mat_floor(sides) is None
    green = dataclasses.replace(cfg.sides[0], colour="green", rim_bgr=(55, 165, 45))
    painted = dataclasses.replace(cfg, sides=(green,) + cfg.sides[1:])
    detector = TableDetector(painted, setup.camera, background=setup.background)
    assert detector._mat_floor(sides).tolist() == [True] + [False] * (len(sides) - 1)
