"""A base whose side wall is painted in its rim colour (``rim_style: painted_edge``):
seen from off the camera's nadir, the wall widens the rim on the side facing the camera,
and the rim's edge there is the wall's foot, not the top's edge. The rim fit takes the
wall off each ray's edge, and learns how much of the wall shows as rim from whole rims."""

import cv2
import numpy as np
import pytest

from tracker.config import GameConfig
from tracker.vision.rim_fit import _fit_rims, _wall_share_of
from tracker.errors import ConfigError

R, W = 20.0, 2.5  # top radius and the wall's apparent width (view px; 32 mm at 31 px/in, 15 in out)
C = np.array([60.0, 60.0])
NADIR = np.array([-1.0, 0.0])  # the camera's nadir lies to the left


def _evidence(wall_shows: bool, far_half_hidden: bool = False) -> np.ndarray:
    """Rim evidence of one base, drawn with OpenCV at 8x and shrunk (a blurred edge): a
    ring 2 px wide inside the top's edge and, if ``wall_shows``, the wall's band out to
    the foot's circle (the top's moved W toward the nadir). ``far_half_hidden``: a
    miniature's shadow over the half away from the nadir (a crescent is all that shows)."""
    k = 8
    big = np.zeros((120 * k, 120 * k), np.uint8)
    sh = 4

    def circle(c, r, colour):
        cv2.circle(big, tuple(int(round(v * k * 2 ** sh)) for v in c), int(round(r * k * 2 ** sh)), colour, -1,
                   cv2.LINE_AA, sh)

    if wall_shows:
        circle(C + W * NADIR, R, 255)
    circle(C, R, 255)
    circle(C, R - 2.0, 0)
    if far_half_hidden:
        big[:, int(C[0] * k):] = 0
    ev = cv2.resize(big, (120, 120), interpolation=cv2.INTER_AREA).astype(np.float32) / 255.0
    return cv2.GaussianBlur(ev, (0, 0), 0.6)


def _rays(ev: np.ndarray, at: np.ndarray):
    n = 96
    ang = np.linspace(0, 2 * np.pi, n, endpoint=False)
    cos, sin = np.cos(ang), np.sin(ang)
    rho = np.arange(0.6 * R, R + 8, 0.5, dtype=np.float32)
    X = (at[0] + rho[None] * cos[:, None]).astype(np.float32)
    Y = (at[1] + rho[None] * sin[:, None]).astype(np.float32)
    prof = cv2.remap(ev, X, Y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    return prof, rho, cos, sin


def _centre(ev: np.ndarray, wall: np.ndarray | None) -> np.ndarray:
    at = C + np.array([0.7, -0.4])  # a candidate a little off the centre, as found
    prof, rho, cos, sin = _rays(ev, at)
    fit = _fit_rims(prof[None], rho, cos, sin, np.array([at[0]]), np.array([at[1]]),
                    expect_r=np.array([R + 0.5]), expect_weight=16.0, expect_min_score=0.18,
                    wall=None if wall is None else wall[None])[0]
    assert fit is not None
    return np.array(fit[:2])


@pytest.mark.parametrize("crescent", [False, True])
def test_the_painted_wall_is_taken_off_the_rim_so_the_centre_is_the_tops(crescent):
    """Whole rim: the wall puts the circle W/2 toward the nadir; a crescent on the near
    side, up to W. Told the wall, the fit finds the top's centre."""
    ev = _evidence(wall_shows=True, far_half_hidden=crescent)
    naive = _centre(ev, None) - C
    told = _centre(ev, W * NADIR) - C
    toward = float(naive @ NADIR)
    assert toward > (0.8 * W if crescent else 0.35 * W), naive
    assert np.hypot(*told) < 0.25 * W, told


def test_a_top_ring_alone_is_fitted_as_before():
    """No wall in the picture (``rim_style: ring``, or a wall in shade): without the wall
    the fit is right, and told of a wall that is not there it would be pulled away."""
    ev = _evidence(wall_shows=False)
    assert np.hypot(*(_centre(ev, None) - C)) < 0.25 * W
    assert float((_centre(ev, W * NADIR) - C) @ NADIR) < -0.25 * W


@pytest.mark.parametrize("shows, share", [(True, 1.0), (False, 0.0)])
def test_how_much_of_the_wall_shows_is_read_from_a_whole_rim(shows, share):
    prof, rho, cos, sin = _rays(_evidence(wall_shows=shows), C + np.array([0.7, -0.4]))
    top_r, seen = _wall_share_of(prof, rho, cos, sin, W * NADIR)
    assert abs(seen - share) < 0.25, seen
    assert abs(top_r - R) < 1.0, top_r


def test_rim_style_is_checked_and_a_typo_named():
    sides = [{"index": 0, "colour": "red", "rim_bgr": [40, 38, 200], "rim_style": "painted_edge"},
             {"index": 1, "colour": "blue", "rim_bgr": [190, 95, 25]}]
    cfg = GameConfig.from_dict({"kind": "warcry", "sides": sides})
    assert [s.rim_style for s in cfg.sides] == ["painted_edge", "ring"]
    sides[1]["rim_style"] = "painted edge"
    with pytest.raises(ConfigError, match=r"sides\[1\]\.rim_style: 'painted edge'.*did you mean 'painted_edge'"):
        GameConfig.from_dict({"kind": "warcry", "sides": sides})
