"""The learned base refiner (``tracker/vision/refiner.py``) on pictures it was not trained
on: a public evaluation set (the shared renderer, whose tuning split trained it) and our
own renderer's bundled clip (another look altogether). Guesses put 0.3 in off each true
round base come back near it, and the crop it reads faces the camera; it tells a base of
its crop's rim colour from another side's and from bare table; the detector takes its
readings where its rules saw too little (a doubt, an unexplained patch, a weak base's
side)."""

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from evalsets import eval_set
from tracker.sources import open_source
from tracker.vision.base_crops import CROP_PX, base_crop, camera_nadir, crop_axes
from tracker.vision.refiner import MODEL_PATH, SIZES_MM, BaseRefiner


def _frame(folder):
    """The first frame of a footage folder (frames/ or clip.mp4), as the tracker reads it."""
    with open_source(folder) as src:
        return next(iter(src))[2]


def _guesses_back(folder):
    """(errors before, errors after, sizes right, sizes) for guesses 0.3 in off every
    true round base at least nine tenths in sight, in eight directions in turn."""
    from tracker.pipeline import Pipeline

    det = Pipeline.from_footage(folder).detector
    truth = json.loads((folder / "truth.json").read_text())["frames"][0]
    frame = _frame(folder)
    empty = cv2.imread(str(folder / "table.jpg"))
    nadir = camera_nadir(det.camera)
    colour = {s.index: det.light.as_seen(s.rim_bgr) for s in det.config.sides}
    bases = [f for f in truth["fighters"] if f.get("visible_fraction", 1.0) >= 0.9
             and f.get("shape", "round") == "round" and float(f["base_mm"]) in SIZES_MM]
    assert len(bases) >= 6
    xy = np.array([[f["x"], f["y"]] for f in bases])
    a = np.arange(len(bases)) * (np.pi / 4)
    guess = xy + 0.3 * np.column_stack([np.cos(a), np.sin(a)])
    top = np.column_stack([guess, [f.get("z", 0.0) + det.config.base_thickness_in for f in bases]])
    got, sizes = BaseRefiner().refine(det.camera, frame, empty, top, nadir,
                                      np.array([colour[f["team"]] for f in bases], float))
    before = np.hypot(*(guess - xy).T)
    after = np.hypot(*(got - xy).T)
    right = sum(SIZES_MM[int(np.argmax(p))] == float(f["base_mm"]) for p, f in zip(sizes, bases))
    return before, after, right, len(bases)


def test_the_model_is_shipped_and_travels_pickled():
    assert MODEL_PATH.exists() and MODEL_PATH.stat().st_size < 2_000_000
    # (The live pipeline's look worker gets the detector pickled, its refiner with it.)
    import pickle

    crops = np.random.default_rng(0).random((2, 9, CROP_PX, CROP_PX), np.float32)
    a, b = BaseRefiner(), pickle.loads(pickle.dumps(BaseRefiner()))
    out = []
    for r in (a, b):
        r.net.setInput(crops)
        out.append(r.net.forward(["offset", "size_logits"]))
    assert all(np.array_equal(x, y) for x, y in zip(out[0], out[1]))


def test_guesses_off_a_public_tables_bases_come_back_near_them():
    before, after, right, n = _guesses_back(eval_set("warcry-1"))
    assert np.allclose(before, 0.3)
    # Read from a third of an inch off: back within a tenth for nearly every base.
    assert np.median(after) < 0.05 and np.mean(after < 0.1) >= 0.9, after.round(3)
    assert right >= 0.8 * n


def test_guesses_off_our_own_renders_bases_come_back_nearer():
    # Another renderer's look (mat, rims, miniatures, light): nearer, if less near.
    before, after, _, _ = _guesses_back(Path(__file__).resolve().parents[1] / "sample_footage" / "warcry-demo")
    assert np.median(after) < 0.5 * np.median(before), after.round(3)


