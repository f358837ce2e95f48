"""Issue #29: every POST route of the web API, on the real apps (Warcry and Epic footage
played through real pipelines, SQLite files), answers bodies no user should send with a
4xx JSON error naming the problem, never a 5xx: JSON nested 20,000 deep, whole numbers
beyond 64 bits, lone surrogates in names and notes, lists and objects where a string
belongs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

EPIC = Path(__file__).resolve().parents[1] / "sample_footage" / "epic-demo"

BAD_VALUES = {"beyond 64 bits": 2 ** 64, "below 64 bits": -(2 ** 63) - 1, "30 digits": 10 ** 30,
              "lone surrogate": "\ud800", "surrogate in a name": "Kurnoth \udfff Hunter", "a list": ["a", "b"],
              "an object": {"a": 1}, "a list of big numbers": [2 ** 70], "an object of surrogates": {"\ud800": 1}}


def templates(fighter: str) -> list[tuple[str, dict]]:
    """(a part of a route's URL, a body it accepts): each field of these is then replaced
    by each bad value in turn, so a bad value reaches where the route reads it."""
    by = {"by": "judge"}
    roster = {"fighters": [{"name": "Vex", "side": 0, "base": 32, "runemarks": ["leader"], "move": 5, "wounds": 20}]}
    return [("/round/end", {"battle_round": 1}), ("/activate", by), ("/half-activate", by), ("/new-round", by),
            ("/damage", {"n": 1, **by}), ("/undamage", {"n": 1, **by}), ("/wounds", {"wounds": 5, **by}),
            ("/carry", {"treasure": None, **by}), ("/api/roster", roster),
            ("/api/roster", {"text": "- {name: Vex, side: 0, base: 32}"}),
            ("/roster/assign", {"fighter": fighter, "roster": "Vex", **by}),
            ("/corrections", {"fighter": fighter, "action": "move", "x": 10, "y": 10, "z": 0, "note": "n", **by}),
            ("/corrections", {"fighter": fighter, "action": "side", "side": 1, "note": "n", **by}),
            ("/undo", by), ("/terrain/", {"type": "obstacle", "height_in": 2, **by}),
            ("/epic/rally", {"battle_round": 1, "dice": {"red-take-and-hold": 3}, "seed": 1,
                             "capture_choices": {"x": "capture"}}),
            ("/epic/close-combat", {"marker": "x", "new_escort": "y"}),
            ("/epic/bunker", {"marker": "red-bunker", "hits": 1, "critical": False, "die": 3, "seed": "s"})]


def _leaves(v, path=()):
    """The paths to every value in ``v`` (the containers too)."""
    yield path
    if isinstance(v, dict):
        for k, x in v.items():
            yield from _leaves(x, path + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from _leaves(x, path + (i,))


def _with(v, path, new):
    if not path:
        return new
    v = json.loads(json.dumps(v))
    target = v
    for k in path[:-1]:
        target = target[k]
    target[path[-1]] = new
    return v


def _raw(obj) -> str:
    return json.dumps(obj)  # (ensure_ascii: a lone surrogate goes as the escape "\ud800")


def bad_bodies(url: str, fighter: str) -> list[tuple[str, str]]:
    """(what, raw JSON text) for ``url``: its accepted bodies with each value made bad in
    turn, and bodies bad whatever the route."""
    out = []
    for part, body in templates(fighter):
        if part in url:
            out += [(f"{'.'.join(map(str, path))}: {what}", _raw(_with(body, path, v)))
                    for path in _leaves(body) if path for what, v in BAD_VALUES.items()]
    deep = "[" * 20_000 + "]" * 20_000  # (40 kB: under the 64 kB body limit)
    out += [("nested 20,000 deep", '{"name": ' + deep + "}"), ("nested 20,000 deep, whole", deep),
            ("nested 65 deep", '{"fighters": ' + "[" * 65 + "]" * 65 + "}"),
            ("NaN", '{"x": NaN, "y": 1}'), ("a key with a surrogate", '{"\\ud800": 1}'),
            ("5,000 digits", '{"wounds": ' + "9" * 5000 + "}")]
    return out


def post_routes(app, fighter: str, piece: str) -> list[str]:
    """Every POST route on ``app``, its variables filled in (a fighter and a terrain piece
    on the table; an id beyond 64 bits for the integer ones)."""
    fill = {"fid": fighter, "piece_id": piece, "correction_id": str(2 ** 64)}
    urls = []
    for rule in app.url_map.iter_rules():
        if "POST" not in rule.methods:
            continue
        url = rule.rule
        for arg in rule.arguments:
            url = url.replace(f"<{arg}>", fill[arg]).replace(f"<int:{arg}>", fill[arg])
        assert "<" not in url, url
        urls.append(url)
    return urls


def walk(app, fighter: str, piece: str) -> list[str]:
    """Each (route, body) answered with a 5xx or without a JSON error: '<status> POST url what'."""
    client = app.test_client()
    failures = []
    for url in post_routes(app, fighter, piece):
        for what, raw in bad_bodies(url, fighter):
            r = client.post(url, data=raw, content_type="application/json")
            body = r.get_json(silent=True) or {}
            if r.status_code >= 500 or not (400 <= r.status_code < 500 and body.get("error")) and r.status_code >= 300:
                failures.append(f"{r.status_code} POST {url} {what}: {r.get_data(as_text=True)[:200]}")
            elif 400 <= r.status_code < 500 and len(r.get_data()) > 2000:
                failures.append(f"{r.status_code} POST {url} {what}: an error reply of {len(r.get_data())} bytes")
    return failures


def test_every_post_route_answers_bad_bodies_with_a_4xx(live_app):
    app = live_app()
    client = app.test_client()
    st = client.get("/api/state").get_json()["state"]
    fighter = st["fighters"][0]["id"]
    piece = st["terrain"][0]["id"] if st["terrain"] else "wall"
    routes = post_routes(app, fighter, piece)
    assert len(routes) >= 15 and any("/epic/bunker" in u for u in routes)
    assert walk(app, fighter, piece) == []


@pytest.fixture
def epic_app(epic_pipeline, tmp_path):
    from webui import create_app, get_player, stop_player

    app = create_app({"SOURCE": str(EPIC), "FOOTAGE": str(EPIC), "JUDGE_TOKEN": None,
                      "PIPELINE": epic_pipeline.fresh(), "DATABASE": str(tmp_path / "epic.sqlite")})
    if get_player(app).wait_until(lambda x: x.result.epic is not None and len(x.result.epic.units) >= 5, 120) is None:
        stop_player(app)
        pytest.fail("the live player never saw the Epic units")
    yield app
    stop_player(app)


def test_every_post_route_of_an_epic_game_answers_bad_bodies_with_a_4xx(epic_app):
    st = epic_app.test_client().get("/api/state").get_json()["state"]
    assert walk(epic_app, st["fighters"][0]["id"], "bunker") == []


@pytest.mark.parametrize("marker", [["red-bunker"], {"id": "red-bunker"}, 7, None])
def test_bunker_marker_must_be_a_string(epic_app, marker):
    r = epic_app.test_client().post("/api/epic/bunker", json={"marker": marker, "hits": 1})
    assert r.status_code == 400 and "'marker'" in r.get_json()["error"], r.get_data(as_text=True)


@pytest.mark.parametrize("raw,field", [
    ('{"note": "\\ud800"}', "note"),
    ('{"roster": [{"name": "ok"}, {"name": "bad \\udc00"}]}', "roster[1].name"),
    ('{"wounds": 18446744073709551616}', "wounds"),
])
def test_the_error_names_the_field(live_app, raw, field):
    app = live_app(START_PLAYER=False)
    r = app.test_client().post("/api/roster", data=raw, content_type="application/json")
    assert r.status_code == 400 and f"'{field}'" in r.get_json()["error"], r.get_data(as_text=True)


@pytest.mark.parametrize("url", ["/api/rulings/18446744073709551616", "/api/rulings/18446744073709551616/snapshot.jpg",
                                 "/api/games/18446744073709551616/export.json",
                                 "/api/rulings?game=18446744073709551616", "/api/rulings?game=" + "9" * 5000])
def test_ids_beyond_64_bits_in_urls_are_4xx(live_app, url):
    app = live_app(START_PLAYER=False)
    r = app.test_client().get(url)
    assert 400 <= r.status_code < 500 and r.get_json()["error"], r.get_data(as_text=True)[:300]
    assert len(r.get_data()) < 2000


def test_a_body_over_the_size_limit_is_413(live_app):
    app = live_app(START_PLAYER=False)
    r = app.test_client().post("/api/roster", data='{"text": "' + "x" * 100_000 + '"}', content_type="application/json")
    assert r.status_code == 413 and r.get_json()["error"]


LAUGHS = """\
- name: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
  side: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
  base: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
  runemarks: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
"""


def test_a_roster_of_nested_aliases_is_refused_briefly(live_app):
    """A "billion laughs" roster (a few hundred bytes of nested aliases) came back as a
    722 kB error reply; aliases are refused, and the reply is one short line."""
    app = live_app(START_PLAYER=False)
    r = app.test_client().post("/api/roster", json={"text": LAUGHS})
    assert r.status_code == 400 and len(r.get_data()) < 500, len(r.get_data())
    assert "aliases" in r.get_json()["error"]
    r = app.test_client().post("/api/roster", json={"text": "- &x {name: Vex, side: 0, base: 32}\n"})
    assert r.status_code == 400 and "anchors" in r.get_json()["error"]  # an anchor alone too
    r = app.test_client().post("/api/roster", json={"text": "- {name: Vex, side: 0, base: 32}\n"})
    assert r.status_code == 201, r.get_data(as_text=True)


@pytest.mark.parametrize("fighter", [
    {"name": "x" * 50_000, "side": 0, "base": 32},
    {"name": "Vex", "side": "y" * 50_000, "base": 32},
    {"name": "Vex", "side": 0, "base": ["z" * 100] * 500},
    {"name": "Vex", "side": 0, "base": 32, "runemarks": ["r" * 30] * 1000},
])
def test_roster_errors_quote_at_most_200_characters(live_app, fighter):
    app = live_app(START_PLAYER=False)
    r = app.test_client().post("/api/roster", json={"fighters": [fighter]})
    assert r.status_code == 400 and len(r.get_json()["error"]) < 400, r.get_data(as_text=True)[:300]


def test_a_roster_text_holding_a_lone_surrogate_is_400(live_app):
    app = live_app(START_PLAYER=False)
    r = app.test_client().post("/api/roster", json={"text": '- {name: "Vex \\ud800", side: 0, base: 32}\n'})
    assert r.status_code == 400 and "surrogate" in r.get_json()["error"], r.get_data(as_text=True)
