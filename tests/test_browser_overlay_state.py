"""Fighter state on the overlay page (issue #8) in a real headless Chromium (Debian's
/usr/bin/chromium driven by playwright) against the real server playing the bundled
footage: the scripted game by clicking bases on the video and with the keys (activate,
half-activate, damage until taken down while carrying treasure, the end of the battle
round resets and reminds of fighters still ready), checked on the page, through the API
and in the SQLite log."""

from __future__ import annotations

import json
import sqlite3

import pytest


def js(v) -> str:
    return json.dumps(v)


def fighters_api(page, url) -> dict:
    """The fighter states as the server has them (GET /api/fighters/state)."""
    r = page.request.get(url + "/api/fighters/state")
    assert r.ok, r.text()
    return r.json()


def by_id(state: dict) -> dict:
    return {f["id"]: f for f in state["fighters"]}


def click_fighter(page, fid: str) -> None:
    """Close any popover (Esc), then click the middle of ``fid``'s base on the video where
    the page's own state puts it (stream pixels scaled to the displayed picture), until
    the page opens ``fid``'s state popover (a fighter moved or a hand passed: click again)."""
    for _ in range(6):
        page.keyboard.press("Escape")
        page.wait_for_function(
            f"(s => s && s.pixels.fighters[{js(fid)}] && s.state.fighters.some(f => f.id === {js(fid)} && !f.occluded))"
            "(window.tabletracker.state)", timeout=30_000)
        u, v, _ = page.evaluate(f"window.tabletracker.state.pixels.fighters[{js(fid)}]")
        stream_w = page.evaluate("window.tabletracker.state.stream.width")
        box = page.locator("#video").bounding_box()
        k = box["width"] / stream_w
        page.mouse.click(box["x"] + u * k, box["y"] + v * k)
        try:
            page.wait_for_function(f"window.tabletracker.selected === {js(fid)} && "
                                   f"document.getElementById('fs-id').textContent === {js(fid)}", timeout=3_000)
            break
        except Exception:  # noqa: BLE001 - playwright's TimeoutError: try again
            continue
    else:
        pytest.fail(f"clicking {fid}'s base never opened its state popover")
    assert page.is_visible("[data-testid=fs-pop]")


def popover_status(page, want: str) -> None:
    page.wait_for_function(f"document.getElementById('fs-status').textContent === {js(want)}", timeout=10_000)


def mark(page, fid: str, want: str) -> None:
    """The mark drawn for ``fid`` on the video is ``want`` (marks are drawn only on
    fighters the tracker has on the table in the frame shown: the live clip goes on, and
    on a loaded machine a fighter can be out of it for a while), and the panel list
    says so."""
    page.wait_for_function(f"window.tabletracker.marks[{js(fid)}] === {js(want)} || "
                           f"(window.tabletracker.state && !window.tabletracker.state.pixels.fighters[{js(fid)}])",
                           timeout=10_000)
    assert page.evaluate(f"window.tabletracker.marks[{js(fid)}]") in (want, None)
    page.wait_for_function(
        f"(li => !li || li.dataset.status === {js(want)})"
        f"(document.querySelector('#fighters li[data-fighter={fid}]'))", timeout=10_000)


def canvas_rgba(page, fid: str) -> list[int]:
    """The overlay canvas's pixel at the middle of ``fid``'s base (what the page drew)."""
    return page.evaluate(
        f"(() => {{ const p = window.tabletracker.state.pixels.fighters[{js(fid)}];"
        " const c = document.getElementById('judge-canvas');"
        " return Array.from(c.getContext('2d').getImageData(Math.round(p[0]), Math.round(p[1]), 1, 1).data); })()")


def message(page, text: str, err: bool) -> None:
    page.wait_for_function(f"document.getElementById('fs-msg').textContent.includes({js(text)})", timeout=10_000)
    assert page.locator("#fs-msg").evaluate("e => e.classList.contains('err')") is err
    assert text in page.inner_text("[data-testid=fstate-msg]")
    assert "\n" not in page.inner_text("#fs-msg")


