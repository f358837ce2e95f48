"""The tracker on sequences of detections: ids persist, phantoms never become
fighters, hidden fighters are held, moves and removals are events."""

import numpy as np

from tracker.config import GameConfig
from tracker.detection import KIND_BASE, KIND_OBJECTIVE, Detections
from tracker.tracking import FighterTracker

CFG = GameConfig.from_dict({"kind": "warcry", "sides": [
    {"index": 0, "colour": "red", "rim_bgr": [40, 38, 200], "bases_mm": [32]},
    {"index": 1, "colour": "blue", "rim_bgr": [190, 95, 25], "bases_mm": [32]}]})


def dets(*bases, hands=False):
    rows = [{"xyz": (x, y, 0.0), "kind": KIND_BASE, "side": s, "base_mm": 32.0} for x, y, s in bases]
    d = Detections.from_rows(rows)
    d.hands = hands
    return d


def fighters(state):
    return {f.id: (round(f.x, 2), round(f.y, 2), f.side, f.occluded) for f in state.fighters}


def test_fighter_confirmed_after_two_frames_and_keeps_its_id_while_moving():
    tr = FighterTracker(CFG, fps=15)
    assert tr.update(dets((5, 5, 0)), 0, 0.0).fighters == ()
    s = tr.update(dets((5, 5, 0)), 1, 1 / 15)
    assert list(fighters(s)) == ["f1"]
    for k in range(2, 20):  # a 6 in move over a second
        s = tr.update(dets((5 + 0.35 * (k - 1), 5, 0)), k, k / 15)
    assert list(fighters(s)) == ["f1"] and fighters(s)["f1"][0] > 10
    for k in range(20, 26):
        s = tr.update(dets((5 + 0.35 * 18, 5, 0)), k, k / 15)
    moved = [e for e in tr.events if e.kind == "moved"]
    assert len(moved) == 1 and 5.5 < moved[0].detail["distance_in"] < 6.8


def test_single_frame_detection_is_never_a_fighter():
    tr = FighterTracker(CFG, fps=15)
    for k in range(10):
        extra = [(20, 10, 1)] if k == 4 else []
        s = tr.update(dets((5, 5, 0), *extra), k, k / 15)
        assert all(f.side == 0 for f in s.fighters)


def test_fighter_under_a_hand_is_held_occluded_then_found_with_the_same_id():
    tr = FighterTracker(CFG, fps=15)
    for k in range(3):
        tr.update(dets((5, 5, 0), (12, 8, 1)), k, k / 15)
    for k in range(3, 60):  # four seconds under a hand: longer than the grace period
        s = tr.update(dets((12, 8, 1), hands=True), k, k / 15)
    f = fighters(s)
    assert f["f1"] == (5.0, 5.0, 0, True) and f["f2"][3] is False
    s = tr.update(dets((7, 6, 0), (12, 8, 1)), 60, 4.0)  # moved under the hand
    assert fighters(s)["f1"] == (7.0, 6.0, 0, False)
    assert not [e for e in tr.events if e.kind == "removed"]


def test_fighter_gone_without_a_hand_is_removed_after_the_grace_period():
    tr = FighterTracker(CFG, fps=15, grace_s=1.0)
    for k in range(3):
        tr.update(dets((5, 5, 0), (12, 8, 1)), k, k / 15)
    for k in range(3, 30):
        s = tr.update(dets((12, 8, 1)), k, k / 15)
    assert [f.id for f in s.fighters] == ["f2"]
    assert [e.subject for e in tr.events if e.kind == "removed"] == ["f1"]


def test_no_identity_swap_when_two_sides_pass_close():
    tr = FighterTracker(CFG, fps=15)
    for k in range(30):
        x = 5 + 0.4 * k
        s = tr.update(dets((x, 5, 0), (17 - 0.4 * k, 5.9, 1)), k, k / 15)
        if k >= 1:
            by_side = {f.side: f.id for f in s.fighters}
            assert by_side == {0: "f1", 1: "f2"}
    assert np.isclose(s.fighter("f1").x, 5 + 0.4 * 29)


def _sized(x, y, side, mm, score, found=True):
    d = Detections.from_rows([{"xyz": (x, y, 0.0), "kind": KIND_BASE, "side": side, "base_mm": mm, "score": score}])
    d.sizes_found = found
    return d


