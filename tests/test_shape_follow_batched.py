"""Following many oval / rectangular stands at once: fit_shapes over several windows
(``counts``), TableDetector._follow_shape with every stand's peaks found in one map and
each size's stands fitted in one call, against the stand-by-stand way; and the quick
closeness test of tracker.epic.group_by_coherency against the measured distance."""

import math

import cv2
import numpy as np
import pytest

from test_shape_fit_batched import S, _follower, _stand_evidence, _View
from tracker.detection import shaped
from tracker.base_shapes import fit_shapes
from tracker.config import BaseSize
from tracker.vision.filters import _local_maxima, _subpixel_peaks
from tracker.world import MM_PER_IN


def _windows() -> list[tuple[np.ndarray, float, float, float]]:
    """Follow windows of different sizes, each with a stand (some cut by the window's
    edge) and specks of evidence: (ev, stand centre col, row, angle)."""
    rng = np.random.default_rng(11)
    out = []
    for (h, w), (cx, cy), th in [((61, 61), (30.3, 29.6), 0.4), ((61, 47), (22.8, 31.1), 2.9),
                                 ((44, 61), (31.5, 14.2), 1.2), ((61, 61), (8.0, 52.5), 0.05)]:
        ev, _, _ = _stand_evidence("rect", cx, cy, th, size=(h, w))
        specks = cv2.GaussianBlur((rng.random((h, w)) > 0.97).astype(np.float32), (0, 0), 1.0)
        out.append((np.maximum(ev, 0.5 * specks), cx, cy, th))
    return out


@pytest.mark.parametrize("shape", ["rect", "oval"])
def test_fit_over_several_windows_is_each_windows_own_fit(shape):
    hx, hy = 20 / MM_PER_IN * S, 10 / MM_PER_IN * S
    rng = np.random.default_rng(2)
    evs, cx, cy, th, counts = [], [], [], [], []
    for k, (ev, x, y, t) in enumerate(_windows()):
        n = k + 1  # 1 to 4 starts per window
        evs.append(ev)
        cx.append(x + rng.normal(0, 1.0, n))
        cy.append(y + rng.normal(0, 1.0, n))
        th.append(t + rng.normal(0, 0.1, n))
        counts.append(n)
    together = fit_shapes(evs, shape, hx, hy, np.concatenate(cx), np.concatenate(cy), np.concatenate(th),
                          px_per_in=S, bias=0.8, counts=counts)
    k = 0
    for ev, x, y, t, n in zip(evs, cx, cy, th, counts):
        alone = fit_shapes(ev, shape, hx, hy, x, y, t, px_per_in=S, bias=0.8)
        assert together[k:k + n] == alone  # every field, to the bit
        k += n
    # The windows differ: a start fitted in the wrong one would not find its stand.
    assert together[0] is not None and math.hypot(together[0].cx - 30.3, together[0].cy - 29.6) < 0.5
    with pytest.raises(ValueError):
        fit_shapes(evs, shape, hx, hy, np.concatenate(cx), np.concatenate(cy), np.concatenate(th),
                   px_per_in=S, bias=0.8, counts=counts[:-1])


def _stands(det):
    """Four stands' windows (one of a second size, one of a size the side does not field),
    as _follow_shape takes them, and the fighters list."""
    wins = _windows()
    fighters, stands = [], []
    for k, (ev, cx, cy, th) in enumerate(wins):
        origin = (100 * k, 40 * k)
        size = (40.0, 20.0) if k != 2 else (50.0, 25.0)
        last = np.array([cx - 0.6, cy + 0.4])  # last seen a little off
        x, y = (last[0] + origin[0]) / S, (last[1] + origin[1]) / S
        fighters.append((x, y, 0.0, 0, size[0], "rect", *size, -math.degrees(th)))
        stands.append((k, ev, _View(), last, origin))
    fighters.append((50.0, 50.0, 0.0, 0, 60.0, "rect", 60.0, 30.0, 0.0))  # no such stand on the side
    stands.append((4, wins[0][0], _View(), np.array([30.0, 30.0]), (0, 0)))
    # Last seen at a window's edge (far from the others): the peaks on the responses'
    # edges are then among the nearest, so the starts.
    for k, last in ((1, (46.0, 31.0)), (2, (31.0, 0.0)), (3, (6.0, 60.0))):
        origin = (1000 + 100 * k, 1000)
        fighters.append(((last[0] + origin[0]) / S, (last[1] + origin[1]) / S, *fighters[k][2:]))
        stands.append((len(stands), wins[k][0], _View(), np.array(last), origin))
    det._shaped = [(0, BaseSize("rect", 40.0, 20.0)), (0, BaseSize("rect", 50.0, 25.0))]
    return stands, fighters