def test_a_crop_faces_the_camera():
    """Row 0 of a crop is its side toward the point under the camera, column steps run
    across: a base seen 10 in to the camera's +x has its crop's rows running +x."""
    across, away = crop_axes(np.array([20.0, 10.0]), np.array([10.0, 10.0]))
    assert np.allclose(away, [1, 0]) and np.allclose(across, [0, 1])

    class Flat:  # a camera looking straight down, 10 px an inch: world (x, y) -> (10x, 10y)
        def project(self, xyz):
            return np.asarray(xyz, float)[:, :2] * 10.0

    frame = np.zeros((400, 400, 3), np.uint8)
    cv2.circle(frame, (190, 100), 5, (0, 0, 255), -1)  # a red dot 1 in toward the camera of (20, 10)
    crop = base_crop(Flat(), frame, frame, np.array([20.0, 10.0]), 0.0, np.array([10.0, 10.0]), (0, 0, 0))
    assert crop.shape == (CROP_PX, CROP_PX, 9)
    red = crop[..., 2] > 0.5
    rows, cols = np.nonzero(red)
    # The dot's middle 1 in (20 crop px) up from the crop's middle, on its middle column.
    assert abs(rows.mean() - ((CROP_PX - 1) / 2 - 20)) < 0.5 and abs(cols.mean() - (CROP_PX - 1) / 2) < 0.5
    assert not crop[..., 6:].any()  # (the rim colour given: black)


def test_the_detector_places_again_only_bases_placed_from_little_rim():
    """``TableDetector._refined``: a round base fitted on under ``refine_below`` of its rim
    (here one put 0.3 in off its true place and marked so, its stated sigma a patch's)
    comes back near its truth and keeps a sigma at least the refiner's; one fitted on
    more of its rim stays put."""
    from tracker.detection import KIND_BASE, REFINED_SIGMA_IN
    from tracker.pipeline import Pipeline

    folder = eval_set("warcry-1")
    det = Pipeline.from_footage(folder).detector
    assert det.refiner is not None
    frame = _frame(folder)
    truth = json.loads((folder / "truth.json").read_text())["frames"][0]
    found = det.detect(frame)
    rounds = np.flatnonzero((found.kind == KIND_BASE) & (found.shape == 0) & (found.score >= det.refine_below))
    assert len(rounds) >= 4
    weak, strong = rounds[:2], rounds[2:4]
    true_xy = []
    for i in weak:
        t = min(truth["fighters"], key=lambda f: np.hypot(f["x"] - found.xyz[i, 0], f["y"] - found.xyz[i, 1]))
        true_xy.append((t["x"], t["y"]))
    true_xy = np.array(true_xy)
    found.xyz[weak, 0] = true_xy[:, 0] + 0.3
    found.xyz[weak, 1] = true_xy[:, 1]
    found.score[weak] = 0.2
    found.sigma_in[weak] = 0.2  # (as a patch's: the refiner's place then counts nearly alone)
    before = found.xyz[strong, :2] + np.array([0.3, 0.0])
    found.xyz[strong, :2] = before
    det._refined(frame, found)
    assert np.all(np.hypot(*(found.xyz[weak, :2] - true_xy).T) < 0.1)
    assert np.all(found.sigma_in[weak] >= REFINED_SIGMA_IN)
    assert np.array_equal(found.xyz[strong, :2], before)


def test_a_weak_base_far_off_comes_back_in_two_reads():
    """A weak round base placed 0.65 in off (a miniature's patch pulls it so far): beyond
    the half inch the refiner was taught, its first read lands near the base, its second,
    centred there, on it. Read once and moved only within half an inch (as before), most
    stay where they were."""
    from tracker.detection import KIND_BASE
    from tracker.pipeline import Pipeline

    folder = eval_set("warcry-1")
    det = Pipeline.from_footage(folder).detector
    frame = _frame(folder)
    truth = json.loads((folder / "truth.json").read_text())["frames"][0]
    found = det.detect(frame)
    rounds = np.flatnonzero((found.kind == KIND_BASE) & (found.shape == 0) & (found.score >= det.refine_below))
    weak = rounds[:4]
    assert len(weak) == 4
    true_xy = np.array([min(((f["x"], f["y"]) for f in truth["fighters"]),
                            key=lambda t: np.hypot(t[0] - found.xyz[i, 0], t[1] - found.xyz[i, 1])) for i in weak])
    a = np.arange(len(weak)) * (np.pi / 2)  # (off in four directions)
    off = true_xy + 0.65 * np.column_stack([np.cos(a), np.sin(a)])
    found.score[weak] = 0.2
    found.sigma_in[weak] = 0.2
    once = found[np.arange(len(found))]
    found.xyz[weak, :2] = off
    once.xyz[weak, :2] = off
    det._refined(frame, found)
    assert np.all(np.hypot(*(found.xyz[weak, :2] - true_xy).T) < 0.1), found.xyz[weak, :2] - true_xy
    det.refine_reads, det.refine_reach_in = 1, 0.5
    det._refined(frame, once)
    assert np.sum(np.hypot(*(once.xyz[weak, :2] - true_xy).T) > 0.3) >= 2


