"""Issue #29: every bad input to the command line gets one clear line (exit 2, no
traceback), found before any work is done so that none is lost."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalsets import eval_set
from test_cli import one_line_error, run


def _read_only_folder(tmp_path: Path) -> Path:
    """A folder this user cannot write in (root writes through a folder's mode bits, not
    through sysfs)."""
    if os.geteuid() == 0:
        return Path("/sys")
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    return folder


@pytest.fixture
def bad_outs(tmp_path):
    """{what is wrong: an --out that cannot be written}."""
    (tmp_path / "a-file").write_text("not a folder")
    return {"missing folder": (tmp_path / "no-such-folder" / "out.json", "does not exist"),
            "file as folder": (tmp_path / "a-file" / "out.json", "is a file, not a folder"),
            "read-only": (_read_only_folder(tmp_path) / "tabletracker-out.json", "cannot be written")}


@pytest.mark.parametrize("case", ["missing folder", "file as folder", "read-only"])
def test_track_checks_out_before_tracking(bad_outs, case):
    out, words = bad_outs[case]
    p = run("track", eval_set("warcry-3"), "--out", out, "--max-frames", 1, "--no-progress")
    one_line_error(p, "--out", str(out), words)  # one line: no frame was tracked first
    assert "tracked" not in p.stdout + p.stderr


def test_track_checks_eval_output_too(bad_outs):
    out, words = bad_outs["missing folder"]
    one_line_error(run("track", eval_set("warcry-3"), "--eval-output", out, "--max-frames", 1, "--no-progress"),
                   "--eval-output", words)


@pytest.mark.parametrize("case", ["missing folder", "file as folder", "read-only"])
def test_calibrate_camera_checks_out_before_calibrating(bad_outs, case):
    out, words = bad_outs[case]
    p = run("calibrate-camera", eval_set("warcry-3") / "calib", "--out", out)
    one_line_error(p, "--out", words)
    assert p.stdout == ""  # no board was looked for


@pytest.mark.parametrize("case", ["missing folder", "file as folder", "read-only"])
def test_calibrate_table_checks_out_before_calibrating(bad_outs, case):
    out, words = bad_outs[case]
    folder = eval_set("warcry-3")
    p = run("calibrate-table", folder / "table.jpg", "--game", folder / "setup.json", "--out", out)
    one_line_error(p, "--out", words)
    assert p.stdout == ""


def test_an_existing_out_is_checked_without_being_changed(tmp_path):
    from tracker.outputs import check_output

    out = tmp_path / "kept.json"
    out.write_text("{}")
    assert check_output(out) == out and out.read_text() == "{}"
    fresh = tmp_path / "fresh.json"
    assert check_output(fresh) == fresh and not fresh.exists()  # tried, then removed


def test_calibrate_camera_coverage_extension_checked_first(tmp_path):
    out = tmp_path / "camera.json"
    p = run("calibrate-camera", eval_set("warcry-3") / "calib", "--out", out, "--coverage", tmp_path / "c.txt")
    one_line_error(p, "--coverage", ".txt", ".png")
    assert not out.exists() and p.stdout == ""  # refused before calibrating


@pytest.mark.parametrize("value", ["-5", "0"])
def test_track_refuses_max_frames_below_one(tmp_path, value):
    out = tmp_path / "track.json"
    p = run("track", eval_set("warcry-3"), "--out", out, "--max-frames", value, "--no-progress")
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "--max-frames" in p.stderr and value in p.stderr
    assert not out.exists()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("case", ["file as folder", "read-only", "a folder", "not a database"])
def test_serve_db_that_cannot_be_kept(tmp_path, bad_outs, case):
    if case == "a folder":
        db, words = tmp_path, "is a folder"
    elif case == "not a database":
        db, words = tmp_path / "notes.sqlite", "not a database"
        db.write_bytes(b"these are my notes, not SQLite\n" * 200)
    else:
        db, words = bad_outs[case][0].with_suffix(".sqlite"), bad_outs[case][1]
    p = run("serve", "--port", _free_port(), "--db", db, timeout=120)
    one_line_error(p, "--db", words)
    if case == "not a database":
        assert db.read_bytes().startswith(b"these are my notes")  # left as it was


def test_serve_db_makes_missing_folders(tmp_path):
    from webui.cli import check_database

    db = check_database(str(tmp_path / "new" / "folder" / "rulings.sqlite"))
    assert db.is_file() and db.parent == tmp_path / "new" / "folder"


def test_track_skips_a_jpeg_cut_short_naming_it(tmp_path):
    """A folder of stills with one JPEG cut short (an interrupted copy): OpenCV decodes it
    half grey without an error. It is skipped with a warning naming it; the others are
    judged and written, each under its own file's position."""
    import json
    import shutil

    import cv2

    folder = tmp_path / "game"
    shutil.copytree(eval_set("warcry-3"), folder, ignore=shutil.ignore_patterns("truth.json"))
    cut = sorted((folder / "frames").iterdir())[1]
    data = cut.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    assert cv2.imread(str(cut)) is not None  # what made it pass silently as a grey half
    out = tmp_path / "track.json"
    p = run("track", folder, "--out", out, "--max-frames", 3, "--no-progress")
    assert p.returncode == 0, p.stderr
    warned = [ln for ln in p.stderr.splitlines() if ln.startswith("warning: ") and str(cut) in ln]
    assert len(warned) == 1 and "cut short" in warned[0] and "video" not in warned[0], p.stderr
    doc = json.loads(out.read_text())
    assert [f["frame_index"] for f in doc["frames"]] == [0, 2]
    assert doc["skipped_frames"] == 1 and list(doc["skipped_files"]) == [str(cut)]


