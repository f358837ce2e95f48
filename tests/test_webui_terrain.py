"""Typing untagged terrain through the web API: a real rendered footage folder with
untagged pieces, the real calibration and pipeline, a real Flask app and SQLite file."""

from __future__ import annotations

import json

import numpy as np
import pytest

from calibration.camera import Intrinsics
from tracker.pipeline import Pipeline
from tracker.synthetic import render_set


@pytest.fixture(scope="module")
def footage(tmp_path_factory):
    """A 960x540 set (two frames) with 3 untagged pieces; the exact intrinsics are given
    as camera.json (no board views needed)."""
    d = render_set(tmp_path_factory.mktemp("untagged"), seed=2, width=960, height=540, seconds=0.4, fps=5,
                   n_calib_views=0, n_fighters=4, hands=False, n_untagged_terrain=3)
    t = json.loads((d / "truth.json").read_text())
    Intrinsics(np.array(t["camera"]["K"]), np.array(t["camera"]["dist"]), (960, 540), 0.0).to_json(d / "camera.json")
    return d


@pytest.fixture(scope="module")
def pipeline(footage):
    return Pipeline.from_footage(footage)


def make_app(footage, pipeline, db):
    from webui import create_app, get_player

    app = create_app({"SOURCE": str(footage), "FOOTAGE": str(footage), "PIPELINE": pipeline.fresh(),
                      "DATABASE": str(db), "JUDGE_TOKEN": None, "REALTIME": False})
    assert get_player(app).wait_first(60) is not None
    return app


def state_terrain(app, piece_id):
    from webui import get_player

    latest = get_player(app).wait_until(lambda x: any(p.id == piece_id for p in x.result.state.terrain), 30)
    return next(p for p in latest.result.state.terrain if p.id == piece_id)


def test_type_round_trip_and_persistence(footage, pipeline, tmp_path):
    from webui import get_player, stop_player

    t = json.loads((footage / "truth.json").read_text())
    assert len(t["untagged_terrain"]) == 3 and 1 <= len(pipeline.setup.untagged) <= 3  # recall: test_footprints
    db = tmp_path / "t.sqlite"
    app = make_app(footage, pipeline, db)
    try:
        c = app.test_client()
        got = c.get("/api/terrain").get_json()
        assert "obstacle" in got["types"] and len(got["pieces"]) == len(pipeline.setup.untagged)
        p = got["pieces"][0]
        assert p["type"] == "unknown" and not p["typed"] and p["area_sq_in"] > 3
        assert state_terrain(app, p["id"]).type == "unknown"
        r = c.post(f"/api/terrain/{p['id']}", json={"type": "platform", "height_in": 3.25, "by": "ref"})
        assert r.status_code == 200, r.get_json()
        assert r.get_json()["type"] == "platform" and r.get_json()["height_in"] == 3.25
        # applied to the following world states
        player = get_player(app)
        latest = player.wait_until(lambda x: any(q.id == p["id"] and q.type == "platform"
                                                 for q in x.result.state.terrain), 30)
        assert latest is not None
        typed = next(q for q in latest.result.state.terrain if q.id == p["id"])
        assert typed.height_in == 3.25 and np.allclose(typed.footprint, p["footprint"], atol=1e-3)
        assert c.get("/api/terrain").get_json()["pieces"][0]["typed_by"] == "ref"
    finally:
        stop_player(app)
    # a restart with the same SQLite file: the type is still applied
    app2 = make_app(footage, pipeline, db)
    try:
        assert state_terrain(app2, p["id"]).type == "platform"
        assert app2.test_client().get("/api/terrain").get_json()["pieces"][0]["type"] == "platform"
    finally:
        stop_player(app2)


@pytest.mark.parametrize("path, body, status, words", [
    ("/api/terrain/untagged-99", {"type": "obstacle", "height_in": 2}, 404, "no untagged terrain piece"),
    ("/api/terrain/untagged-1", {"type": "lava", "height_in": 2}, 400, "'type' must be one of"),
    ("/api/terrain/untagged-1", {"type": "obstacle", "height_in": -1}, 400, "0 to"),
    ("/api/terrain/untagged-1", {"type": "obstacle", "height_in": "tall"}, 400, "number of inches"),
    ("/api/terrain/untagged-1", {"type": "obstacle"}, 400, "number of inches"),
    ("/api/terrain/untagged-1", {"type": "obstacle", "height_in": 2, "colour": "red"}, 400, "unknown field"),
    ("/api/terrain/untagged-1", "{not json", 400, "not valid JSON"),
])
def test_bad_input_is_refused_with_one_line(footage, pipeline, tmp_path, path, body, status, words):
    from webui import stop_player

    app = make_app(footage, pipeline, tmp_path / "bad.sqlite")
    try:
        c = app.test_client()
        if isinstance(body, str):
            r = c.post(path, data=body, content_type="application/json")
        else:
            r = c.post(path, json=body)
        assert r.status_code == status
        msg = r.get_json()["error"]
        assert words in msg and "\n" not in msg
        assert all(not p["typed"] for p in c.get("/api/terrain").get_json()["pieces"])
    finally:
        stop_player(app)