def test_a_base_read_at_the_wrong_size_says_so_in_its_sigma():
    """``TableDetector._size_doubted``: round bases found on a public table, marked as
    fitted on little rim with a sigma of 0.03 in; each given a wrong size of its side's
    (the radius off by 0.12 in or more) has its sigma raised past 0.08 in, for the rules'
    margin; those left at their true size nearly all keep a sigma under 0.05 in. Off,
    nothing moves."""
    from tracker.detection import KIND_BASE
    from tracker.pipeline import Pipeline

    folder = eval_set("warcry-1")
    det = Pipeline.from_footage(folder).detector
    frame = _frame(folder)
    truth = json.loads((folder / "truth.json").read_text())["frames"][0]
    found = det.detect(frame)
    rounds = [i for i in np.flatnonzero((found.kind == KIND_BASE) & (found.shape == 0))
              if min(np.hypot(f["x"] - found.xyz[i, 0], f["y"] - found.xyz[i, 1]) for f in truth["fighters"]) < 0.1]
    fields = {si: sorted(set(sz)) for si, _, sz in det._side_lab()}
    wrong, right = [], []
    for i in rounds:
        other = [mm for mm in fields[int(found.side[i])] if abs(mm - found.base_mm[i]) >= 6]
        if other and len(wrong) < 4:
            found.base_mm[i] = other[0]
            wrong.append(i)
        else:
            right.append(i)
    assert len(wrong) == 4 and len(right) >= 4
    found.score[rounds] = 0.2
    found.sigma_in[rounds] = 0.03
    off = found[np.arange(len(found))]
    det._size_doubted(frame, found)
    assert np.all(found.sigma_in[wrong] > 0.08), found.sigma_in[wrong]
    # (The refiner reads an occasional true size unsure too: at most one in five widened.)
    assert np.mean(found.sigma_in[right] < 0.05) >= 0.8 and np.median(found.sigma_in[right]) < 0.035, \
        found.sigma_in[right]
    det.size_doubt_below = 0.0
    det._size_doubted(frame, off)
    assert np.all(off.sigma_in[rounds] == 0.03)


def _presence(folder, frame_index=0):
    """The refiner's probability of a base of the crop's rim colour, (at true round bases
    at least nine tenths in sight under their own side's colour, the same under another
    side's, at places of the floor over 1.5 in from every fighter and token)."""
    from tracker.pipeline import Pipeline

    det = Pipeline.from_footage(folder).detector
    truth = json.loads((folder / "truth.json").read_text())["frames"][frame_index]
    with open_source(folder) as src:
        frame = next(f for i, _, f in src if i == frame_index)
    empty = cv2.imread(str(folder / "table.jpg"))
    nadir = camera_nadir(det.camera)
    sides = [s.index for s in det.config.sides]
    colour = {s.index: det.light.as_seen(s.rim_bgr) for s in det.config.sides}
    lift = det.config.base_thickness_in
    bases = [f for f in truth["fighters"] if f.get("visible_fraction", 1.0) >= 0.9
             and f.get("shape", "round") == "round" and float(f["base_mm"]) in SIZES_MM]
    other = [sides[(sides.index(f["team"]) + 1) % len(sides)] for f in bases]
    things = np.array([[f["x"], f["y"]] for f in truth["fighters"]] + [[t["x"], t["y"]] for t in truth.get("tokens", [])])
    rng = np.random.default_rng(0)
    w, h = det.config.table.play_area_in
    bare = [p for p in rng.random((200, 2)) * (w, h) if np.min(np.hypot(*(things - p).T)) > 1.5][:40]
    ref = BaseRefiner()

    def read(xy, z, sides_of):
        top = np.column_stack([np.asarray(xy, float), np.asarray(z, float) + lift])
        return ref.read(det.camera, frame, empty, top, nadir, np.array([colour[s] for s in sides_of], float))[2]

    xy, z = [[f["x"], f["y"]] for f in bases], [f["z"] for f in bases]
    return (read(xy, z, [f["team"] for f in bases]), read(xy, z, other),
            read(bare, np.zeros(len(bare)), [sides[k % len(sides)] for k in range(len(bare))]))