def test_follow_shape_batched_picks_the_starts_and_rows_of_each_stand_alone(monkeypatch):
    det = _follower()
    stands, fighters = _stands(det)
    small = [f[7] for f in fighters]
    calls = []

    def recording(ev, shape, hx, hy, cx, cy, theta, **kw):
        calls.append((ev, hx, cx.copy(), cy.copy(), theta.copy(), kw.get("counts")))
        return fit_shapes(ev, shape, hx, hy, cx, cy, theta, **kw)

    monkeypatch.setattr(shaped, "fit_shapes", recording)
    together = det._follow_shape(stands, fighters, small)
    # One fit per size: the three 40 x 20 mm stands in one call, the 50 x 25 one alone.
    assert sorted(len(c[5]) for c in calls) == [2, 5]
    starts = {}
    for ev, hx, cx, cy, th, counts in calls:
        k = 0
        for e, n in zip(ev, counts):
            i = next(j for j, s in enumerate(stands) if s[1] is e and j not in starts)
            starts[i] = (cx[k:k + n], cy[k:k + n], th[k:k + n])
            k += n
    assert sorted(starts) == [0, 1, 2, 3, 5, 6, 7]
    edge_peaks = 0
    for i in starts:
        # The stand-by-stand way: each response's peaks on their own.
        _, ev, _, c, _ = stands[i]
        w, d, ang = fighters[i][6:9]
        spec = BaseSize("rect", w, d)
        th0 = np.radians(-ang) % np.pi
        hy = d / MM_PER_IN / 2 * S
        keys, pcs, prs, angs = [], [], [], []
        for a in (th0 - np.pi / 12, th0, th0 + np.pi / 12):
            resp = cv2.filter2D(ev, -1, det._shape_kernel(spec, a % np.pi, False))
            rows, cols = _local_maxima(resp, det.score_threshold, max(1, int(hy * 0.8)))
            edge_peaks += int(np.sum((rows == 0) | (cols == 0) | (rows == resp.shape[0] - 1)
                                     | (cols == resp.shape[1] - 1)))
            pr, pc = _subpixel_peaks(resp, rows, cols)
            keys.append(np.hypot(pc - c[0], pr - c[1]) - 2 * resp[rows, cols] * hy)
            pcs.append(pc)
            prs.append(pr)
            angs.append(np.full(len(rows), a))
        key, pc, pr, a = (np.concatenate(q) for q in (keys, pcs, prs, angs))
        best = np.lexsort((a, pr, pc, key))[:3]
        want = (np.append(pc[best], c[0]), np.append(pr[best], c[1]), np.append(a[best], th0))
        for got, ref in zip(starts[i], want):
            np.testing.assert_allclose(got, ref, rtol=0, atol=1e-9)
    assert edge_peaks > 0  # the windows do put peaks on their edges (kept whole-pixel there)
    # Each stand alone: the same rows.
    monkeypatch.setattr(shaped, "fit_shapes", fit_shapes)
    for s in stands:
        alone = det._follow_shape([s], fighters, small)
        assert alone == {k: v for k, v in together.items() if k == s[0]}
    # The 40 x 20 mm stands are found where they are; the 50 x 25 mm one, looked for
    # round a 40 x 20 mm rim, is not (nor the size the side does not field).
    assert set(together) & {0, 1, 2, 3, 4} == {0, 1, 3}
    for i in (0, 1, 3):
        ev, cx, cy, th = _windows()[i]
        x, y = together[i]["xyz"][:2]
        origin = stands[i][4]
        assert math.hypot(x * S - origin[0] - cx, y * S - origin[1] - cy) < 0.3


def test_coherency_skips_measuring_only_pairs_surely_in_reach(monkeypatch):
    """group_by_coherency measures a pair's outlines only when the circles inside the
    bases do not already put it well within reach: every pair left unmeasured is in reach."""
    from tracker.epic import UnitSpec, group_by_coherency
    from tracker.rules import measure
    from tracker.world import Base, Fighter

    rng = np.random.default_rng(7)
    kinds = [Base("rect", 40 / MM_PER_IN, 20 / MM_PER_IN), Base("oval", 60 / MM_PER_IN, 35 / MM_PER_IN),
             Base("round", 32 / MM_PER_IN, 32 / MM_PER_IN), Base("rect", 25 / MM_PER_IN, 50 / MM_PER_IN)]
    stands = []
    for k in range(40):
        b = kinds[k % 4]
        b = Base(b.shape, b.width_in, b.depth_in, float(rng.uniform(0, 180)))
        z = 0.0 if k % 5 else float(rng.choice([0.5, 2.0]))
        stands.append(Fighter(f"s{k}", 0, float(rng.uniform(0, 12)), float(rng.uniform(0, 8)), z, b))
    roster = [UnitSpec(f"u{k}", 0, 10, (b.width_in * MM_PER_IN, b.depth_in * MM_PER_IN)) for k, b in enumerate(kinds)]
    asked = set()
    real = measure.distance

    def counting(a, b):
        asked.add((a.id, b.id))
        return real(a, b)

    monkeypatch.setattr(measure, "distance", counting)
    group_by_coherency(stands, roster)
    reach = 5.0 / 2.54
    skipped = near = 0
    for i, a in enumerate(stands):
        for b in stands[i + 1:]:
            if math.hypot(a.x - b.x, a.y - b.y) > reach + a.base.radius_in + b.base.radius_in:
                continue
            if (a.id, b.id) not in asked:
                skipped += 1
                assert real(a, b) <= reach, (a, b)
            near += real(a, b) <= reach
    assert skipped > 0.5 * near  # most near pairs need no measuring
    assert len(asked) > 0  # and those not clearly near still are measured