def test_a_fighters_size_is_what_the_looks_say_most_not_what_the_first_said():
    """A 50 mm base all but hidden by its miniature, first fitted as 40 mm: the looks
    that follow, seeing it at 50 mm, outvote the first; follows (measured at the size
    given) never vote."""
    tr = FighterTracker(CFG, fps=15)
    tr.update(_sized(5, 5, 0, 40.0, 0.35), 0, 0.0)
    s = tr.update(_sized(5, 5, 0, 40.0, 0.3, found=False), 1, 1 / 15)
    assert s.fighters[0].base.width_in * 25.4 == 40.0
    for k in range(2, 12):  # follows at the size given: no say
        s = tr.update(_sized(5.0, 5.0, 0, 40.0, 0.9, found=False), k, k / 15)
    assert round(s.fighters[0].base.width_in * 25.4) == 40
    s = tr.update(_sized(5.02, 5.0, 0, 50.0, 0.29), 12, 12 / 15)
    assert round(s.fighters[0].base.width_in * 25.4) == 40  # 0.29 < 0.35 so far
    s = tr.update(_sized(5.02, 5.0, 0, 50.0, 0.29), 13, 13 / 15)
    assert round(s.fighters[0].base.width_in * 25.4) == 50 and [f.id for f in s.fighters] == ["f1"]


def test_a_smaller_circle_found_inside_a_fighters_base_is_the_fighter_seen_not_moved():
    """A 50 mm base all but hidden by its miniature, read by one look as a 32 mm base
    0.35 in off (the miniature's outline): the fighter is seen, stays where it is, and no
    second fighter appears there. A smaller fit reaching outside its base still moves it."""
    cfg = GameConfig.from_dict({"kind": "warcry", "sides": [
        {"index": 0, "colour": "red", "rim_bgr": [40, 38, 200], "bases_mm": [32, 50]},
        {"index": 1, "colour": "blue", "rim_bgr": [190, 95, 25], "bases_mm": [32]}]})
    tr = FighterTracker(cfg, fps=15)
    for k in range(4):
        tr.update(_sized(5, 5, 0, 50.0, 0.5), k, k / 15)
    for k in (4, 5, 6):
        s = tr.update(_sized(5.0, 5.35, 0, 32.0, 0.4), k, k / 15)
        assert [(f.id, round(f.x, 2), round(f.y, 2), f.occluded) for f in s.fighters] == [("f1", 5.0, 5.0, False)]
    assert round(s.fighters[0].base.width_in * 25.4) == 50
    s = tr.update(_sized(5.0, 5.5, 0, 32.0, 0.4), 7, 7 / 15)  # 0.5 + 0.63 in: past its 0.98 in radius
    assert [(f.id, round(f.x, 2), round(f.y, 2)) for f in s.fighters] == [("f1", 5.0, 5.5)]


def test_a_unit_lifted_under_a_hand_is_hidden_whole_not_its_last_stand_left_in_sight():
    """Four touching fighters taken off together, the hand over two of them: none is
    found, and all four are out of sight (a base missed beside no hand is still in
    sight, as is a group of which only one is under the hand)."""
    from tracker.vision.views import PlaneView

    view = PlaneView(0.0, 0.0, 0.0, 30.0, 22.0, 10.0, None, None, None)

    def look(*bases, hand_at=None):
        d = Detections.from_rows([{"xyz": (x, y, 0.0), "kind": KIND_BASE, "side": 0, "base_mm": 32.0}
                                  for x, y in bases])
        mask = np.zeros((220, 300), bool)
        if hand_at is not None:  # a hand 1.6 in across
            rr, cc = np.ogrid[:220, :300]
            c, r = view.to_pixel(np.array([hand_at], float))[0]
            mask = (rr - r) ** 2 + (cc - c) ** 2 <= 8 ** 2
        d.hand_mask, d.hand_view, d.hands = mask, view, bool(mask.any())
        return d

    unit = [(5.0 + 1.3 * k, 5.0) for k in range(4)]  # 32 mm bases 1.3 in apart: touching
    for hand_at, hidden in (((5.65, 5.0), {"f1", "f2", "f3", "f4"}), ((5.0, 5.0), {"f1"})):
        tr = FighterTracker(CFG, fps=15)
        for k in range(3):
            tr.update(look(*unit, (20, 15)), k, k / 15)
        s = tr.update(look((20, 15), hand_at=hand_at), 3, 3 / 15)
        assert {f.id for f in s.fighters if f.occluded} == hidden, hand_at


