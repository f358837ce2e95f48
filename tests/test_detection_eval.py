"""Detection on the independent evaluation sets (another renderer's images), through the
real calibration: the tracker must see a table it was not built on. Truth is read only
to score."""

import cv2
import numpy as np
import pytest

from evalsets import eval_set, match, truth
from tracker.detection import KIND_BASE, KIND_NAMES
from tracker.pipeline import Pipeline


@pytest.fixture(scope="module", params=["warcry-1", "warcry-3"])
def scene(request):
    folder = eval_set(request.param)
    return folder, Pipeline.from_footage(folder), truth(folder)


def test_bases_sides_and_positions(scene):
    folder, pipe, t = scene
    n_truth = n_pred = n_match = n_side = 0
    errs = []
    for fr in t["frames"][:4]:
        img = cv2.imread(str(folder / "frames" / f"{fr['frame']:06d}.jpg"))
        d = pipe.detector.detect(img)
        b = d[d.kind == KIND_BASE]
        visible = [f for f in fr["fighters"] if not f["occluded"]]
        pairs = match([(f["x"], f["y"]) for f in visible], b.xyz)
        n_truth += len(visible)
        n_pred += len(b)
        n_match += len(pairs)
        n_side += sum(visible[i]["team"] == b.side[j] for i, j, _ in pairs)
        errs += [dist for *_, dist in pairs]
    assert n_match / n_truth >= 0.9
    assert n_match / n_pred >= 0.98
    assert n_side / n_match >= 0.95
    assert np.median(errs) <= 0.06


def test_tokens_with_their_kind_and_tag(scene):
    folder, pipe, t = scene
    fr = t["frames"][0]
    d = pipe.detector.detect(cv2.imread(str(folder / "frames" / "000000.jpg")))
    toks = d[d.kind != KIND_BASE]
    pairs = match([(k["x"], k["y"]) for k in fr["tokens"]], toks.xyz)
    assert len(pairs) == len(fr["tokens"])
    for i, j, dist in pairs:
        assert KIND_NAMES[int(toks.kind[j])] == fr["tokens"][i]["kind"]
        want = fr["tokens"][i]["tag_id"]
        assert toks.tag_id[j] == (want if want is not None else -1)
        assert dist < 0.1


def test_terrain_poses_from_tags(scene):
    folder, pipe, t = scene
    got = {p.tag_id: np.asarray(p.footprint) for p in pipe.setup.terrain}
    seen = [tt for tt in t["terrain"] if tt["tag_id"] in got]
    assert len(seen) >= len(t["terrain"]) - 1
    for tt in seen:
        assert np.abs(got[tt["tag_id"]] - np.asarray(tt["footprint"])).max() < 0.06
