import cv2
import numpy as np
import pytest

from tracker.errors import SourceError
from tracker.sources import open_source


def _write_video(path, n=30, size=(64, 48)):
    w = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 10, size)
    for i in range(n):
        w.write(np.full((size[1], size[0], 3), (i * 8) % 256, np.uint8))
    w.release()


def test_video_frames_in_order_and_loop(tmp_path):
    p = tmp_path / "v.avi"
    _write_video(p, n=10)
    src = open_source(p)
    frames = [(i, t, f.mean()) for i, t, f in src]
    assert [i for i, *_ in frames] == list(range(10))
    assert frames[3][1] == pytest.approx(0.3)
    assert frames[9][2] > frames[0][2]
    looped = open_source(p, loop=True)
    got = []
    for i, _, f in looped:
        got.append(f.mean())
        if i == 14:
            break
    assert got[10] == pytest.approx(got[0], abs=2)


def test_missing_path():
    with pytest.raises(SourceError, match="no such file or folder"):
        open_source("/nonexistent/clip.mp4")


def test_corrupt_video(tmp_path):
    p = tmp_path / "clip.mp4"
    p.write_bytes(b"\x00\x01garbage" * 1000)
    with pytest.raises(SourceError, match="not a readable video"):
        open_source(p)


def test_empty_video_file(tmp_path):
    p = tmp_path / "clip.mp4"
    p.write_bytes(b"")
    with pytest.raises(SourceError, match="empty"):
        open_source(p)


def test_camera_index_that_does_not_open():
    with pytest.raises(SourceError, match="camera 9 does not open"):
        open_source("9")


def test_truncated_video_keeps_frames_already_read(tmp_path):
    p = tmp_path / "v.avi"
    _write_video(p, n=30)
    data = p.read_bytes()
    (tmp_path / "cut.avi").write_bytes(data[: len(data) // 2])
    got = []
    with pytest.raises(SourceError, match="truncated or corrupt"):
        for i, _, f in open_source(tmp_path / "cut.avi"):
            got.append(i)
    assert got and got == list(range(len(got)))


def test_image_folder_skips_and_counts_unreadable_frames(tmp_path):
    for i in range(4):
        cv2.imwrite(str(tmp_path / f"{i:03d}.png"), np.full((20, 30, 3), i * 40, np.uint8))
    (tmp_path / "002.png").write_bytes(b"not a png")
    src = open_source(tmp_path)
    frames = list(src)
    assert len(frames) == 3 and src.skipped == 1


def test_folder_without_images(tmp_path):
    with pytest.raises(SourceError, match="no images"):
        open_source(tmp_path)


def _jpeg(seed=0, **params) -> bytes:
    img = np.random.default_rng(seed).integers(0, 255, (96, 128, 3), np.uint8)
    flags = []
    for k, v in params.items():
        flags += [getattr(cv2, k), v]
    ok, enc = cv2.imencode(".jpg", img, flags)
    assert ok
    return enc.tobytes()


@pytest.mark.parametrize("params", [{}, {"IMWRITE_JPEG_PROGRESSIVE": 1},
                                    {"IMWRITE_JPEG_RST_INTERVAL": 2}, {"IMWRITE_JPEG_OPTIMIZE": 1}])
def test_a_jpeg_cut_short_is_told_from_a_whole_one(params):
    from tracker.sources import jpeg_cut_short

    data = _jpeg(**params)
    assert not jpeg_cut_short(data)
    assert not jpeg_cut_short(data + b"camera trailer \xff\xda\x00\x04 after the end")
    for keep in (len(data) - 1, len(data) - 2, len(data) * 3 // 4, len(data) // 2, 300, 3):
        assert jpeg_cut_short(data[:keep]), keep


def test_a_thumbnail_end_marker_does_not_hide_a_cut(tmp_path):
    """An EXIF-style thumbnail (a whole JPEG inside an APP1 segment, its own end marker
    early in the file) before a main picture cut short."""
    from tracker.sources import jpeg_cut_short

    main, thumb = _jpeg(1), _jpeg(2)
    payload = b"Exif\x00\x00" + thumb
    app1 = b"\xff\xe1" + (len(payload) + 2).to_bytes(2, "big") + payload
    whole = main[:2] + app1 + main[2:]
    assert cv2.imdecode(np.frombuffer(whole, np.uint8), cv2.IMREAD_COLOR) is not None
    assert not jpeg_cut_short(whole)
    assert jpeg_cut_short(whole[: len(whole) - len(main) // 2])


def test_image_folder_skips_a_jpeg_cut_short_naming_it(tmp_path):
    for i in range(4):
        (tmp_path / f"{i:03d}.jpg").write_bytes(_jpeg(i))
    cut = tmp_path / "001.jpg"
    cut.write_bytes(cut.read_bytes()[:1500])
    src = open_source(tmp_path)
    said = []
    src.on_skip = said.append
    frames = list(src)
    assert [i for i, _, _ in frames] == [0, 2, 3]  # frames keep their files' positions
    assert src.skipped == 1 and list(src.skipped_files) == [cut]
    assert len(said) == 1 and str(cut) in said[0] and "cut short" in said[0] and "video" not in said[0]


def test_the_suite_keeps_its_caches_out_of_the_users_home(calibrated):
    """Calibrating (the bundled footage, ``calibrated``) caches its intrinsics under the
    test run's ``.pytest_cache``, not in ``~/.cache/tabletracker``."""
    import os
    from pathlib import Path

    from tracker.calibrate import _cache_dir

    cache = Path(os.environ["XDG_CACHE_HOME"]).resolve()
    assert ".pytest_cache" in cache.parts and Path.home() / ".cache" not in cache.parents
    assert _cache_dir().resolve().parent == cache and any(_cache_dir().glob("camera-*.json"))
