"""The fighter list page (/fighters) in a real headless Chromium (Debian's
/usr/bin/chromium driven by playwright): the scripted game by clicking, on a phone-sized
screen, against the real app playing the bundled footage with a SQLite file."""

from __future__ import annotations

import json
import sqlite3

import pytest



@pytest.mark.browser
def test_fighter_page_scripted_game(open_page):
    app, url, page, errors = open_page("/fighters", viewport={"width": 390, "height": 844},
                                       is_mobile=True, has_touch=True)
    page.wait_for_selector("[data-testid=fighter-row]", timeout=20_000)
    assert page.inner_text("#battle-round").strip() == "1"

    rows = page.locator("[data-testid=fighter-row]")
    ids = [rows.nth(i).get_attribute("data-fighter") for i in range(min(rows.count(), 3))]
    assert len(ids) == 3
    a, b, carrier = ids

    def row(fid):
        return page.locator(f"[data-testid=fighter-row][data-fighter='{fid}']")

    def status(fid, want):
        page.wait_for_function(
            f"document.querySelector(\"[data-fighter='{fid}'] [data-testid=status]\").textContent === '{want}'",
            timeout=10_000)

    # fits a phone: no sideways scrolling, buttons big enough to tap
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    box = row(a).locator("[data-action=activate]").bounding_box()
    assert box["height"] >= 40

    row(a).locator("[data-action=activate]").click()
    status(a, "activated")
    assert row(a).locator("[data-action=activate]").is_disabled()
    row(b).locator("[data-action=half-activate]").click()
    status(b, "half-activated")
    row(b).locator("[data-action=activate]").click()
    status(b, "activated")

    # the carrier: Wounds 2, picks up the treasure, two damage: taken down, drop offered
    row(carrier).locator("[data-testid=wounds]").fill("2")
    row(carrier).locator("[data-action=wounds]").click()
    page.wait_for_function(f"document.querySelector(\"[data-fighter='{carrier}'] [data-testid=damage]\")"
                           f".textContent === '0 / 2 dmg'", timeout=10_000)
    row(carrier).locator("[data-action=carry]").click()
    page.wait_for_function(f"document.querySelector(\"[data-fighter='{carrier}'] [data-testid=carrying]\")"
                           f".textContent.startsWith('carrying ')", timeout=10_000)
    treasure = row(carrier).locator("[data-testid=carrying]").inner_text().split()[-1]
    row(carrier).locator("[data-action=damage]").click()
    page.wait_for_function(f"document.querySelector(\"[data-fighter='{carrier}'] [data-testid=damage]\")"
                           f".textContent === '1 / 2 dmg'", timeout=10_000)
    row(carrier).locator("[data-action=damage]").click()
    status(carrier, "removed")
    page.wait_for_selector("[data-testid=drop]:not([hidden])", timeout=10_000)
    drop = page.inner_text("[data-testid=drop]")
    assert f"{carrier} drops {treasure}" in drop and "legal points" in drop
    assert "taken down" in page.inner_text("#msg")
    assert row(carrier).locator("[data-action=damage]").is_disabled()
    assert row(carrier).locator("[data-testid=carrying]").inner_text() == "no treasure"

    # removing damage below zero is refused with the server's message
    row(a).locator("[data-action=undamage]").evaluate("b => { b.disabled = false; b.click(); }")
    page.wait_for_function("document.getElementById('msg').textContent.includes('below zero')", timeout=10_000)

    # the still-ready reminder, then the next round resets activations
    assert "Still ready:" in page.inner_text("[data-testid=reminders]")
    assert a not in page.inner_text("[data-testid=reminders]").replace(",", " ").split()
    page.click("[data-testid=new-round]")
    page.wait_for_function("document.getElementById('battle-round').textContent === '2'", timeout=10_000)
    assert "Not activated:" in page.inner_text("#msg")
    status(a, "ready")
    status(b, "ready")
    status(carrier, "removed")
    assert errors == []

    # the clicks are in the SQLite file
    db = sqlite3.connect(app.config["DATABASE"])
    try:
        log = db.execute("SELECT action, fighter_id, who, states FROM fighter_changes ORDER BY id").fetchall()
    finally:
        db.close()
    assert [(x[0], x[1]) for x in log] == [("activate", a), ("half-activate", b), ("activate", b), ("wounds", carrier),
                                          ("carry", carrier), ("damage", carrier), ("damage", carrier),
                                          ("new-round", None)]
    assert {x[2] for x in log} == {"player"}
    last = {f["id"]: f for f in json.loads(log[-1][3])["fighters"]}
    assert last[carrier]["taken_down"] and last[a]["activation"] == "ready"