def test_a_hidden_fighter_never_takes_the_base_found_on_one_in_sight():
    """A fighter under a hand for seconds has a gate of inches; when its visible
    neighbour's base is found a little off (a changed fit), the hidden one must not take
    it from across the table."""
    tr = FighterTracker(CFG, fps=15)
    for k in range(3):
        tr.update(dets((5, 18, 0), (2, 2, 0)), k, k / 15)
    for k in range(3, 40):  # f1 under a hand; f2 in sight
        s = tr.update(dets((2, 2, 0), hands=True), k, k / 15)
    assert fighters(s)["f1"][3] is True
    # f2's base found 0.4 in off, and a second fit beside it: neither is f1's.
    s = tr.update(dets((2.3, 2.25, 0), (1.7, 1.8, 0), hands=True), 40, 40 / 15)
    f = fighters(s)
    assert f["f1"] == (5.0, 18.0, 0, True), f


def test_token_whose_tag_is_not_read_for_a_look_keeps_its_id_and_tag():
    """An objective read as tag 47, then seen with its tag unreadable (blur, a shadow):
    the same token, tag 47, not a new one placed (nor the first removed); an unread disc
    where no token was is a new token."""
    cfg = GameConfig.from_dict({"kind": "warcry", "sides": [
        {"index": 0, "colour": "red", "rim_bgr": [40, 38, 200], "bases_mm": [32]},
        {"index": 1, "colour": "blue", "rim_bgr": [190, 95, 25], "bases_mm": [32]}],
        "tokens": {"objective": {"tag_ids": [47, 52]}}})

    def tokens(*rows):
        return Detections.from_rows([{"xyz": (x, y, 0.0), "kind": KIND_OBJECTIVE, "tag_id": tag, "score": 1.0}
                                     for x, y, tag in rows])

    tr = FighterTracker(cfg, fps=15)
    s = tr.update(tokens((10, 10, 47)), 0, 0.0)
    assert [(t.id, t.tag_id) for t in s.tokens] == [("objective-47", 47)]
    for k in range(1, 40):  # over 2 s with the tag unread: longer than any grace
        s = tr.update(tokens((10.05, 10, -1)), k, k / 15)
    assert [(t.id, t.tag_id) for t in s.tokens] == [("objective-47", 47)]
    s = tr.update(tokens((10, 10, 47), (20, 5, -1)), 40, 40 / 15)
    assert sorted((t.id, t.tag_id) for t in s.tokens) == [("objective-47", 47), ("objective-u1", None)]
    placed = [e.subject for e in tr.events if e.kind == "token placed"]
    assert placed == ["objective-47", "objective-u1"]
    assert not [e for e in tr.events if e.kind.startswith("token") and e.kind != "token placed"]


def test_a_hand_hides_only_the_tokens_it_covers():
    """Tokens under a hand are out of sight (occluded, kept, never declared gone while
    hidden); a token away from the hand that vanishes is gone even while the hand is on
    the table; one that went under the hand and is not there when the hand has left goes,
    at that look, to the fighter beside it."""
    from tracker.detection import KIND_TREASURE
    from tracker.vision.views import PlaneView

    view = PlaneView(0.0, 0.0, 0.0, 30.0, 22.0, 10.0, None, None, None)

    def look(*rows, hand_at=None, tokens_checked=True, base=(11.0, 10.0)):
        d = Detections.from_rows([{"xyz": (*base, 0.0), "kind": KIND_BASE, "side": 0, "base_mm": 32.0}]
                                 + [{"xyz": (x, y, 0.0), "kind": kind, "score": 1.0} for x, y, kind in rows])
        mask = np.zeros((220, 300), bool)
        if hand_at is not None:  # a hand 2 in across
            rr, cc = np.ogrid[:220, :300]
            c, r = view.to_pixel(np.array([hand_at], float))[0]
            mask = (rr - r) ** 2 + (cc - c) ** 2 <= 20 ** 2
        d.hand_mask, d.hand_view, d.hands, d.tokens_checked = mask, view, bool(mask.any()), tokens_checked
        return d

    def shown(s):
        return {t.id: t.occluded for t in s.tokens}

    treasure, objective = (10.0, 10.0, KIND_TREASURE), (25.0, 5.0, KIND_OBJECTIVE)
    tr = FighterTracker(CFG, fps=15)
    for k in range(3):
        s = tr.update(look(treasure, objective), k, k / 15)
    assert shown(s) == {"objective-u1": False, "treasure-u1": False}
    # A follow frame: the hand over the treasure hides it, not the objective.
    s = tr.update(look(hand_at=(10.3, 10.0), tokens_checked=False), 3, 3 / 15)
    assert shown(s) == {"objective-u1": False, "treasure-u1": True}
    # Looks with the hand still there, the treasure under it, the objective taken away.
    for k in range(4, 20):
        s = tr.update(look(hand_at=(10.3, 10.0)), k, k / 15)
    assert shown(s) == {"treasure-u1": True}
    assert [(e.kind, e.subject) for e in tr.events if e.kind != "placed"][-1] == ("token removed", "objective-u1")
    assert not [e for e in tr.events if "treasure" in e.kind]
    # The hand leaves; the treasure is not there: taken, by the fighter beside it.
    s = tr.update(look(), 20, 20 / 15)
    assert shown(s) == {}
    assert [(e.kind, e.subject) for e in tr.events][-1] == ("picked up treasure", "f1")


