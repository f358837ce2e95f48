"""The full look's exact shortcuts (tracker/detection/) give what the plain way gives."""

from __future__ import annotations

import cv2
import numpy as np

from tracker.vision.filters import _blob_boxes
from tracker.vision.rim_fit import _ray_edges
from tracker.vision.tags import _search_grids


def _plain_blob_boxes(ev: np.ndarray, level: float) -> np.ndarray:
    blobs = cv2.dilate((ev > level).astype(np.uint8), np.ones((5, 5), np.uint8))
    return cv2.connectedComponentsWithStats(blobs)[2][1:]


def test_blob_boxes_match_whole_map_labelling():
    rng = np.random.default_rng(3)
    for trial in range(30):
        H, W = int(rng.integers(20, 300)), int(rng.integers(20, 300))
        ev = np.zeros((H, W), np.float32)
        for _ in range(int(rng.integers(0, 40))):
            r, c = int(rng.integers(0, H)), int(rng.integers(0, W))
            ev[r:r + int(rng.integers(1, 9)), c:c + int(rng.integers(1, 9))] = rng.uniform(0.0, 0.3)
        ev[rng.random((H, W)) < 0.002] = np.float32(0.12)  # exactly at the level: not above
        got, want = _blob_boxes(ev, 0.12), _plain_blob_boxes(ev, 0.12)
        assert got.shape == want.shape and np.array_equal(got, want), trial


def test_ray_edges_gather_matches_take_along_axis():
    rng = np.random.default_rng(5)
    prof = rng.random((7, 96, 40)).astype(np.float32) * (rng.random((7, 96, 1)) > 0.2)
    rho = np.arange(10, 30, 0.5, dtype=np.float32)
    r_edge, use, j1, peak = _ray_edges(prof, rho)
    jpk = prof.argmax(axis=2)[..., None]
    want_peak = np.take_along_axis(prof, jpk, axis=2)[..., 0]
    assert np.array_equal(peak, want_peak)
    below = (prof < 0.5 * want_peak[..., None]) & (np.arange(prof.shape[2]) > jpk)
    k = below.argmax(axis=2)
    has = np.take_along_axis(below, k[..., None], axis=2)[..., 0] & (want_peak > 0.10)
    assert np.array_equal(j1, np.where(has, k, 0))
    assert use.any() and not use.all()


def test_search_grids_are_shared_and_read_only():
    X, Y, border = _search_grids(61, 61, 96.0, 1.0)
    assert X.dtype == np.float32 and X.shape == Y.shape == (30 * 7 * 25, 52)
    assert border.sum() == 20 and not X.flags.writeable
    assert _search_grids(61, 61, 96.0, 1.0)[0] is X


def test_mix_evidence_in_place_matches_plain_arithmetic():
    from tracker.vision.rim_evidence import _mix_evidence, _neutral_lift

    rng = np.random.default_rng(7)
    p = [rng.normal(0, 20, (50, 60)).astype(np.float32) for _ in range(3)]
    d = [rng.normal(0, 30, (50, 60)).astype(np.float32) for _ in range(3)]
    dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + 1e-3
    terms = (*d, dd, 1.0 / dd, -0.5 / (0.08 * dd + 60.0))
    gate = rng.random((50, 60)).astype(np.float32)
    for bright in (None, True, False):
        pp = p[0] * p[0] + p[1] * p[1] + p[2] * p[2]
        pd = p[0] * d[0] + p[1] * d[1] + p[2] * d[2]
        a = np.clip(pd * terms[4], 0.0, 1.0)
        want = a * np.exp(np.maximum(pp - 2 * a * pd + a * a * dd, 0.0) * terms[5])
        want *= gate if bright is None else gate * _neutral_lift(p[0], bright)
        got = _mix_evidence(p, terms, gate, bright)
        assert got.dtype == np.float32 and np.array_equal(got, want)