def test_calibrate_table_refuses_a_table_photo_cut_short(tmp_path):
    folder = eval_set("warcry-3")
    photo = tmp_path / "table.jpg"
    data = (folder / "table.jpg").read_bytes()
    photo.write_bytes(data[: len(data) // 2])
    p = run("calibrate-table", photo, "--game", folder / "setup.json", "--out", tmp_path / "table.json")
    one_line_error(p, str(photo), "cut short")
    assert "video" not in p.stderr


def test_serve_host_that_does_not_resolve_is_not_called_a_port_in_use():
    p = run("serve", "--host", "no.such.host.invalid", "--port", _free_port(), "--token", "t", timeout=120)
    one_line_error(p, "--host no.such.host.invalid", "cannot be resolved")
    assert "in use" not in p.stderr


def test_serve_port_in_use_is_said_so():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        one_line_error(run("serve", "--port", port, timeout=120), f"port {port}", "in use", "--port")


def test_serve_footage_without_a_game_names_serves_own_option(tmp_path):
    (tmp_path / "notes.txt").write_text("no pictures here")
    p = run("serve", "--footage", tmp_path, "--port", _free_port(), timeout=120)
    one_line_error(p, str(tmp_path), "--footage", "game.yaml")
    assert "--game" not in p.stderr  # serve has no --game


def _state_file(tmp_path, mutate=None, name="state.json"):
    import json

    from test_rules_cli import _state

    d = _state().to_dict()
    if mutate is not None:
        mutate(d)
    p = tmp_path / name
    p.write_text(json.dumps(d))
    return p


@pytest.mark.parametrize("field,mutate", [
    ("fighters[0].x", lambda d: d["fighters"][0].update(x=1e308)),  # GEOS: SIGSEGV / OverflowError
    ("fighters[1].y", lambda d: d["fighters"][1].update(y=-20_000)),
    ("fighters[0].base.width_in", lambda d: d["fighters"][0]["base"].update(width_in=1e300)),
    ("tokens[0].x", lambda d: d["tokens"][0].update(x=10 ** 400)),  # an integer no float holds
    ("terrain[0].footprint[1]", lambda d: d["terrain"][0].update(footprint=[[2, -2], [1e308, -2], [2.5, 2], [2, 2]])),
])
def test_rule_refuses_positions_beyond_any_table(tmp_path, field, mutate):
    p = run("rule", _state_file(tmp_path, mutate), timeout=120)
    one_line_error(p, field)
    assert p.returncode == 2  # not killed by a signal (negative) nor a traceback (1)


def test_rule_accepts_positions_within_the_range(tmp_path):
    p = run("rule", _state_file(tmp_path, lambda d: d["fighters"][0].update(x=9_999.0)), "--question", "control",
            timeout=120)
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("levels", [100_000, 65])
def test_rule_refuses_json_nested_too_deep(tmp_path, levels):
    deep = tmp_path / "deep.json"
    deep.write_text('{"fighters": [], "extra": {"x": ' + "[" * levels + "]" * levels + "}}")
    one_line_error(run("rule", deep, timeout=120), str(deep), "nested more than 64 levels")
    control = tmp_path / "control.json"
    control.write_text("[" * levels + "]" * levels)
    one_line_error(run("rule", _state_file(tmp_path), "--previous", control, timeout=120), str(control), "nested")


def test_rule_quotes_a_huge_bad_value_briefly(tmp_path):
    p = run("rule", _state_file(tmp_path, lambda d: d["fighters"][0].update(id="x" * 1_000_000, side="y" * 1_000_000)),
            timeout=120)
    one_line_error(p, "fighters[0].side")
    assert len(p.stderr) < 400


def test_a_game_config_of_nested_aliases_is_refused(tmp_path):
    from test_webui_bad_bodies import LAUGHS

    game = tmp_path / "game.yaml"
    game.write_text("sides:\n" + "".join(f"  {line}\n" for line in LAUGHS.splitlines()))
    p = run("calibrate-table", eval_set("warcry-3") / "table.jpg", "--game", game, "--out", tmp_path / "t.json")
    one_line_error(p, str(game), "aliases")


def test_the_bundled_game_configs_load_without_aliases():
    import yaml

    from tracker.inputs import load_yaml

    for game in (Path(__file__).resolve().parents[1] / "sample_footage").glob("*/game.yaml"):
        text = game.read_text()
        assert load_yaml(text, str(game)) == yaml.safe_load(text)


def test_a_camera_json_nested_too_deep_is_one_line(tmp_path):
    folder = eval_set("warcry-3")
    camera = tmp_path / "camera.json"
    camera.write_text("[" * 100_000 + "]" * 100_000)
    p = run("calibrate-table", folder / "table.jpg", "--camera", camera, "--game", folder / "setup.json",
            "--out", tmp_path / "table.json")
    one_line_error(p, str(camera))


def test_track_a_folder_without_a_game_names_tracks_options(tmp_path):
    (tmp_path / "notes.txt").write_text("no game here")
    p = run("track", tmp_path, "--no-progress")
    one_line_error(p, str(tmp_path), "game.yaml", "--game, --camera and --table")


def test_serve_runs_a_production_server_and_stops_cleanly(tmp_path):
    """``serve`` answers through waitress (not Flask's development server, which warns
    that it is not for this), streams, and stops on Ctrl+C with exit 0, no traceback."""
    import signal
    import subprocess
    import sys
    import time
    import urllib.request

    port = _free_port()
    p = subprocess.Popen([sys.executable, "-m", "tracker.cli", "serve", "--port", str(port), "--db",
                          str(tmp_path / "g.sqlite")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline, reply = time.monotonic() + 180, None
        while reply is None and time.monotonic() < deadline and p.poll() is None:
            try:
                reply = urllib.request.urlopen(f"http://127.0.0.1:{port}/api/state", timeout=5)
            except OSError:
                time.sleep(0.5)
        assert reply is not None and reply.status == 200, p.poll()
        assert reply.headers["Server"] == "tabletracker"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/stream.mjpg?frames=2", timeout=30) as stream:
            assert stream.read().count(b"Content-Type: image/jpeg") == 2
    finally:
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert "Traceback" not in err and "development server" not in (out + err), err
