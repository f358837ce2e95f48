"""The Epic panel of the overlay page in a real headless Chromium (Debian's chromium driven
by ``playwright``), on a real server playing the bundled Epic clip through a real
pipeline: the objective markers and each side's Army Morale appear, ending the Rally
phase from the page (a D3 typed in for a held Take & Hold marker, else rolled by the
tool) updates the morale and the history exactly as the ledger API has them; a Warcry
table shows no Epic panel and no script errors."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

EPIC = Path(__file__).resolve().parents[1] / "sample_footage" / "epic-demo"


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


@pytest.fixture
def epic_page(epic_pipeline, tmp_path, browser, serve_app):
    """The app playing the Epic clip (as tests/test_webui_epic.py builds it) on 127.0.0.1,
    once its markers are seen, and Chromium on its overlay page: (url, page, errors)."""
    from webui import create_app, get_player, stop_player

    app = create_app({"SOURCE": str(EPIC), "FOOTAGE": str(EPIC), "JUDGE_TOKEN": None,
                      "PIPELINE": epic_pipeline.fresh(), "DATABASE": str(tmp_path / "epic.sqlite")})
    try:
        player = get_player(app)
        # Markers are tokens, found from the first frames (units may still be incomplete).
        if player.wait_until(lambda x: x.result.epic is not None and len(x.result.epic.markers) > 0, 120) is None:
            pytest.fail(f"the live player never saw the Epic markers ({player.last_error or 'no error'})")
        url = serve_app(app)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url + "/", wait_until="domcontentloaded")
        yield url, page, errors
    finally:
        stop_player(app)


def side_text(sides: list[dict], i: int) -> str:
    return next((s["colour"] for s in sides if s["index"] == i), f"side {i}")


@pytest.mark.browser
def test_epic_panel_shows_markers_and_morale_and_ends_the_rally_phase(epic_page):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    url, page, errors = epic_page
    page.wait_for_selector("[data-testid=epic-panel]", timeout=30_000)
    assert "Epic: Army Morale" in page.inner_text("[data-testid=epic-panel]")
    page.wait_for_function("document.querySelectorAll('#epic-markers li[data-marker]').length > 0", timeout=30_000)

    # every objective marker on the table, listed by id with its type (the page polls once
    # a second and markers come and go, e.g. a Rescue marker carried off: compare a few times)
    for _ in range(30):
        epic = get_json(url + "/api/epic")
        want = {m["id"]: m["type"] for m in epic["view"]["markers"]}
        shown = page.eval_on_selector_all("#epic-markers li[data-marker]",
                                          "els => els.map(e => [e.dataset.marker, e.textContent])")
        if {mid for mid, _ in shown} == set(want):
            break
        page.wait_for_timeout(500)
    assert {mid for mid, _ in shown} == set(want), (shown, want)
    assert {"take-and-hold", "cleanse"} <= set(want.values()), want
    sides = epic["sides"]
    assert len(sides) >= 2
    for mid, text in shown:
        assert want[mid] in text
        if want[mid] in ("take-and-hold", "cleanse", "capture"):
            assert "held by" in text or "not held" in text, text
    # Army Morale per side, at its start value (nothing ended yet)
    start = get_json(url + "/api/epic/ledger")
    assert start["history"] == [] and set(start["morale"]) == {str(s["index"]) for s in sides}
    for s in sides:
        cell = page.locator(f"[data-testid=morale-{s['index']}]")
        assert cell.inner_text().strip() == str(start["morale"][str(s["index"])])
    morale_table = page.inner_text("[data-testid=epic-morale]")
    assert all(s["colour"] in morale_table for s in sides)

    # A D3 typed in for a held Take & Hold marker; else (none held) the tool rolls. In the
    # clip red infantry A comes within 15 cm of red's Take & Hold marker: give it a while.
    th = [mid for mid, kind in want.items() if kind == "take-and-hold"]
    try:
        page.wait_for_function("ids => [...document.querySelectorAll('#epic-dice input[data-die]')]"
                               ".some((i) => ids.includes(i.dataset.die))", arg=th, timeout=40_000)
    except PlaywrightTimeout:
        pass  # none held within the clip's time here: leave it to the tool's dice
    dice = page.locator("#epic-dice input[data-die]")
    typed = None
    for k in range(dice.count()):
        mid = dice.nth(k).get_attribute("data-die")
        if want.get(mid) == "take-and-hold":
            assert dice.nth(k).get_attribute("max") == "3"
            dice.nth(k).fill("2")
            typed = mid
            break
    page.click("[data-testid=epic-end-rally]")
    page.wait_for_function("document.getElementById('epic-msg').textContent.length > 0", timeout=60_000)
    msg = page.inner_text("[data-testid=epic-msg]")
    assert "Rally phase of round 1 ended" in msg, msg

    ledger = get_json(url + "/api/epic/ledger")
    assert [h["battle_round"] for h in ledger["history"]] == [1]
    changes = ledger["history"][0]["changes"]
    # the ledger adds up: start + the round's changes
    for s in sides:
        k = str(s["index"])
        assert ledger["morale"][k] == start["morale"][k] + sum(c["delta"] for c in changes if c["side"] == s["index"])
    for c in changes:
        if c["die"] == "D3" and c["marker"] == typed:
            assert (c["roll"], c["source"]) == (2, "entered"), c
        elif c["die"]:
            assert c["source"] == "rolled" and c["seed"] is not None and 1 <= c["roll"] <= int(c["die"][1:]), c
    rulings = get_json(url + "/api/rulings")
    control = rulings["rulings"][0]["control"]  # the Rally phase end, stored like a round end
    if typed is not None and control.get(typed) is not None:  # still held when the phase ended
        assert any(c["marker"] == typed and c["die"] == "D3" for c in changes), changes

    # the page shows the same morale and history as the ledger
    page.wait_for_function("document.querySelectorAll('#epic-history li').length === 1", timeout=30_000)
    for s in sides:
        k = str(s["index"])
        page.wait_for_function(
            f"(document.querySelector('[data-testid=\"morale-{k}\"]') || {{}}).textContent === '{ledger['morale'][k]}'",
            timeout=30_000)
    hist = page.inner_text("#epic-history li")
    assert hist.startswith("Round 1:"), hist
    if not changes:
        assert "no effect" in hist
    for c in changes:
        sign = "+" if c["delta"] > 0 else ""
        assert f"{side_text(sides, c['side'])} {sign}{c['delta']} ({c['marker']}: {c['effect']}" in hist, (hist, c)
        if c["die"]:
            assert f"{c['die']} = {c['roll']} {c['source']}" in hist, (hist, c)
    # the main panel moved on to battle round 2 (End Rally phase ends the round)
    page.wait_for_function("document.getElementById('battle-round').textContent.trim() === '2'", timeout=30_000)
    assert errors == [], errors


@pytest.mark.browser
def test_a_warcry_table_shows_no_epic_panel(open_page):
    app, url, page, errors = open_page("/", viewport={"width": 1400, "height": 860})
    console = []  # (a 4xx answer is logged as "Failed to load resource")
    page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
    page.reload(wait_until="domcontentloaded")
    page.wait_for_function("/^\\d+$/.test(document.getElementById('frame-index').textContent)", timeout=30_000)
    # epic.js never asks /api/epic (a 409 on a Warcry table, logged in the console on
    # every load) and adds nothing
    assert page.evaluate("document.body.dataset.game") == "warcry"
    page.wait_for_timeout(2500)  # (it would have asked at once, and again within a second)
    asked = page.evaluate("performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname)")
    assert "/api/epic" not in asked, asked
    assert page.locator("#epic-panel").count() == 0
    assert "Army Morale" not in page.inner_text("aside.panel")
    assert errors == [] and console == [], (errors, console)