def test_the_refiner_tells_a_base_of_its_sides_rim_from_another_sides_and_from_bare_table():
    """Its third output: whether a round base whose rim has the crop's colour is there at
    all, the side read from the rim, not from the miniature's paint."""
    own, other, bare = _presence(eval_set("warcry-2"))
    assert len(own) >= 6 and len(bare) >= 20
    assert np.mean(own >= 0.9) >= 0.9, own.round(2)
    assert np.mean(other < 0.5) >= 0.9, other.round(2)
    assert np.all(bare < 0.5), bare.round(2)


def test_the_refiner_tells_bases_on_our_own_renders_too():
    own, other, bare = _presence(Path(__file__).resolve().parents[1] / "sample_footage" / "warcry-demo")
    assert np.mean(own >= 0.9) >= 0.9 and np.mean(other < 0.5) >= 0.9, (own.round(2), other.round(2))
    assert np.all(bare < 0.5), bare.round(2)


def test_a_patch_the_pursuit_could_not_name_becomes_the_base_the_refiner_reads_there():
    """``TableDetector._doubts_read``: a doubt left on a base's miniature (0.35 in off its
    centre, away from the camera), its base not found, becomes that base, of its side,
    near its centre; a second doubt on it (another outline's patch, its sides the other
    sides') does not make a second base; one on bare table stays a doubt."""
    from tracker.detection import KIND_BASE
    from tracker.detection.learned import _Patch
    from tracker.pipeline import Pipeline

    folder = eval_set("warcry-1")
    det = Pipeline.from_footage(folder).detector
    frame = _frame(folder)
    truth = json.loads((folder / "truth.json").read_text())["frames"][0]
    found = det.detect(frame)
    nadir = camera_nadir(det.camera)
    sides = [s.index for s in det.config.sides]
    named_right = 0
    bases = [f for f in truth["fighters"] if f["visible_fraction"] >= 0.9 and f.get("shape", "round") == "round"][:4]
    for f in bases:
        xy = np.array([f["x"], f["y"]])
        others = found[(found.kind == KIND_BASE) & (np.hypot(*(found.xyz[:, :2] - xy).T) > 0.5)]
        _, away = crop_axes(xy, nadir)
        on_miniature = xy + 0.35 * away
        r = f["base_mm"] / 25.4 / 2
        wrong = [s for s in sides if s != f["team"]]
        bare = xy + (0.0, 4.0) if xy[1] < 11 else xy - (0.0, 4.0)
        det._doubts = [_Patch(*on_miniature, f["z"], r, [f["team"]], "round", True),
                       _Patch(*on_miniature, f["z"], r, wrong, "round", True),
                       _Patch(*bare, 0.0, r, [f["team"]], "round", True)]
        named, left = det._doubts_read(frame, others, [0, 1, 2])
        assert len(named) == 1 and left == [1, 2], (f, named.xyz, left)
        assert named.side[0] == f["team"] and named.from_foreground[0] and named.sigma_in[0] > 0
        named_right += np.hypot(*(named.xyz[0, :2] - xy)) < 0.15
    assert named_right == len(bases)


