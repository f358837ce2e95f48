"""The full look's exact shortcuts (tracker/detection.py) give what the plain way gives."""

from __future__ import annotations

import cv2
import numpy as np

from tracker.detection import _blob_boxes, _ray_edges, _search_grids


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
    from tracker.detection import _mix_evidence, _neutral_lift

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
