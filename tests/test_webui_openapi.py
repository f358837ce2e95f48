"""Issue #29: the JSON API's OpenAPI document (webui/openapi.yaml, served at
/api/openapi.json) covers every /api route of the app and nothing else, and the API
fuzzed over it on a real server (waitress on 127.0.0.1, the bundled footage through
the real pipeline, a throw-away SQLite file) answers every request without a 5xx, as
documented, within 1 MB; plus the bugs that fuzzing found, each pinned."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not installed

from benchmarks.api_fuzz import MAX_REPLY, fuzz, waitress_thread  # noqa: E402

CI_EXAMPLES = 6  # per operation and mode: about 320 requests, ~20 s (benchmarks/api_fuzz.py: 20,000+)


def api_routes(app) -> set[tuple[str, str]]:
    """(method, path in OpenAPI's spelling) of every /api route the app registers."""
    out = set()
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/") and rule.rule != "/api":
            continue
        path = re.sub(r"<(?:[^:>]+:)?([^>]+)>", r"{\1}", rule.rule)
        out |= {(m, path) for m in rule.methods - {"HEAD", "OPTIONS"}}
    return out


def documented(doc) -> set[tuple[str, str]]:
    return {(m.upper(), path) for path, item in doc["paths"].items() for m in item
            if m in ("get", "post", "put", "patch", "delete")}


@pytest.fixture
def offline_app(tmp_path):
    """The app without its live player (routes and the document only)."""
    from webui import create_app

    return create_app({"START_PLAYER": False, "DATABASE": str(tmp_path / "doc.sqlite")})


def test_the_document_names_every_api_route_and_no_other(offline_app):
    doc = offline_app.test_client().get("/api/openapi.json").get_json()
    routes, described = api_routes(offline_app), documented(doc)
    assert len(routes) >= 37
    assert routes - described == set(), "routes missing from webui/openapi.yaml"
    assert described - routes == set(), "webui/openapi.yaml describes routes the app does not have"
    # and each path parameter of a route is documented under the route's own name
    for path, item in doc["paths"].items():
        names = set(re.findall(r"{([^}]+)}", path))
        for method, op in item.items():
            params = [p if "$ref" not in p else _ref(doc, p["$ref"]) for p in op.get("parameters", [])]
            assert {p["name"] for p in params if p["in"] == "path"} == names, (method, path)


def _ref(doc, ref: str):
    node = doc
    for part in ref.lstrip("#/").split("/"):
        node = node[part]
    return node


def test_the_document_is_openapi_3_that_schemathesis_reads(offline_app):
    import schemathesis

    resp = offline_app.test_client().get("/api/openapi.json")
    assert resp.status_code == 200 and resp.mimetype == "application/json"
    doc = resp.get_json()
    assert doc["openapi"].startswith("3.")
    ops = [r.ok() for r in schemathesis.openapi.from_dict(doc).get_all_operations()]  # (.ok(): raises if invalid)
    assert len(ops) == len(documented(doc))
    # every operation says what a bad request gets, as JSON
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if op.get("parameters") or op.get("requestBody"):
                assert "400" in op["responses"] or "404" in op["responses"], (method, path)


def test_fuzzing_every_route_on_a_real_server(live_app):
    """A CI-sized run of benchmarks/api_fuzz.py: a few valid and invalid requests per
    operation, every reply checked (no 5xx, documented status, content type and body,
    invalid input refused, at most 1 MB)."""
    app = live_app()
    started = time.monotonic()
    with waitress_thread(app) as base:
        stats = fuzz(base, CI_EXAMPLES, seed=1)
    took = time.monotonic() - started
    print(f"fuzzed: {stats.summary() | {'failures': len(stats.failures)}} in {took:.1f} s")
    assert stats.failures == []
    assert stats.server_errors == 0 and stats.requests >= 300
    assert len(stats.per_operation) == len(api_routes(app))  # every route was asked
    assert 0 < stats.largest_page[0] <= MAX_REPLY  # (and the export with its pictures within its own bound)
    assert {400, 404}.issubset(stats.statuses) and stats.statuses[200] > 0  # both kinds of answer were seen


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


def test_treasure_ids_and_capture_choices_are_checked(live_app):
    c = live_app(FIGHTER_WOUNDS={}).test_client()
    fid = c.get("/api/fighters/state").get_json()["fighters"][0]["id"]
    _error(c.post(f"/api/fighters/{fid}/carry", json={"treasure": "t\x011"}), 400, "'treasure'")
    # a choice is 'capture' or 'destroy', checked before any table is asked (an unhashable
    # one reached the Morale rules)
    for bad in (["capture"], {"a": 1}, "keep", 3):
        _error(c.post("/api/epic/rally", json={"capture_choices": {"m1": bad}}), 400, "'capture_choices.m1'")


def test_an_epic_seed_is_bounded(epic_pipeline, tmp_path):
    """The seed is kept in the ledger and served with every Epic view: 64 kB of it was."""
    from webui import create_app, stop_player

    epic = ROOT / "sample_footage" / "epic-demo"
    app = create_app({"SOURCE": str(epic), "FOOTAGE": str(epic), "JUDGE_TOKEN": None,
                      "PIPELINE": epic_pipeline.fresh(), "DATABASE": str(tmp_path / "epic.sqlite")})
    try:
        from webui import get_player

        assert get_player(app).wait_until(lambda x: x.result.epic is not None, 120) is not None
        c = app.test_client()
        _error(c.post("/api/epic/rally", json={"seed": "s" * 201}), 400, "'seed'", "200 characters")
        r = c.post("/api/epic/rally", json={"seed": "s" * 200})
        assert r.status_code == 201 or "seed" not in r.get_json()["error"], r.get_data(as_text=True)[:300]
    finally:
        stop_player(app)


@pytest.mark.parametrize("raw", [b"\x0b", b" \x0c "])
def test_a_body_of_non_json_whitespace_is_not_json(live_app, raw):
    """A body of "\\v" passed as empty ({}) and started a new battle round: Python's
    strip() takes more than JSON's four whitespace characters."""
    c = live_app(START_PLAYER=False).test_client()
    _error(c.post("/api/fighters/new-round", data=raw, content_type="application/json"), 400, "not valid JSON")
    assert c.post("/api/fighters/new-round", data=b" \r\n\t", content_type="application/json").status_code == 200
