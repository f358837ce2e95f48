"""Real photographs (circles grid, 640x512): all views found, published focal reproduced."""

from pathlib import Path

import pytest

from calibration.boards import CirclesGrid
from calibration.intrinsics import calibrate_camera
from evalsets import SHARED  # ../shared beside the repository (as CI lays it out)

REAL = SHARED / "real-calibration" / "circles-grid-left"
PUBLISHED_FX = 522.78124071224499

@pytest.fixture(autouse=True)
def _shared_data_is_there():
    """These tests need ../shared beside the repository; without it they fail, never skip."""
    if not REAL.exists():
        pytest.fail(f"{REAL} is missing: ../shared must sit beside the repository")


def test_published_flags_reproduce_published_focal():
    r = calibrate_camera(REAL, CirclesGrid(4, 11, 20), fix_principal_point=True, fix_aspect_ratio=True,
                         zero_tangent=True, progress=False)
    assert len(r.views_used) == 25 and not r.rejected
    assert abs(r.intrinsics.fx / PUBLISHED_FX - 1) < 0.005
    assert r.intrinsics.fx == pytest.approx(r.intrinsics.fy)
    assert r.intrinsics.rms_px <= 0.12
    assert r.intrinsics.dist[2] == 0 and r.intrinsics.dist[3] == 0


def test_default_flags_rms():
    r = calibrate_camera(REAL, CirclesGrid(4, 11, 20), progress=False)
    assert len(r.views_used) == 25
    assert r.intrinsics.rms_px <= 0.10
    assert len(r.per_view_error) == 25 and max(r.per_view_error.values()) < 0.3
    assert r.coverage.shape == (512, 640, 3)