def test_a_hand_beside_a_token_leaves_it_in_sight_on_a_follow_frame():
    """A hand reaching for the fighter next to a treasure (its grown mask within a
    quarter inch of the token's edge, but not over the disc) leaves the token in sight
    on frames that do not look for tokens; the same hand over the disc hides it. (The
    bundled clip's treasure beside a carried fighter was shown hidden for a second while
    in full view.)"""
    from tracker.detection import KIND_TREASURE
    from tracker.vision.views import PlaneView

    view = PlaneView(0.0, 0.0, 0.0, 30.0, 22.0, 10.0, None, None, None)

    def look(hand_edge_from_centre=None, tokens_checked=True):
        d = Detections.from_rows([{"xyz": (13.0, 10.0, 0.0), "kind": KIND_BASE, "side": 0, "base_mm": 32.0},
                                  {"xyz": (10.0, 10.0, 0.0), "kind": KIND_TREASURE, "score": 1.0}]
                                 if tokens_checked else [{"xyz": (13.0, 10.0, 0.0), "kind": KIND_BASE, "side": 0,
                                                          "base_mm": 32.0}])
        mask = np.zeros((220, 300), bool)
        if hand_edge_from_centre is not None:  # a hand mask 2 in across, its edge this far from the treasure
            rr, cc = np.ogrid[:220, :300]
            c, r = view.to_pixel(np.array([[10.0 - hand_edge_from_centre - 1.0, 10.0]]))[0]
            mask = (rr - r) ** 2 + (cc - c) ** 2 <= 10 ** 2
        d.hand_mask, d.hand_view, d.hands, d.tokens_checked = mask, view, bool(mask.any()), tokens_checked
        return d

    tr = FighterTracker(CFG, fps=15)
    for k in range(3):
        s = tr.update(look(), k, k / 15)
    assert {t.id: t.occluded for t in s.tokens} == {"treasure-u1": False}
    s = tr.update(look(0.7, tokens_checked=False), 3, 3 / 15)  # 0.2 in off the disc's edge
    assert {t.id: t.occluded for t in s.tokens} == {"treasure-u1": False}
    assert not tr.tokens_in_doubt
    s = tr.update(look(0.1, tokens_checked=False), 4, 4 / 15)  # over the disc
    assert {t.id: t.occluded for t in s.tokens} == {"treasure-u1": True}
    assert tr.tokens_in_doubt


RECT_CFG = GameConfig.from_dict({"kind": "warcry", "sides": [
    {"index": 0, "colour": "red", "rim_bgr": [40, 38, 200], "bases_mm": [{"shape": "rect", "mm": [40, 20]}]},
    {"index": 1, "colour": "blue", "rim_bgr": [190, 95, 25], "bases_mm": [{"shape": "rect", "mm": [40, 20]}]}]})


