"""Issue #29: loading a page logs no failed request in the browser's console: the page
knows its game (only an Epic game's page asks /api/epic, a 409 on Warcry), and
/favicon.ico is answered."""

from __future__ import annotations

from pathlib import Path

import pytest

EPIC = Path(__file__).resolve().parents[1] / "sample_footage" / "epic-demo"


def test_a_warcry_page_says_its_game_and_favicon_is_no_404(live_app):
    app = live_app()
    client = app.test_client()
    page = client.get("/").get_data(as_text=True)
    assert '<body data-game="warcry">' in page
    assert client.get("/api/epic").status_code == 409  # what the page no longer asks
    r = client.get("/favicon.ico")
    assert r.status_code == 204 and r.get_data() == b""


def test_an_epic_page_says_its_game(epic_pipeline, tmp_path):
    from webui import create_app, stop_player

    app = create_app({"SOURCE": str(EPIC), "FOOTAGE": str(EPIC), "JUDGE_TOKEN": None,
                      "PIPELINE": epic_pipeline.fresh(), "DATABASE": str(tmp_path / "epic.sqlite")})
    try:
        assert '<body data-game="epic">' in app.test_client().get("/").get_data(as_text=True)
    finally:
        stop_player(app)


def test_epic_js_asks_only_on_an_epic_page():
    js = (Path(__file__).resolve().parents[1] / "webui" / "static" / "epic.js").read_text()
    guard = js.index('document.body.dataset.game !== "epic"')
    assert guard < js.index('"/api/epic"'), "epic.js must check the page's game before asking /api/epic"


@pytest.mark.parametrize("path", ["/", "/fighters", "/calibration"])
def test_pages_render(live_app, path):
    app = live_app(START_PLAYER=False)
    r = app.test_client().get(path)
    assert r.status_code == 200, (path, r.status_code)