def test_a_base_given_another_sides_colour_is_read_back_to_its_own():
    """``TableDetector._sides_read``: round bases that carry another side's name (as a
    miniature's paint of that colour can give them) take the side the refiner reads from
    their rim, the old one a rival: every round base (``read_sides_all``), or only those
    fitted on little rim, the others left to their fits."""
    from tracker.detection import KIND_BASE
    from tracker.pipeline import Pipeline

    folder = eval_set("warcry-2")
    det = Pipeline.from_footage(folder).detector
    frame = _frame(folder)
    found = det.detect(frame)
    rounds = np.flatnonzero((found.kind == KIND_BASE) & (found.shape == 0) & (found.score >= det.refine_below))
    assert len(rounds) >= 8
    weak, strong = rounds[:4], rounds[4:8]
    true_side = found.side.copy()
    sides = [s.index for s in det.config.sides]
    found.side[rounds[:8]] = [sides[(sides.index(s) + 1) % len(sides)] for s in true_side[rounds[:8]]]
    named = found.side.copy()
    found.score[weak] = 0.2
    for every in (False, True):
        found.side[:], found.rivals[:] = named, 0
        det.read_sides_all = every
        det._sides_read(frame, found)
        assert np.array_equal(found.side[weak], true_side[weak])
        assert all(found.rivals[i] & (1 << int(sides[(sides.index(true_side[i]) + 1) % len(sides)])) for i in weak)
        if every:
            assert np.array_equal(found.side[strong], true_side[strong]) and found.rivals[strong].all()
        else:
            assert np.array_equal(found.side[strong], named[strong]) and not found.rivals[strong].any()



def test_a_weak_base_the_refiner_reads_under_no_rim_has_its_side_unsure():
    """``TableDetector._sides_read`` (``absent_side_unsure``): a round base placed from
    little rim where the refiner reads no base of its side's rim, nor of any other's (moved
    onto bare floor: a phantom of a shadow's edge), keeps its place but not its side's
    word: every other side a rival, so the rules count it surely for none. A weak base on
    its own rim, and a well-seen one moved off it, keep their side sure."""
    from tracker.detection import KIND_BASE
    from tracker.pipeline import Pipeline

    folder = eval_set("warcry-2")
    det = Pipeline.from_footage(folder).detector
    frame = _frame(folder)
    found = det.detect(frame)
    rounds = np.flatnonzero((found.kind == KIND_BASE) & (found.shape == 0) & (found.score >= det.refine_below)
                            & (found.xyz[:, 2] == 0.0))
    assert len(rounds) >= 6
    sides = [s.index for s in det.config.sides]
    everyone = sum(1 << s for s in sides)
    others = found.xyz[:, :2]
    w, h = det.config.table.play_area_in
    moved, kept_weak, moved_strong = rounds[:2], rounds[2:4], rounds[4:6]
    # bare floor: 2.5 in or more from everything found, on the play area
    gx, gy = np.meshgrid(np.arange(1.0, w - 1), np.arange(1.0, h - 1))
    grid = np.c_[gx.ravel(), gy.ravel()]
    bare = grid[np.min(np.hypot(grid[:, None, 0] - others[None, :, 0], grid[:, None, 1] - others[None, :, 1]), axis=1) > 2.5]
    assert len(bare) >= 4
    for i, p in zip(np.r_[moved, moved_strong], bare[np.linspace(0, len(bare) - 1, 4).astype(int)]):
        found.xyz[i, :2] = p
    found.score[np.r_[moved, kept_weak]] = 0.2
    found.rivals[:] = 0
    det.absent_side_unsure = True
    det._sides_read(frame, found)
    assert all(found.rivals[i] == everyone & ~(1 << int(found.side[i])) for i in moved), found.rivals[moved]
    assert not found.rivals[kept_weak].any() and not found.rivals[moved_strong].any()
    found.rivals[:] = 0
    det.absent_side_unsure = False
    det._sides_read(frame, found)
    assert not found.rivals[moved].any()


