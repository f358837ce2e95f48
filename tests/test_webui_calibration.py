"""The calibration page and its API on the real pipeline playing the bundled footage, and
the printable sheets: true size at their DPI (found again by OpenCV's own detectors)."""

from __future__ import annotations

import struct
import time
import zlib

import cv2
import numpy as np
import pytest

from calibration.boards import CharucoBoard
from calibration.markers import detect_markers
from webui import create_app, get_player, stop_player


@pytest.fixture(scope="module")
def app(calibrated, footage, tmp_path_factory):
    app = create_app({"SOURCE": str(footage), "FOOTAGE": str(footage), "PIPELINE": calibrated.fresh(),
                      "DATABASE": str(tmp_path_factory.mktemp("calib") / "c.sqlite"), "JUDGE_TOKEN": None})
    assert get_player(app).wait_first(60) is not None
    yield app
    stop_player(app)


@pytest.fixture
def client(app):
    return app.test_client()


def png_chunks(data: bytes) -> dict[bytes, bytes]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    out, i = {}, 8
    while i < len(data):
        n = struct.unpack(">I", data[i:i + 4])[0]
        kind, body = data[i + 4:i + 8], data[i + 8:i + 8 + n]
        assert struct.unpack(">I", data[i + 8 + n:i + 12 + n])[0] == zlib.crc32(kind + body) & 0xFFFFFFFF
        out.setdefault(kind, body)
        i += 12 + n
    return out


def decode(data: bytes) -> np.ndarray:
    return cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_GRAYSCALE)


def test_calibration_api_reports_health_markers_and_errors(client, app):
    r = client.get("/api/calibration")
    assert r.status_code == 200, r.get_json()
    c = r.get_json()
    pipe = get_player(app).pipeline
    assert c["health"] == pipe.health
    assert c["setup"]["calibration_rms_px"] == pytest.approx(pipe.setup.calibration_rms_px)
    assert c["setup"]["pose_error_px"] == pytest.approx(pipe.setup.pose_error_px)
    # The bundled footage's picture is sharp enough: its blur is given, and not warned about.
    assert c["setup"]["picture_blur_in"] == pytest.approx(pipe.setup.blur_in)
    assert 0 < c["setup"]["picture_blur_in"] < 0.03
    assert 0 < c["markers"]["picture_blur_px"] < 0.95  # (the frame's own, read off its markers)
    assert not any("soft" in a for a in c["alerts"])
    # ... and the overlay's state says so too, once the player has read two markers.
    deadline = time.monotonic() + 60
    while (pic := client.get("/api/state").get_json()["picture"])["blur_px"] is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert 0 < pic["blur_px"] < 0.95 and 0 < pic["blur_in"] < 0.05 and pic["soft"] is False
    assert c["pose"]["reprojection_error_px"] >= 0 and len(c["pose"]["camera_position_in"]) == 3
    assert sorted(m["id"] for m in c["markers"]["expected"]) == [0, 1, 2, 3]
    seen = {m["id"] for m in c["markers"]["seen"]}
    assert seen | set(c["markers"]["missing"]) == {0, 1, 2, 3}
    assert len(seen) >= 3, "the bundled footage shows the table markers"
    assert c["residual_px"] < 2.0  # the pose in use fits the markers of this frame
    assert isinstance(c["alerts"], list) and isinstance(c["events"], list)
    assert c["sheets"]["table_markers"].endswith("dpi=300") and c["coverage_url"]
    img = decode(client.get("/calibration/markers.jpg").data)
    assert img is not None and img.shape[1] == c["stream"]["width"]
    page = client.get("/calibration").get_data(as_text=True)
    assert "Re-run table calibration" in page and "/calibration/table-markers.png?dpi=300" in page


def test_rerun_table_calibration_from_the_current_frame(client, app):
    player = get_player(app)
    before = player.pipeline.camera
    r = client.post("/api/calibration/table", json={})
    assert r.status_code == 200, r.get_json()
    body = r.get_json()
    assert body["reprojection_error_px"] < 1.0 and len(body["markers_used"]) >= 3
    assert body["camera_moved_in"] is not None and body["camera_moved_in"] < 0.5  # the camera did not move
    cam = player.pipeline.camera
    assert cam is not before and player.pipeline.detector.camera is cam and player.annotator.camera is cam
    # the pose tracker starts from the new pose (the player goes on meanwhile, and may
    # have refined it from a frame since: the same pose to a hair, not the same object)
    pose = player.pipeline.pose_tracker.pose
    assert np.allclose(pose.rvec, cam.pose.rvec, atol=2e-3) and np.allclose(pose.tvec, cam.pose.tvec, atol=0.02)
    # the pipeline keeps tracking with it
    latest = player.wait_next(player.latest().seq, timeout=20)
    assert latest is not None and latest.result.state.fighters
    assert client.post("/api/calibration/table", json={"x": 1}).status_code == 400
    assert client.post("/api/calibration/table", data="{}", content_type="text/plain").status_code == 415


