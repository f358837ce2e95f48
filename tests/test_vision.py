"""Detection's new stages (tracker/vision) on real rendered pictures of the shared sets."""

from dataclasses import replace

import cv2
import numpy as np
import pytest

from evalsets import eval_set, truth
from tracker.config import TokenStyle
from tracker.detection import KIND_TREASURE, _lab
from tracker.pipeline import Pipeline
from tracker.vision.colour import TableLight, paper_white


@pytest.fixture(scope="module")
def warcry2(tmp_path_factory):
    import os

    os.environ.setdefault("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    return Pipeline.from_footage(eval_set("warcry-2"))


def test_paper_white_reads_the_markers_white_cells(warcry2):
    folder = eval_set("warcry-2")
    table = cv2.imread(str(folder / "table.jpg"))
    paper = paper_white(table, warcry2.camera, warcry2.config.table.markers)
    # The markers' white paper, brighter than the mat's median and near grey.
    mat = np.median(table.reshape(-1, 3), axis=0)
    assert paper.sum() > mat.sum() + 60
    light = TableLight(paper)
    assert np.all(np.abs(light.gain - 1) < 0.15) and abs(light.gain.mean() - 1) < 1e-9
    # A picture with no marker in it gives no white, and a white far from grey is not paper.
    assert paper_white(np.zeros((50, 50, 3), np.uint8), warcry2.camera, warcry2.config.table.markers) is None
    assert np.all(TableLight(np.array([250.0, 80.0, 60.0])).gain == 1.0)


def test_white_balance_follows_a_warm_light():
    """A camera that renders white warm (more red) renders a blue rim the same way."""
    light = TableLight(np.array([150.0, 170.0, 200.0]))
    b, g, r = light.as_seen((190, 95, 25))
    assert b < 190 and r > 25


def test_plain_tokens_told_from_bases_by_their_configured_colour(warcry2):
    """warcry-2's untagged treasures are gold discs; with that colour configured, each
    reads as a treasure where it lies, and no 25 mm base (a token's size; its miniature
    wears many paints, gold among them) reads as one. (A larger base's gold miniature
    may: the rim round it, beyond a token's disc, says base; _settle_discs.)"""
    det = warcry2.detector
    spec = det.config.tokens["treasure"]
    styled = replace(spec, untagged_styles=(TokenStyle("gold", (45, 165, 210)),))
    det.config = replace(det.config, tokens={**det.config.tokens, "treasure": styled})
    det.set_background(det._background_bgr)
    try:
        folder = eval_set("warcry-2")
        scene = truth(folder)
        gold_hits, base_hits, bases = 0, 0, 0
        for f in scene["frames"][:4]:
            frame = cv2.imread(str(folder / "frames" / f"{f['frame']:06d}.jpg"))
            lab = _lab(det.floor.sample(det.relight(frame)))
            for t in f["tokens"]:
                if t["tag_id"] is None and t["z"] == 0:
                    gold_hits += det._styled_token(lab, np.array([t["x"], t["y"]])) == KIND_TREASURE
            for b in f["fighters"]:
                if b["z"] == 0 and b["visible_fraction"] >= 0.5 and b["base_mm"] <= 30:
                    bases += 1
                    base_hits += det._styled_token(lab, np.array([b["x"], b["y"]])) is not None
        assert gold_hits == 8  # two gold treasures in each of 4 frames
        assert bases == 8 and base_hits == 0  # two 25 mm bases on the floor, in each of 4 frames
    finally:
        det.config = replace(det.config, tokens={**det.config.tokens, "treasure": spec})
        det.set_background(det._background_bgr)


def test_vision_doctests():
    import doctest

    import tracker.vision.colour
    import tracker.vision.remap
    import tracker.vision.tokens

    for mod in (tracker.vision.colour, tracker.vision.remap, tracker.vision.tokens):
        failed, tried = doctest.testmod(mod)
        assert tried > 0 and failed == 0, mod.__name__
