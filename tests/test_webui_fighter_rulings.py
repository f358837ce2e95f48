"""Judge tool on one fighter (issue #6): click a fighter → may it pick up the nearest
treasure, must it take a falling test if targeted; and the page's timeline of events.
Real app on the bundled footage, real rules core."""

from __future__ import annotations


def test_fighter_rulings_quote_their_rules(live_app):
    c = live_app().test_client()
    state = c.get("/api/state").get_json()["state"]
    fighter = state["fighters"][0]["id"]
    r = c.get(f"/api/fighter/{fighter}/rulings")
    assert r.status_code == 200
    body = r.get_json()
    assert body["fighter"] == fighter
    falling = body["falling"]
    assert falling["verdict"] in ("yes", "no", "too close to call") and falling["rule"]["quote"]
    treasure = body["treasure"]
    assert treasure is not None and treasure["question"]
    assert treasure["verdict"] in ("yes", "no", "too close to call")
    assert "treasure" in treasure["rule"]["quote"].lower()


def test_fighter_rulings_bad_input(live_app):
    c = live_app().test_client()
    assert c.get("/api/fighter/f999/rulings").status_code == 404
    token = c.get("/api/state").get_json()["state"]["tokens"][0]["id"]
    r = c.get(f"/api/fighter/{token}/rulings")
    assert r.status_code == 400 and "click a fighter" in r.get_json()["error"]


def test_state_carries_the_timeline_events(live_app):
    c = live_app().test_client()
    events = c.get("/api/state").get_json()["state"]["extra"]["events"]
    assert any(e["kind"] == "placed" for e in events)
    assert all({"frame", "time_s", "kind", "subject"} <= set(e) for e in events)
