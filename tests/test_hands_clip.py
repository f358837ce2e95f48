"""Through the bundled clip, with hands sweeping over fighters in 205 of its 360 frames
and moving some of them: no phantom fighter is ever confirmed, no two fighters swap
ids, every fighter keeps one id, and the fighter taken off the table is reported
removed. Checked against the renderer's truth. Both ways the pipeline runs: every full
look made at once (offline, the CLI), and full looks in the background while the frames
that come meanwhile are followed (the live player), each look joining four frames after
the frame it looked at (~270 ms at 15 frames/s: a loaded machine's full look; the worker's
timing is made repeatable here, the worker process itself is tested in test_motion.py)."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from evalsets import match
from tracker.sources import open_source

FRAMES = 270  # past the take-down at frame 238, and most hand sweeps


@pytest.fixture(scope="module", params=[False, True], ids=["looks-at-once", "looks-in-background"])
def run(calibrated, footage, request):
    truth = json.loads((footage / "truth.json").read_text())
    pipe = calibrated.fresh()
    pipe.background = request.param
    seen = defaultdict(set)  # track id -> truth ids it was matched to
    per_frame_recall = []
    if request.param:
        pipe.look_delay_frames = 4
    for index, t, frame in open_source(footage):
        if index >= FRAMES:
            break
        state = pipe.process(frame, index, t).state
        tf = truth["frames"][index]["fighters"]
        got = state.fighters
        pairs = match([(f["x"], f["y"]) for f in tf], [(f.x, f.y) for f in got])
        for i, j, _ in pairs:
            seen[got[j].id].add(tf[i]["id"])
        visible = [k for k, f in enumerate(tf) if not f["occluded"]]
        if index >= 2 and visible:
            per_frame_recall.append(sum(i in visible for i, _, _ in pairs) / len(visible))
    pipe.close()
    if request.param:
        assert pipe.background_looks >= 10  # the looks did run beside the frames, and joined
    return truth, pipe, seen, per_frame_recall


def test_no_phantom_fighter_is_ever_confirmed(run):
    truth, pipe, seen, _ = run
    confirmed = {e["subject"] for e in pipe.tracker.events_as_dicts() if e["kind"] == "placed"}
    assert len(confirmed) <= len(truth["frames"][0]["fighters"])
    assert all(seen[i] for i in confirmed)  # every fighter the tracker confirmed is a real one


def test_no_identity_swaps(run):
    _, _, seen, _ = run
    assert all(len(truth_ids) == 1 for truth_ids in seen.values()), dict(seen)
    owners = defaultdict(set)
    for track, truth_ids in seen.items():
        owners[next(iter(truth_ids))].add(track)
    assert all(len(tracks) == 1 for tracks in owners.values()), dict(owners)


def test_fighters_are_found_through_the_hands(run):
    _, _, _, recall = run
    assert min(recall) >= 0.8 and sum(recall) / len(recall) >= 0.98


def test_the_fighter_taken_down_is_removed_and_the_others_stay(run):
    truth, pipe, seen, _ = run
    gone = {f["id"] for f in truth["frames"][0]["fighters"]} - {f["id"] for f in truth["frames"][FRAMES - 1]["fighters"]}
    # A fighter lifted away under a hand may be reported removed and then back, moved,
    # under its own id; what counts is who is on the table at the end.
    last = {}
    for e in pipe.tracker.events_as_dicts():
        if e["kind"] in ("placed", "moved", "removed"):
            last[e["subject"]] = e["kind"]
    off_table = {next(iter(seen[t])) for t, kind in last.items() if kind == "removed" and seen[t]}
    assert gone and off_table == gone


def test_treasure_pick_up_is_an_event_of_the_right_fighter(run):
    truth, pipe, seen, _ = run
    first = next((fr, f) for fr in truth["frames"] for f in fr["fighters"] if f["carrying"])
    frame, carrier = first
    token = next(k for k in truth["frames"][0]["tokens"] if k["id"] == carrier["carrying"])
    picks = [e for e in pipe.tracker.events_as_dicts() if e["kind"] == "picked up treasure"]
    assert len(picks) == 1
    assert seen[picks[0]["subject"]] == {carrier["id"]}
    assert picks[0]["token"] == f"treasure-{token['tag_id']}"
    assert frame["frame"] <= picks[0]["frame"] <= frame["frame"] + 30  # hands may hide it for a while
