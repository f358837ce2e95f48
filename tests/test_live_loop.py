"""The live player on a recorded game played on loop: each lap starts the tracking
afresh (fighters back where they began, under the same ids), as the game does."""

from __future__ import annotations

import cv2

from tracker.sources import open_source
from webui.live import LivePlayer

LAP = 12  # frames of the bundled clip in the looped recording


def test_each_lap_of_a_looped_recording_is_tracked_afresh(calibrated, footage, tmp_path):
    folder = tmp_path / "frames"
    folder.mkdir()
    once = calibrated.fresh()
    with open_source(footage) as src:
        for index, t, frame in src:
            cv2.imwrite(str(folder / f"{index:06d}.jpg"), frame)
            if index == LAP - 1:
                break
    with open_source(folder) as src:  # the first lap, tracked on its own
        for index, t, frame in src:
            alone = once.process(frame, index, t).state
    player = LivePlayer(folder, calibrated.fresh(), loop=True, realtime=False)
    first = player.pipeline
    player.start()
    try:
        # The end of a later lap (the player's frame index keeps counting across laps).
        later = player.wait_until(lambda x: x.result.index >= 2 * LAP - 1 and x.result.index % LAP == LAP - 1, 180)
    finally:
        player.stop()
    assert later is not None, player.last_error
    assert player.pipeline is not first  # a fresh tracker for each lap
    want = sorted((f.id, f.x, f.y) for f in alone.fighters)
    got = sorted((f.id, f.x, f.y) for f in later.result.state.fighters)
    assert want and [i for i, _, _ in got] == [i for i, _, _ in want]
    assert all(abs(a[1] - b[1]) <= 0.05 and abs(a[2] - b[2]) <= 0.05 for a, b in zip(want, got))


def test_the_live_player_names_a_picture_cut_short_in_its_log(calibrated, footage, tmp_path, caplog):
    """A folder of frames played live: the JPEG cut short is skipped and named once in
    the server's log (the others are played)."""
    import logging

    cap = cv2.VideoCapture(str(footage / "clip.mp4"))
    for i in range(3):
        ok, frame = cap.read()
        assert ok
        cv2.imwrite(str(tmp_path / f"{i:03d}.jpg"), frame)
    cap.release()
    cut = tmp_path / "001.jpg"
    cut.write_bytes(cut.read_bytes()[:5000])
    player = LivePlayer(str(tmp_path), calibrated.fresh(), loop=True, realtime=False)
    with caplog.at_level(logging.WARNING, logger="webui.live"):
        player.start()
        try:
            assert player.wait_until(lambda x: x.result.index >= 2, 60) is not None
        finally:
            player.stop()
    named = [r.getMessage() for r in caplog.records if str(cut) in r.getMessage()]
    assert len(named) == 1 and "cut short" in named[0], caplog.text
