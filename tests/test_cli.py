"""The command line as a user meets it: mistakes give one line and a non-zero exit."""

import json
import shutil
import subprocess
import sys

import pytest

from evalsets import eval_set, match, truth


def run(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "tracker.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def one_line_error(p, *needles):
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr
    assert "Traceback" not in p.stderr
    for n in needles:
        assert n in lines[0]


def test_missing_footage(tmp_path):
    one_line_error(run("track", tmp_path / "nope"), "nope")


def test_corrupt_video(tmp_path):
    src = eval_set("warcry-3")
    folder = tmp_path / "game"
    shutil.copytree(src, folder, ignore=shutil.ignore_patterns("frames", "truth.json"))
    (folder / "clip.mp4").write_bytes(b"\x00garbage" * 5000)
    one_line_error(run("track", folder, "--no-progress"), "not a readable video")


def test_config_typo(tmp_path):
    src = eval_set("warcry-3")
    folder = tmp_path / "game"
    shutil.copytree(src, folder, ignore=shutil.ignore_patterns("truth.json"))
    data = json.loads((folder / "setup.json").read_text())
    data["terain_library"] = data.pop("terrain_library")
    (folder / "setup.json").write_text(json.dumps(data))
    one_line_error(run("track", folder, "--no-progress"), "terain_library", "did you mean 'terrain_library'")


def test_camera_that_does_not_open():
    one_line_error(run("serve", "--source", "7"), "camera 7")


def test_track_eval_set_writes_predictions_the_shared_scorer_reads(tmp_path):
    folder = eval_set("warcry-3")
    out, preds = tmp_path / "track.json", tmp_path / "preds.json"
    p = run("track", folder, "--out", out, "--eval-output", preds, "--max-frames", 3, "--no-progress")
    assert p.returncode == 0, p.stderr
    score = subprocess.run([sys.executable, str(folder.parents[1] / "score.py"), str(folder), str(preds)],
                           capture_output=True, text=True, check=True)
    summary = json.loads(score.stdout.strip().splitlines()[-1])
    assert summary["precision"] >= 0.98 and summary["recall"] >= 0.3  # 3 of 8 frames given
    states = json.loads(out.read_text())["frames"]
    assert len(states) == 3 and states[-1]["fighters"]


def test_track_judges_each_still_on_its_own(tmp_path):
    """A folder of photographs: the first one's state is whole (no frames of waiting for
    a fighter to be confirmed), and every state holds what its own picture shows."""
    folder = eval_set("warcry-1")
    out = tmp_path / "track.json"
    p = run("track", folder, "--out", out, "--max-frames", 2, "--no-progress")
    assert p.returncode == 0, p.stderr
    states = json.loads(out.read_text())["frames"]
    frames = truth(folder)["frames"]
    for state, true in zip(states, frames):
        seen = [f for f in true["fighters"] if f["visible_fraction"] >= 0.5]
        found = match([(f["x"], f["y"]) for f in seen], [(f["x"], f["y"]) for f in state["fighters"]])
        assert len(found) >= 0.95 * len(seen), (state["frame_index"], len(found), len(seen))
        assert len(state["fighters"]) <= len(true["fighters"]) + 1
        assert all(t["id"] for t in state["tokens"]) and state["tokens"]
