"""WorldState.to_dict, the form the page, the API and track.json take a state in: what
dataclasses.asdict makes (it is a faster way to the same dict), on real states of both
bundled games, and a caller's changes to it never reach the next one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tracker.sources import open_source


def _asdict(state) -> dict:
    d = dataclasses.asdict(state)
    for f in d["fighters"]:
        f["runemarks"] = sorted(f["runemarks"])
    return d


@pytest.mark.parametrize("which", ["warcry", "epic"])
def test_to_dict_is_asdicts_dict_on_real_states(which, calibrated, footage, epic_pipeline):
    pipe = (calibrated if which == "warcry" else epic_pipeline).fresh()
    folder = footage if which == "warcry" else Path(__file__).resolve().parents[1] / "sample_footage" / "epic-demo"
    seen = 0
    with open_source(folder) as src:
        for index, t, frame in src:
            state = pipe.process(frame, index, t).state
            if index % 5 == 0:
                got, want = state.to_dict(), _asdict(state)
                assert got == want and repr(got) == repr(want)  # the same values, types and key order
                seen += bool(state.fighters) and bool(state.terrain)
            if index >= 40:
                break
    assert seen >= 5


def test_a_callers_changes_stay_its_own(calibrated, footage):
    pipe = calibrated.fresh()
    with open_source(footage) as src:
        index, t, frame = next(iter(src))
    state = pipe.process(frame, index, t).state
    assert state.terrain
    first = state.to_dict()
    first["terrain"][0]["footprint"] = []
    first["terrain"][0]["parts"] = None
    first["terrain"][0].clear()
    again = state.to_dict()
    assert again == _asdict(state)
    assert again["terrain"][0]["footprint"]