def test_search_score_parts_match_numpy():
    """TagReader's search's row means and deviations are numpy's, to the last bit."""
    from tracker.vision.tags import _mean, _std

    X, Y, border = _search_grids(61, 61, 96.0, 1.0)
    rng = np.random.default_rng(11)
    img = (rng.random((61, 61)) * 255).astype(np.float32)
    vals = cv2.remap(img, X, Y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    b, paper = vals[:, :36][:, border], vals[:, 36:]
    for a in (b, paper, np.ascontiguousarray(b)):
        m = _mean(a)
        assert m.dtype == np.float32 and np.array_equal(m, a.mean(axis=1))
        assert np.array_equal(_std(a, m), a.std(axis=1)) and np.array_equal(_std(a), a.std(axis=1))


def test_ellipse_dilation_of_whole_levels():
    """Dilating the 8-bit close-up and then making it float is dilating the float one."""
    from tracker.vision.tags import _ellipse

    rng = np.random.default_rng(2)
    img = cv2.GaussianBlur((rng.random((149, 149)) * 255).astype(np.uint8), (0, 0), 0.6)
    assert np.array_equal(cv2.dilate(img, _ellipse(43)).astype(np.float32),
                          cv2.dilate(img.astype(np.float32), cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (43, 43))))


def test_min_area_rect_from_outline():
    """The smallest box round a region's outline pixels is the one round all its pixels."""
    rng = np.random.default_rng(4)
    for trial in range(300):
        img = np.zeros((149, 149), np.uint8)
        for _ in range(int(rng.integers(1, 5))):
            c = tuple(int(v) for v in rng.integers(20, 130, 2))
            if rng.random() < 0.5:
                box = cv2.boxPoints((c, tuple(float(v) for v in rng.uniform(3, 80, 2)), float(rng.uniform(0, 90))))
                cv2.fillConvexPoly(img, np.round(box).astype(np.int32), 1)
            else:
                cv2.circle(img, c, int(rng.integers(1, 30)), 1, -1)
        img |= (rng.random(img.shape) < 0.02).astype(np.uint8)
        img = cv2.morphologyEx(img, cv2.MORPH_CLOSE, np.ones((5, 5), np.uint8))
        _, labels, stats, _ = cv2.connectedComponentsWithStats(img)
        big = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
        pts = np.column_stack(np.nonzero(labels == big)[::-1]).astype(np.float32)
        outline, _ = cv2.findContours((labels == big).astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
        at = np.unique(np.concatenate(outline).reshape(-1, 2) @ np.array([1, 1 << 16]))
        assert cv2.minAreaRect(np.column_stack([at & 0xFFFF, at >> 16]).astype(np.float32)) == cv2.minAreaRect(pts), trial


def test_disc_with_nothing_read_is_not_read_again_while_unchanged():
    """A disc where a token look read nothing at all (no code weighed, no tag's border) is
    not searched again while its close-up stays as it was: the looks report what looks
    that read every disc report, and a close-up that changed is read again."""
    from evalsets import eval_set

    from tracker.pipeline import Pipeline

    folder = eval_set("warcry-1")
    frames = [cv2.imread(str(f)) for f in sorted((folder / "frames").glob("*.jpg"))[:2]]
    recall, always = Pipeline.from_footage(folder).detector, Pipeline.from_footage(folder).detector
    always.tags.still_in = 0.0  # (never recalls)
    recall.tokens_every = always.tokens_every = 1  # (tokens looked for at every look)
    searched = []
    orig = type(recall.tags).read

    def counting(self, *a):
        searched.append(self is recall.tags)
        return orig(self, *a)

    type(recall.tags).read = counting
    try:
        for frame in (frames[0], frames[0], frames[1]):
            n0 = sum(searched)
            a, b = recall.detect(frame), always.detect(frame)
            for name in ("xyz", "kind", "tag_id", "side", "base_mm"):
                assert np.array_equal(getattr(a, name), getattr(b, name)), name
            if frame is frames[0] and n0:
                assert sum(searched) - n0 < n0 and recall.tags.no_tag_seen  # the same frame again: recalled
    finally:
        type(recall.tags).read = orig
    # A close-up unlike the one kept (a hand, a moved miniature) is read again.
    seen_xy, d, view, grey, face = recall.tags.no_tag_seen[0]
    calls = len(searched)
    type(recall.tags).read = counting
    try:
        recall.tags.no_tag_seen = [(seen_xy, d, view, 255 - grey, face)]
        recall.tags.recall_or_read(frames[1], seen_xy, d, recall.tag_face_floor, 0, [])
    finally:
        type(recall.tags).read = orig
    assert len(searched) == calls + 1


def test_rim_fits_of_all_sizes_at_once_match_one_size_at_a_time():
    """_refine fits every size of a view and side in one _fit_rims call: each size's rays
    over its own radii, padded with no evidence past their end (valid_m). The fits are
    those of one call per size (rims of three sizes drawn, half of some hidden, noise)."""
    from tracker.vision.rim_fit import _fit_rims

    rng = np.random.default_rng(11)
    ev = np.zeros((400, 600), np.float32)
    S = 30.0
    sizes = [25.0, 32.0, 50.0]
    centres = {mm: [(80 + 120 * k + rng.uniform(-3, 3), 100 + 100 * j + rng.uniform(-3, 3)) for k in range(4)
                    for j in range(2)] for mm in sizes}
    for i, (mm, cs) in enumerate(centres.items()):
        for k, (x, y) in enumerate(cs):
            r = mm / 25.4 / 2 * S
            cv2.circle(ev, (int(x * 16), int(y * 16)), int(r * 16), 0.9, 3, cv2.LINE_AA, 4)
            if k % 2:  # half hidden under its miniature
                cv2.rectangle(ev, (int(x), int(y - r - 3)), (int(x + r + 3), int(y + r + 3)), 0.0, -1)
    ev += rng.uniform(0, 0.05, ev.shape).astype(np.float32)
    ang = np.linspace(0, 2 * np.pi, 96, endpoint=False)
    cos, sin = np.cos(ang), np.sin(ang)
    expect = np.array([mm / 25.4 / 2 * S + 0.5 for mm in sizes])

    def profiles(cx, cy, rho):
        X = (cx[:, None, None] + rho[..., None, :] * cos[None, :, None]).astype(np.float32)
        Y = (cy[:, None, None] + rho[..., None, :] * sin[None, :, None]).astype(np.float32)
        m = X.shape[-1]
        return cv2.remap(ev, X.reshape(-1, m), Y.reshape(-1, m), cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT,
                         borderValue=0).reshape(len(cx), 96, m)

    one, rhos, cxs, cys = [], [], [], []
    for mm, cs in centres.items():
        r0 = mm / 25.4 / 2 * S
        rho = np.arange(0.6 * r0, r0 + 0.35 * S, 0.5, dtype=np.float32)
        cx, cy = np.array([c[0] for c in cs]) + 1.5, np.array([c[1] for c in cs]) - 1.0  # candidates a bit off
        one += _fit_rims(profiles(cx, cy, rho), rho, cos, sin, cx, cy, thin_px=0.2 * S, expect_r=expect,
                         expect_weight=16.0, expect_min_score=0.1 + mm / 500, start_r=np.full(len(cs), r0 + 0.5))
        rhos.append(rho), cxs.append(cx), cys.append(cy)
    m = max(len(r) for r in rhos)
    rho2 = np.concatenate([np.repeat(np.concatenate([r, r[-1] + 0.5 * np.arange(1, m - len(r) + 1)]).astype(np.float32)[None],
                                     len(cx), axis=0) for r, cx in zip(rhos, cxs)])
    valid = np.concatenate([np.full(len(cx), len(r)) for r, cx in zip(rhos, cxs)])
    cx, cy = np.concatenate(cxs), np.concatenate(cys)
    prof = profiles(cx, cy, rho2) * (np.arange(m)[None, None, :] < valid[:, None, None])
    least = np.concatenate([np.full(len(c), 0.1 + mm / 500) for mm, c in zip(sizes, cxs)])
    start = np.concatenate([np.full(len(c), mm / 25.4 / 2 * S + 0.5) for mm, c in zip(sizes, cxs)])
    all_at_once = _fit_rims(prof, rho2, cos, sin, cx, cy, thin_px=0.2 * S, expect_r=expect, expect_weight=16.0,
                            expect_min_score=least, start_r=start, valid_m=valid)
    assert sum(f is not None for f in one) >= 20
    assert [f is None for f in one] == [f is None for f in all_at_once]
    for a, b in zip(one, all_at_once):
        if a is not None:
            assert np.allclose(a, b, rtol=0, atol=1e-6), (a, b)
    # Without valid_m the padding would be read as the rims' edge: not the same fits.
    blind = _fit_rims(prof, rho2, cos, sin, cx, cy, thin_px=0.2 * S, expect_r=expect, expect_weight=16.0,
                      expect_min_score=least, start_r=start)
    assert any((a is None) != (b is None) or (a is not None and not np.allclose(a, b, atol=1e-6))
               for a, b in zip(one, blind))


def test_outline_correlation_from_one_spectrum_is_filter2d(epic_pipeline):
    """_filter_many gives filter2D's responses: the Epic clip's own evidence round its
    blobs against the outline turned 12 ways (a full look), and a stand's window against
    three turns off the 15-degree grid (a follow), each with the kernels' spectra made and
    then kept; and a crop filter2D would cut into tiles (left to filter2D). Planned as
    OpenCV 4.x plans its own (crossCorr), they agree to the last bit there; the test
    asks only for agreement to single precision, which any correct plan gives, so that
    an OpenCV that plans differently fails here only if the responses are wrong."""
    from pathlib import Path

    from tracker.vision.filters import _blob_boxes, _filter_many
    from tracker.sources import open_source

    det = epic_pipeline.fresh().detector
    evs = {}
    find_shapes = det._find_shapes
    det._find_shapes = lambda maps: evs.update(maps) or find_shapes(maps)
    with open_source(Path(__file__).resolve().parents[1] / "sample_footage" / "epic-demo") as src:
        det.detect(next(iter(src))[2])
    angles = np.arange(12) * (np.pi / 12)
    crops = 0
    for (view, side), ev in evs.items():
        for spec in [b for s, b in det._shaped if s == side]:
            full = [det._shape_kernel(spec, a, False) for a in angles]
            turned = [det._shape_kernel(spec, a, False) for a in (0.41, 0.67, 0.93)]
            R = full[0].shape[0] // 2 + 1
            for x0, y0, bw, bh, _ in _blob_boxes(ev, 0.12)[:12]:
                crop = ev[max(y0 - R, 0):y0 + bh + R, max(x0 - R, 0):x0 + bw + R]
                window = ev[max(y0 - 20, 0):y0 + 60, max(x0 - 20, 0):x0 + 75]
                for image, kernels, border in ((crop, full, cv2.BORDER_CONSTANT),
                                               (window, turned, cv2.BORDER_REFLECT_101),
                                               (ev[:300, :300], full[:2], cv2.BORDER_CONSTANT)):
                    want = [cv2.filter2D(image, -1, k, borderType=border) for k in kernels]
                    spectra: dict = {}
                    for _ in range(2):  # spectra made, then kept
                        got = _filter_many(image, kernels, border, spectra)
                        assert all(np.allclose(g, w, rtol=0, atol=1e-5 * max(1.0, float(np.abs(w).max())))
                                   for g, w in zip(got, want)), (image.shape, border)
                    assert len(spectra) == (0 if image.shape[0] == 300 else len(kernels))
                crops += 1
    assert crops >= 12

