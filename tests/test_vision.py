"""Detection's new stages (tracker/vision) on real rendered pictures of the shared sets."""

from dataclasses import replace

import cv2
import numpy as np
import pytest

from evalsets import eval_set, truth
from tracker.config import TokenStyle
from tracker.detection import KIND_TREASURE
from tracker.vision.colour import detector_lab as _lab
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

    import tracker.vision.bare
    import tracker.vision.colour
    import tracker.vision.files
    import tracker.vision.pursuit
    import tracker.vision.remap
    import tracker.vision.rim_fit
    import tracker.vision.stands
    import tracker.vision.tag_match
    import tracker.vision.tags
    import tracker.vision.tokens

    for mod in (tracker.vision.bare, tracker.vision.colour, tracker.vision.files, tracker.vision.pursuit, tracker.vision.remap, tracker.vision.rim_fit, tracker.vision.stands,
                tracker.vision.tag_match, tracker.vision.tags, tracker.vision.tokens):
        failed, tried = doctest.testmod(mod)
        assert tried > 0 and failed == 0, mod.__name__


def test_a_token_of_a_rims_own_colour_is_told_by_its_flat_middle():
    # A side whose rim is the white of the table's plain objectives: the edge cannot tell a
    # token from a base, the middle can. Samples in face_samples' layout (INNER middle
    # samples, then as many round the edge), in the detector's Lab.
    from tracker.vision.tokens import INNER, TokenStyles

    # (colours as a tuning table's camera saw its white objectives and a side's white rim)
    white = np.array([80.8, 2.0, 10.0], np.float32)
    styles = TokenStyles(("objective",), ("white",), white[None])
    white_rim = np.array([[84.7, 1.0, 10.0]], np.float32)
    rng = np.random.default_rng(0)
    edge = white_rim * rng.uniform(0.95, 1.0, (INNER, 1))      # the edge: as near the rim as the token
    flat = white * rng.uniform(0.96, 1.02, (INNER, 1))          # printed card, evenly lit
    folds = white * rng.uniform(0.72, 1.05, (INNER, 1))         # a white miniature's folds and shadows
    red_rim = np.array([[40.0, 45.0, 30.0]], np.float32)
    assert styles.face_kind(np.r_[flat, edge], white_rim) == ("objective", "white")
    assert styles.face_kind(np.r_[folds, edge], white_rim) is None
    assert styles.face_kind(np.r_[flat, edge], red_rim) == ("objective", "white")  # a red rim is no white edge
    red_edge = np.repeat(red_rim, INNER, axis=0)
    assert styles.face_kind(np.r_[flat, red_edge], np.r_[white_rim, red_rim]) is None  # white miniature, red rim


def test_a_softer_picture_lowers_the_printed_tag_threshold_as_blur_lowers_contrast():
    # a tag's border is one cell wide: blur of sigma s leaves erf(cell / (2 sqrt 2 s)) of
    # its contrast, and the face score needed of a tag falls with it
    from pathlib import Path

    pipe = Pipeline.from_footage(Path(__file__).resolve().parents[1] / "sample_footage" / "warcry-demo")
    det = pipe.detector
    assert det.blur_in is not None and 0.005 < det.blur_in < 0.05  # read off the table markers at set-up
    floors = []
    for blur in (None, 0.01, 0.03, 0.06, 0.1):
        det.blur_in = blur
        floors.append(det.tag_face_floor)
    assert floors[0] == det.tag_face_min and abs(floors[1] - det.tag_face_min) < 0.01
    assert floors[1] > floors[2] > floors[3] > floors[4] > 0.2 * det.tag_face_min


def test_a_tag_read_off_centre_is_read_once_the_disc_is_recentred():
    # A 1 in token disc with a 0.66 in tag turned 45 degrees, its close-up centred 0.25 in
    # off the disc toward a corner of the tag (on a 4K tuning table's render 0.13 in was
    # enough, with its blur and noise): the cut-out cannot take the tag's square alone
    # there; centred on the disc's edge, it reads it.
    from calibration.markers import get_dictionary
    from tracker.vision.tags import disc_centre, read_cut_out

    S, diam = 124.0, 1.0  # the close-up's pixels an inch at 4K
    big = np.full((400, 400), 90, np.uint8)  # a dark mat
    rng = np.random.default_rng(1)
    big = np.clip(big + cv2.GaussianBlur(rng.normal(0, 8, big.shape), (0, 0), 2), 0, 255).astype(np.uint8)
    cx, cy = 200.0, 200.0
    cv2.circle(big, (200, 200), int(diam / 2 * S), 235, -1, cv2.LINE_AA)
    side = int(0.66 * S)
    tag = get_dictionary("DICT_4X4_100").generateImageMarker(55, side)
    M = cv2.getRotationMatrix2D((side / 2, side / 2), 45, 1.0)
    M[:, 2] += [cx - side / 2, cy - side / 2]
    warped = cv2.warpAffine(tag, M, big.shape[::-1], flags=cv2.INTER_AREA, borderValue=255)
    mask = cv2.warpAffine(np.full_like(tag, 255), M, big.shape[::-1], flags=cv2.INTER_NEAREST)
    big[mask > 0] = warped[mask > 0]
    big = cv2.GaussianBlur(big, (0, 0), 1.0)
    half = int(0.6 * diam * S)
    off = (int(cx + 0.25 * S * 0.7071), int(cy - 0.25 * S * 0.7071))  # 0.25 in off the disc's centre
    closeup = big[off[1] - half:off[1] + half + 1, off[0] - half:off[0] + half + 1]
    assert read_cut_out(closeup, S, diam, "DICT_4X4_100")[1] is None
    c = disc_centre(closeup, S, diam)
    assert c is not None
    found = (off[0] - half + c[0], off[1] - half + c[1])
    assert np.hypot(found[0] - cx, found[1] - cy) < 1.0, found
    x0, y0 = int(round(found[0])) - half, int(round(found[1])) - half
    assert read_cut_out(big[y0:y0 + 2 * half + 1, x0:x0 + 2 * half + 1], S, diam, "DICT_4X4_100") == (True, 55)


def test_a_base_on_an_untyped_untagged_piece_is_still_found(warcry2):
    """A piece found without a tag (type "unknown") has no known height until a judge
    types it; the detector looks at it as floor meanwhile (a flat print patch with
    straight edges is taken for one, and masking it hid every base standing on it)."""
    from tracker.detection import KIND_BASE
    from tracker.world import TerrainPiece

    folder = eval_set("warcry-2")
    frame = cv2.imread(str(sorted((folder / "frames").iterdir())[0]))
    det = warcry2.detector
    kept = det.terrain
    first = det.detect(frame)
    bases = first.xyz[first.kind == KIND_BASE]
    x, y = bases[0, :2]
    patch = TerrainPiece("untagged-9", "unknown", ((x - 1.5, y - 1.5), (x + 1.5, y - 1.5), (x + 1.5, y + 1.5),
                                                   (x - 1.5, y + 1.5)), 0.0)
    try:
        det.set_terrain(kept + (patch,))
        again = det.detect(frame)
        typed = replace(patch, type="obstacle", height_in=2.0)
        det.set_terrain(kept + (typed,))
        hidden = det.detect(frame)
    finally:
        det.set_terrain(kept)
    near = lambda d: np.hypot(*(d.xyz[d.kind == KIND_BASE, :2] - (x, y)).T).min(initial=9.0)  # noqa: E731
    assert near(again) < 0.1  # still found where it was
    assert near(hidden) > 0.5  # typed as a 2 in obstacle, it is terrain (its top is no floor)
