"""Issue #29: bad input to the JSON API gets a 4xx whose message is one short line
naming the field, whatever the client put in names and ids (found by fuzzing the API
over its OpenAPI document)."""

from __future__ import annotations


# -- what the fuzzer found: each error one short line naming the field -----------------
def _error(resp, status: int, *words: str) -> str:
    assert resp.status_code == status, (resp.status_code, resp.get_data(as_text=True)[:300])
    msg = resp.get_json()["error"]
    assert "\n" not in msg and len(msg) < 400, msg
    for w in words:
        assert w in msg, msg
    return msg


def test_unknown_field_names_are_quoted_on_one_line(live_app):
    """A field name is the client's text: it was echoed raw, newlines and all, every one."""
    c = live_app().test_client()
    body = {f"x{i}\ny": 1 for i in range(7)} | {"by": "judge"}
    msg = _error(c.post("/api/fighters/new-round", json=body), 400, "unknown field(s)", "'x0\\ny'", "and 2 more")
    assert "x6" not in msg
    _error(c.post("/api/game/new", json={"a\nb": 1}), 400, "'a\\nb'", "send {}")
    _error(c.post("/api/roster", json={"fighters": [{"name": "A", "side": 0, "base": 32, "sp\need": 4}]}), 400,
           "unknown key(s) 'sp\\need'")


def test_ids_in_paths_and_queries_are_bounded_and_one_line(live_app):
    """An id in a URL was echoed raw in the 404 (a %0A made it two lines; 60 kB of id,
    60 kB of message): now 400 naming the parameter."""
    app = live_app()
    c = app.test_client()
    fid = c.get("/api/state").get_json()["state"]["fighters"][0]["id"]
    _error(c.get("/api/fighter/%0A/rulings"), 400, "'fighter_id'", "1-64 characters")
    _error(c.get("/api/fighter/" + "f" * 65 + "/rulings"), 400, "'fighter_id'")
    _error(c.get(f"/api/measure?from={fid}&to=" + "o" * 65), 400, "'to'")
    _error(c.get("/api/measure?from=a%0Bb&to=" + fid), 400, "'from'")
    _error(c.post("/api/fighters/f%0A1/activate", json={}), 400, "'fid'")
    _error(c.post("/api/terrain/u%0A1", json={"type": "low", "height_in": 1}), 400, "'piece_id'")
    # the ids the tracker makes still go through
    assert c.get(f"/api/fighter/{fid}/rulings").status_code == 200
    _error(c.get(f"/api/fighter/{'f' * 64}/rulings"), 404, "no fighter or token")


def test_damage_wounds_and_names_are_bounded(live_app):
    c = live_app(FIGHTER_WOUNDS={}).test_client()
    fid = c.get("/api/fighters/state").get_json()["fighters"][0]["id"]
    _error(c.post(f"/api/fighters/{fid}/damage", json={"n": 201}), 400, "'n' must be at most 200")
    _error(c.post(f"/api/fighters/{fid}/wounds", json={"wounds": 2 ** 62}), 400, "'wounds' must be at most 200")
    assert c.post(f"/api/fighters/{fid}/wounds", json={"wounds": 200}).status_code == 200
    # a name is 1-40 characters as sent (spaces round it were stripped before counting)
    _error(c.post("/api/roster/assign", json={"fighter": fid, "roster": "A" * 41}), 400, "'roster'")
    _error(c.post("/api/roster/assign", json={"fighter": fid, "roster": "Vex", "by": " " * 30 + "J" * 11}), 400,
           "'by'")
    _error(c.post("/api/roster/assign", json={"fighter": fid, "roster": "no\none"}), 404, "'no\\none'")