def test_a_round_patch_no_base_explains_is_offered_to_the_refiner_and_named():
    """``TableDetector._proposed_rounds``: with one true base left out of those found,
    its patch is offered (a doubt not to be shown), and the refiner names it: one base,
    of its side, near its centre; nothing else on the table (tokens, terrain's edges,
    markers, shadows: the other patches offered) is named."""
    from tracker.detection import KIND_BASE
    from tracker.pipeline import Pipeline
    from tracker.vision.colour import detector_lab

    folder = eval_set("warcry-3")
    det = Pipeline.from_footage(folder).detector
    raw = _frame(folder)
    truth = json.loads((folder / "truth.json").read_text())["frames"][0]
    found = det.detect(raw)
    frame = det.relight(raw)
    lab = detector_lab(det.floor.sample(frame))
    hand = det._hand_mask(frame)
    usable = det.floor.valid & ~det._terrain_mask_floor & ~hand
    floor = [f for f in truth["fighters"] if f["visible_fraction"] >= 0.9 and f["z"] == 0.0]
    assert len(floor) >= 8
    right = 0
    for f in floor[:8]:
        xy = np.array([f["x"], f["y"]])
        others = found[(found.kind == KIND_BASE) & (np.hypot(*(found.xyz[:, :2] - xy).T) > 0.5)]
        det._doubts = []
        det._proposed_rounds(lab, usable, hand, others)
        named, left = det._doubts_read(raw, others, list(range(len(det._doubts))))
        assert det._as_doubts(left) == ()  # (offered, not doubted)
        # Whatever it names is this base: of its side, near its centre, and alone.
        assert len(named) <= 1 and all(named.side == f["team"]), (f, named.xyz, named.side)
        assert np.all(np.hypot(*(named.xyz[:, :2] - xy).T) < 0.15), (f, named.xyz)
        right += len(named)
    # Measured when written: 7 of 8 (a 25 mm base's patch under the pursuit's threshold).
    assert right >= 6


def test_a_shipped_network_runs_one_input_at_a_time_whatever_the_threads():
    """Two live tables in one server share the shipped models; OpenCV's Net run from two
    threads at once crashed the process (a CI run aborted in ``_sides_read``; four threads
    of varied batches without the lock: a segfault or a floating point exception in 2 of
    3 runs). Run in a child process, so that a crash fails this test, not the suite."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import threading
        import numpy as np
        from tracker.vision.refiner import BaseRefiner
        from tracker.vision.stand_refiner import CHANNELS, StandRefiner

        nets = [(BaseRefiner.load(), 9, ["offset", "size_logits"]), (StandRefiner.load(), CHANNELS, "offset")]
        def work(seed):
            rng = np.random.default_rng(seed)
            for k in range(40):
                net, channels, outputs = nets[k % 2]
                out = net.run(rng.random((int(rng.integers(1, 24)), 64, 64, channels), dtype=np.float32), outputs)
                assert len(out)
        threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("ran")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "ran" in done.stdout, (done.returncode, done.stderr[-2000:])


@pytest.mark.slow
def test_of_two_round_bases_the_refiner_leaves_overlapping_the_smaller_goes(unsure_sides_720p_table):
    """Tuning seed 100062 (720p), frame 1: a red 32 mm base on a platform, its patch of
    miniature and base split in two 25 mm bases; the refiner reads one as the 32 mm base
    on its true place and moves the other onto it. Bases never overlap: the smaller is the
    same base seen twice and goes. (Measured when written: 0.58 in off beside the true
    base without; none with.)"""
    from conftest import _first_frame, _judged_with
    from tracker.detection import KIND_BASE

    pipe, frame, truth = _first_frame(unsure_sides_720p_table)
    red = next(f for f in truth["fighters"] if f["team_colour"] == "red" and f["z"] > 1.0 and f["base_mm"] == 32)

    def near(**tunables):
        d = _judged_with(pipe, frame, 0, **tunables)
        d = d[d.kind == KIND_BASE]
        gone = np.hypot(d.xyz[:, 0] - red["x"], d.xyz[:, 1] - red["y"])
        return sorted(np.round(gone[gone < 1.0], 2).tolist()), d.base_mm[gone < 1.0].tolist()

    without, sizes_without = near(part_overlaps=False)
    with_, sizes_with = near()
    assert len(without) == 2 and without[0] < 0.1 < 0.4 < without[1], (without, sizes_without)
    assert len(with_) == 1 and with_[0] < 0.1 and sizes_with == [32.0], (with_, sizes_with)
