"""vision.tag_reader alone, on a public evaluation set's first frame (the shared
renderer's 1080p Warcry table): every token's tag read where it lies, nothing read on
bare mat, and a disc that read nothing not searched again while it looks the same."""

import json

import cv2
import numpy as np
import pytest

from evalsets import eval_set


@pytest.fixture(scope="module")
def table():
    from tracker.pipeline import Pipeline

    folder = eval_set("warcry-1")
    det = Pipeline.from_footage(folder).detector
    frame = cv2.imread(str(sorted((folder / "frames").glob("*.jpg"))[0]))
    truth = json.loads((folder / "truth.json").read_text())["frames"][0]
    return det, frame, truth


def test_each_token_reads_its_own_tag_and_looks_like_a_printed_tag(table):
    det, frame, truth = table
    tokens = [t for t in truth["tokens"] if t.get("tag_id") is not None]
    assert len(tokens) >= 3
    for t in tokens:
        got = det.tags.read(frame, np.array([t["x"], t["y"]]), t["diameter_in"], det.tag_face_floor)
        assert got.tag == t["tag_id"], (t, got)
        assert got.face >= det.tag_face_floor and got.closeup is not None


def test_bare_mat_reads_nothing_and_is_recalled_while_unchanged(table):
    det, frame, truth = table
    stood = [(f["x"], f["y"]) for f in truth["fighters"]] + [(t["x"], t["y"]) for t in truth["tokens"]]
    # A place of the mat at least 2 in from anything on it.
    xy = next(np.array([x, y]) for x in np.arange(2.0, 28.0, 1.0) for y in np.arange(2.0, 20.0, 1.0)
              if min(np.hypot(x - a, y - b) for a, b in stood) > 2.0)
    reader = det.tags
    reader.no_tag_seen = []
    first: list[tuple] = []
    got = reader.recall_or_read(frame, xy, 1.0, det.tag_face_floor, 0, first)
    assert got.tag is None and not got.tag_face(det.tag_face_floor, det.tag_face_cost)
    # No code weighed at all (nothing like a tag to search): kept, and recalled next look.
    assert got.face < det.tag_face_floor and got.cost == np.inf and len(first) == 1
    reader.no_tag_seen = first
    calls = []
    read = reader.read
    reader.read = lambda *a, **k: calls.append(a) or read(*a, **k)
    try:
        again: list[tuple] = []
        got2 = reader.recall_or_read(frame, xy, 1.0, det.tag_face_floor, 1, again)
        assert got2.tag is None and got2.face == got.face and not calls and len(again) == 1
        # A close-up that changed (a hand over it) is read again.
        reader.no_tag_seen = [(*first[0][:3], 255 - first[0][3], first[0][4])]
        reader.recall_or_read(frame, xy, 1.0, det.tag_face_floor, 2, [])
        assert len(calls) == 1
    finally:
        del reader.read