@pytest.mark.browser
def test_scripted_game_on_the_overlay(open_page):
    app, url, page, errors = open_page("/", viewport={"width": 1400, "height": 1000})
    page.wait_for_function("document.getElementById('video').naturalWidth > 0", timeout=30_000)
    page.wait_for_function("window.tabletracker.fighters && window.tabletracker.state && "
                           "window.tabletracker.state.state.fighters.filter(f => !f.occluded && "
                           "window.tabletracker.state.pixels.fighters[f.id]).length >= 3", timeout=30_000)

    # three fighters in full view; the carrier on the floor (its drop points are there)
    seen = page.evaluate("window.tabletracker.state.state.fighters.filter(f => !f.occluded && "
                         "window.tabletracker.state.pixels.fighters[f.id]).map(f => [f.id, f.z])")
    carrier = next(fid for fid, z in seen if z == 0.0)
    a, b = [fid for fid, _ in seen if fid != carrier][:2]
    start = by_id(fighters_api(page, url))
    assert all(start[x]["status"] == "ready" for x in (a, b, carrier))
    mark(page, a, "ready")

    # -- a: click its base, then Activate; again with the key: refused, said on the page
    click_fighter(page, a)
    popover_status(page, "ready")
    assert "A" in page.inner_text("[data-testid=fs-activate] kbd")
    assert page.inner_text("[data-testid=fs-half] kbd") == "H"
    pop, vid = page.locator("[data-testid=fs-pop]").bounding_box(), page.locator("#video").bounding_box()
    assert vid["x"] <= pop["x"] and pop["x"] + pop["width"] <= vid["x"] + vid["width"] + 1  # over the picture
    page.click("[data-testid=fs-activate]")
    popover_status(page, "activated")
    message(page, f"{a} activates", err=False)
    assert by_id(fighters_api(page, url))[a]["activation"] == "activated"
    mark(page, a, "activated")
    assert canvas_rgba(page, a)[3] > 0  # an activated base is dimmed
    assert page.is_disabled("[data-testid=fs-activate]") and page.is_disabled("[data-testid=fs-half]")
    page.keyboard.press("a")
    message(page, f"{a} has already activated in battle round 1", err=True)

    # -- b: half-activated with the key
    click_fighter(page, b)
    assert page.inner_text("#fs-msg") == ""
    page.keyboard.press("h")
    popover_status(page, "half-activated")
    mark(page, b, "half-activated")
    assert by_id(fighters_api(page, url))[b]["activation"] == "half-activated"

    # -- the carrier, by the judge: Wounds 2, picks up the treasure, damage to taken down
    click_fighter(page, carrier)
    page.select_option("[data-testid=fs-by]", "judge")
    page.fill("[data-testid=fs-wounds]", "2")
    page.click("[data-testid=fs-set-wounds]")
    page.wait_for_function("document.getElementById('fs-damage').textContent === '0 / 2 dmg'", timeout=10_000)
    treasure = page.locator("[data-testid=fs-treasure] option").first.get_attribute("value")
    page.select_option("[data-testid=fs-treasure]", treasure)
    page.click("[data-testid=fs-carry]")
    page.wait_for_function(f"document.getElementById('fs-carrying').textContent === 'carrying {treasure}'",
                           timeout=10_000)
    page.keyboard.press("+")
    page.wait_for_function("document.getElementById('fs-damage').textContent === '1 / 2 dmg'", timeout=10_000)
    page.wait_for_function(f"window.tabletracker.fighters.fighters.some(f => f.id === {js(carrier)} && f.damage === 1)",
                           timeout=10_000)
    page.keyboard.press("-")
    page.wait_for_function("document.getElementById('fs-damage').textContent === '0 / 2 dmg'", timeout=10_000)
    page.keyboard.press("+")
    page.wait_for_function("document.getElementById('fs-damage').textContent === '1 / 2 dmg'", timeout=10_000)
    page.click("[data-testid=fs-damage-add]")
    popover_status(page, "removed")
    message(page, f"{carrier} is taken down", err=False)
    assert f"drops {treasure}" in page.inner_text("#fs-msg")
    page.wait_for_selector("[data-testid=fs-drop-offer]:not([hidden])", timeout=10_000)
    drop = page.inner_text("[data-testid=fs-drop-offer]")
    assert f"{carrier} drops {treasure}" in drop and "legal points" in drop
    assert page.inner_text("#fs-carrying") == ""
    assert page.is_disabled("[data-testid=fs-damage-add]") and page.is_disabled("[data-testid=fs-activate]")
    mark(page, carrier, "removed")
    r, g, bl, alpha = canvas_rgba(page, carrier)  # crossed out in red
    assert alpha > 0 and r > 150 and r > g + 60 and r > bl + 60, (r, g, bl, alpha)
    st = fighters_api(page, url)
    f = by_id(st)[carrier]
    assert f["taken_down"] and f["status"] == "removed" and f["carrying"] is None and f["damage"] == 2
    assert carrier in st["taken_down"] and carrier not in st["still_ready"]
    page.keyboard.press("+")  # no more damage on a fighter taken down: the server's one line
    message(page, f"{carrier} is already taken down", err=True)

    # -- the reminder: exactly the fighters still ready, as the server counts them (the
    # clip goes on: a fighter the tracker first sees now joins the server's list before
    # the page's next poll, so compare the two until the page has caught up)
    page.wait_for_function("document.getElementById('still-ready').textContent.startsWith("
                           "'Still ready in battle round 1: ')", timeout=10_000)
    for _ in range(40):
        still = fighters_api(page, url)["still_ready"]
        shown = page.inner_text("[data-testid=still-ready]").split(": ", 1)[1].split(", ")
        if shown == still:
            break
        page.wait_for_timeout(250)
    assert still and a not in still and b not in still and carrier not in still
    assert shown == still

    # -- end the battle round on the overlay: reminder in its answer, activations reset
    page.keyboard.press("Escape")
    assert page.is_hidden("[data-testid=fs-pop]")
    page.click("[data-testid=end-round]")
    page.wait_for_function("document.getElementById('end-round-msg').textContent.includes('Round 1 ended')",
                           timeout=30_000)
    assert "fighters still ready (never activated) in battle round 1" in page.inner_text("#end-round-msg")
    page.wait_for_function("document.getElementById('still-ready').textContent.startsWith("
                           "'Still ready in battle round 2: ')", timeout=10_000)
    st = fighters_api(page, url)
    after = by_id(st)
    assert st["battle_round"] == 2
    assert after[a]["activation"] == after[b]["activation"] == "ready"
    assert after[carrier]["status"] == "removed"
    assert a in st["still_ready"] and b in st["still_ready"] and carrier not in st["still_ready"]
    mark(page, a, "ready")
    mark(page, b, "ready")
    mark(page, carrier, "removed")
    click_fighter(page, a)
    popover_status(page, "ready")
    assert errors == [], errors

    # every change made on the page is in the SQLite log, with who made it
    db = sqlite3.connect(app.config["DATABASE"])
    try:
        log = db.execute("SELECT action, fighter_id, who, n, created_at FROM fighter_changes ORDER BY id").fetchall()
    finally:
        db.close()
    assert [x[:3] for x in log] == [
        ("activate", a, "player"), ("half-activate", b, "player"), ("wounds", carrier, "judge"),
        ("carry", carrier, "judge"), ("damage", carrier, "judge"), ("undamage", carrier, "judge"),
        ("damage", carrier, "judge"), ("damage", carrier, "judge"), ("round-end", None, "player")]
    assert all(x[4].startswith("20") for x in log)