def stands(*rows):
    """Rectangular 40 x 20 mm stands: (x, y, side, angle_deg[, score])."""
    return Detections.from_rows([
        {"xyz": (r[0], r[1], 0.0), "kind": KIND_BASE, "side": r[2], "base_mm": 40.0, "shape": 2, "size_mm": (40.0, 20.0),
         "angle_deg": r[3], "score": r[4] if len(r) > 4 else 0.7} for r in rows])


def test_a_fit_turned_a_quarter_and_seen_poorly_is_not_taken_for_the_stand():
    """A look that fits a packed stand across (turned 90 degrees, 0.5 in off, at half
    its usual score) does not move it there; a stand really turned, seen as well as
    ever, is turned."""
    tr = FighterTracker(RECT_CFG, fps=30)
    row = [(50.0 - 1.15 * k, 36.0, 0, 90.0) for k in range(3)]
    for k in range(5):
        s = tr.update(stands(*row), k, k / 30)
    before = {f.id: (f.x, f.y) for f in s.fighters}
    misfit = [row[0], (row[1][0] - 0.1, 35.5, 0, 1.4, 0.35), row[2]]
    s = tr.update(stands(*misfit), 5, 5 / 30)
    assert {f.id: (f.x, f.y) for f in s.fighters} == before
    s = tr.update(stands(*row), 6, 6 / 30)
    assert {f.id: (f.x, f.y) for f in s.fighters} == before
    turned = [row[0], (row[1][0], 36.0, 0, 0.0, 0.7), row[2]]
    for k in range(7, 17):  # (a still stand's angle is smoothed over a few looks)
        s = tr.update(stands(*turned), k, k / 30)
    middle = min(s.fighters, key=lambda f: abs(f.x - row[1][0]))
    assert abs(middle.base.angle_deg % 180) < 1.0 or abs(middle.base.angle_deg % 180 - 180) < 1.0
    assert len(s.fighters) == 3


def test_a_stand_followed_beside_a_packed_neighbour_held_still_is_kept():
    """Between looks only the fighters round which the picture changed are followed; the
    others are held. A stand re-found a depth (0.79 in) from a held neighbour, long edge
    to long edge as Epic units stand, is that stand; one re-found inside the neighbour's
    outline is the neighbour's rim. (Judged by 40 mm as a round base's diameter, every
    packed stand's follow was dropped, the stand left behind, and the next follow found
    its neighbour for it.)"""
    from tracker.motion import follow_some

    tr = FighterTracker(RECT_CFG, fps=30)
    row = [(46.1 + 0.79 * k, 15.0, 0, 90.0) for k in range(3)]
    for k in range(3):
        tr.update(stands(*row), k, k / 30)
    held, moving = tr.tracks[:2], tr.tracks[2]
    beside = follow_some(stands((row[2][0] + 0.1, 15.0, 0, 90.0)), [moving], held)
    assert len(beside) == 3 and np.isclose(beside.xyz[:, 0], row[2][0] + 0.1).any()
    on_neighbour = follow_some(stands((row[1][0] + 0.15, 15.0, 0, 90.0)), [moving], held)
    assert len(on_neighbour) == 2 and not np.isclose(on_neighbour.xyz[:, 0], row[1][0] + 0.15).any()


def test_two_fits_of_one_stand_make_one_fighter_not_two():
    """Two follows that both found the stand between them (one of them predicted a stand's
    width wrong) give two detections on one place: bases never overlap, so the better
    seen is kept and the other fighter is unseen for a frame, not doubled."""
    tr = FighterTracker(RECT_CFG, fps=8)
    row = [(50.0 - 0.79 * k, 15.0, 0, 90.0) for k in range(3)]
    for k in range(3):
        s = tr.update(stands(*row), k, k / 8)
    ids = {f.id for f in s.fighters}
    twice = [row[0], (row[1][0] + 0.05, 15.0, 0, 90.0, 0.6), (row[1][0] - 0.05, 15.0, 0, 90.0, 0.7)]
    s = tr.update(stands(*twice), 3, 3 / 8)
    places = sorted(round(f.x, 2) for f in s.fighters if not f.occluded)
    assert {f.id for f in s.fighters} == ids
    assert sum(abs(x - row[1][0]) < 0.2 for x in places) == 1, places
    # (a still fighter's place is smoothed: halfway to the fit kept)
    assert any(abs(f.x - (row[1][0] - 0.025)) < 1e-6 for f in s.fighters), "the better seen fit is kept"