def test_table_marker_sheet_is_true_size(client):
    r = client.get("/calibration/table-markers.png?dpi=100")
    assert r.status_code == 200 and r.mimetype == "image/png"
    assert "table-markers-100dpi.png" in r.headers["Content-Disposition"]
    chunks = png_chunks(r.data)
    ppm_x, ppm_y, unit = struct.unpack(">IIB", chunks[b"pHYs"])
    assert unit == 1 and ppm_x == ppm_y == round(100 / 0.0254)
    assert b"100 dpi" in chunks[b"tEXt"]
    img = decode(r.data)
    assert img.shape == (1100, 850)  # US letter at 100 dpi
    det = detect_markers(img, "DICT_4X4_100", refine=True)
    assert sorted(det.ids.tolist()) == [0, 1, 2, 3]
    for c in det.corners:
        sides = np.linalg.norm(np.roll(c, -1, axis=0) - c, axis=1)
        assert sides == pytest.approx([200.0] * 4, abs=2.0)  # 2.0 in at 100 dpi
    assert client.get("/calibration/table-markers.png").headers["X-DPI"] == "300"


def test_charuco_sheet_is_true_size(client):
    r = client.get("/calibration/charuco.png?dpi=200")
    assert r.status_code == 200 and "charuco-7x5-200dpi.png" in r.headers["Content-Disposition"]
    assert struct.unpack(">IIB", png_chunks(r.data)[b"pHYs"])[0] == round(200 / 0.0254)
    img = decode(r.data)
    assert img.shape == (1700, 2200)  # landscape letter at 200 dpi
    board = CharucoBoard((7, 5), 1.25, 0.9, "DICT_5X5_100")
    view = board.detect(img)
    assert len(view.ids) == board.n_corners == 24
    # neighbouring corners 1.25 in = 250 px apart
    by_id = dict(zip(view.ids.tolist(), view.img))
    d = np.linalg.norm(by_id[1] - by_id[0])
    assert d == pytest.approx(250.0, abs=1.0)


@pytest.mark.parametrize("url", ["/calibration/charuco.png?dpi=150", "/calibration/charuco.png?dpi=abc",
                                 "/calibration/table-markers.png?dpi=10", "/calibration/sheets?dpi=5000"])
def test_bad_dpi_is_400_json(client, url):
    r = client.get(url)
    assert r.status_code == 400 and "dpi" in r.get_json()["error"]


def test_printable_sheets_page(client):
    html = client.get("/calibration/sheets?dpi=300").get_data(as_text=True)
    assert "300 dpi" in html and "width: 8.5in" in html and "/calibration/charuco.png?dpi=300" in html


def test_calibration_without_player_is_503(footage, tmp_path):
    app = create_app({"SOURCE": str(footage), "FOOTAGE": str(footage), "START_PLAYER": False,
                      "DATABASE": str(tmp_path / "x.sqlite")})
    c = app.test_client()
    assert c.get("/api/calibration").status_code == 503
    assert c.post("/api/calibration/table", json={}).status_code == 503
    assert c.get("/calibration/table-markers.png?dpi=100").status_code == 200  # sheets need no camera


def test_a_picture_gone_soft_since_set_up_is_alerted(calibrated, footage, tmp_path):
    """Set up on the sharp empty table, then fed the same clip's frames out of focus
    (Gaussian sigma 1.3 px, as an autofocus wandering mid-game): the calibration API reads
    the blur off the table markers in the frame and alerts. (The sharp footage does not:
    the first test.)"""
    from tracker.sources import open_source

    frames = tmp_path / "soft" / "frames"
    frames.mkdir(parents=True)
    with open_source(footage) as src:
        for index, _, frame in src:
            cv2.imwrite(str(frames / f"{index:06d}.png"), cv2.GaussianBlur(frame, (0, 0), 1.3))
            # (The player reads a marker's blur a second or more apart, two readings in one
            # lap of the looped clip: a 41-frame lap left a loaded machine none to pair.)
            if index >= 120:
                break
    app = create_app({"SOURCE": str(tmp_path / "soft"), "FOOTAGE": str(footage), "PIPELINE": calibrated.fresh(),
                      "DATABASE": str(tmp_path / "c.sqlite"), "JUDGE_TOKEN": None})
    try:
        assert get_player(app).wait_first(60) is not None
        r = app.test_client().get("/api/calibration")
        assert r.status_code == 200, r.get_json()
        c = r.get_json()
        assert c["markers"]["picture_blur_px"] > 0.95
        soft = [a for a in c["alerts"] if a.startswith("the picture has gone soft since set-up")]
        assert len(soft) == 1 and "focus the camera" in soft[0]
        # The overlay's state reads it as the game goes on, and a round's rulings carry it.
        client = app.test_client()
        deadline = time.monotonic() + 60
        while not (pic := client.get("/api/state").get_json()["picture"])["soft"] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert pic["soft"] is True and pic["blur_px"] > 0.95
        end = client.post("/api/round/end", json={})
        assert end.status_code == 201, end.get_json()
        soft = [w for w in end.get_json()["warnings"] if w.startswith("the picture is soft now")]
        assert len(soft) == 1 and "focus the camera" in soft[0] and "\n" not in soft[0]
    finally:
        stop_player(app)
