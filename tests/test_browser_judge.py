"""The judge's tools in a real headless Chromium (Debian's /usr/bin/chromium through the
``playwright`` package) against the real server playing the bundled footage: importing a
roster and assigning a fighter by clicking its base, correcting a misdetection, the
export, and the calibration page."""

from __future__ import annotations

import json

import pytest



ROSTER = """\
fighters:
  - {name: Ironjaw, side: 0, base: 40, runemarks: [leader, brute], move: 4, wounds: 30}
  - {name: Shieldbearer, side: 1, base: 32, runemarks: [bulwark], move: 4, wounds: 20}
"""


def click_fighter(page, fid: str) -> None:
    """Click the middle of fighter ``fid``'s base on the video, where the page draws it."""
    u, v, _ = page.evaluate(f"window.tabletracker.state.pixels.fighters[{json.dumps(fid)}]")
    stream_w = page.evaluate("window.tabletracker.state.stream.width")
    box = page.locator("#video").bounding_box()
    k = box["width"] / stream_w
    page.mouse.click(box["x"] + u * k, box["y"] + v * k)


def visible_fighter(page, side: int | None = None) -> str:
    """A fighter in full view (not under a hand), from the state the page drew."""
    page.wait_for_function(
        "(s => s && s.state.fighters.some(f => !f.occluded && s.pixels.fighters[f.id]" +
        ("" if side is None else f" && f.side === {side}") + "))(window.tabletracker.state)", timeout=30_000)
    return page.evaluate(
        "(side => { const s = window.tabletracker.state; return s.state.fighters.find(f => !f.occluded && "
        "s.pixels.fighters[f.id] && (side === null || f.side === side)).id; })", side)


@pytest.mark.browser
def test_roster_assignment_correction_and_export(open_page, browser, tmp_path):
    app, url, page, errors = open_page("/", viewport={"width": 1400, "height": 1000})
    page.wait_for_function("document.getElementById('video').naturalWidth > 0", timeout=30_000)

    # import the roster from a file, as a judge would
    roster_file = tmp_path / "warband.yaml"
    roster_file.write_text(ROSTER)
    page.set_input_files("[data-testid=roster-file]", str(roster_file))
    page.click("[data-testid=roster-import]")
    page.wait_for_function("document.getElementById('roster-msg').textContent.includes('Imported 2')",
                           timeout=15_000)
    page.wait_for_selector("[data-testid=roster-fighter][data-roster=Ironjaw]", timeout=10_000)

    # click Ironjaw in the roster, then a side-0 base on the video
    fid = visible_fighter(page, side=0)
    page.click("[data-testid=roster-fighter][data-roster=Ironjaw]")
    assert "Click Ironjaw's base" in page.inner_text("#roster-msg")
    click_fighter(page, fid)
    page.wait_for_function("document.getElementById('roster-msg').textContent.includes('Ironjaw is f')",
                           timeout=15_000)
    assigned = page.inner_text("#roster-msg").split("Ironjaw is ")[1].split(".")[0]
    page.wait_for_function(f"(window.tabletracker.state.roster.assignments[{json.dumps(assigned)}] === 'Ironjaw')",
                           timeout=10_000)
    assert f"→ {assigned}" in page.inner_text("[data-testid=roster-fighter][data-roster=Ironjaw]")
    with app.test_client() as c:
        assert c.get("/api/roster").get_json()["assignments"] == {assigned: "Ironjaw"}
    # the fighters panel and /api/state name it (while it is on the table)
    page.wait_for_function(
        f"(s => !s.state.fighters.some(f => f.id === {json.dumps(assigned)}) || s.state.fighters.some("
        f"f => f.id === {json.dumps(assigned)} && f.name === 'Ironjaw' && f.move === 4))(window.tabletracker.state)",
        timeout=10_000)

    # a judge correction: give another base to the other side by clicking it
    other = visible_fighter(page)
    old_side = page.evaluate(f"window.tabletracker.state.state.fighters.find(f => f.id === {json.dumps(other)}).side")
    sides = page.evaluate("window.tabletracker.state.sides.map(s => s.index)")
    new_side = next(s for s in sides if s != old_side)
    page.select_option("[data-testid=fix-side-to]", str(new_side))
    page.click("[data-testid=fix-side]")
    click_fighter(page, other)
    page.wait_for_selector("[data-testid=correction]", timeout=15_000)
    assert "Correction" in page.inner_text("[data-testid=fix-msg]")
    corrected = page.inner_text("[data-testid=fix-msg]").split(": ")[1].split(" is ")[0]
    page.wait_for_function(
        f"(s => s.roster.corrections.some(c => c.fighter === {json.dumps(corrected)} && c.side === {new_side}))"
        f"(window.tabletracker.state)", timeout=10_000)
    page.wait_for_function(
        f"(s => !s.state.fighters.some(f => f.id === {json.dumps(corrected)}) || s.state.fighters.find("
        f"f => f.id === {json.dumps(corrected)}).side === {new_side})(window.tabletracker.state)", timeout=10_000)

    # ... then a move: click the base, then where it really is
    page.click("[data-testid=fix-move]")
    mover = visible_fighter(page)
    click_fighter(page, mover)
    assert "really is" in page.inner_text("[data-testid=fix-msg]")
    box = page.locator("#video").bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5)
    page.wait_for_function("document.querySelectorAll('[data-testid=correction]').length >= 2", timeout=15_000)
    assert "moved to" in page.inner_text("[data-testid=fix-msg]")

    # undo the side correction from the log
    page.click("[data-testid=correction]:last-child button[data-undo]")
    page.wait_for_selector("[data-testid=correction].undone", timeout=10_000)

    # end a round: the ruling is made on the corrected, named state; export it
    page.click("[data-testid=end-round]")
    page.wait_for_function("document.getElementById('end-round-msg').textContent.includes('Round 1 ended')",
                           timeout=30_000)
    page.wait_for_selector("#log li", timeout=10_000)
    with page.expect_download(timeout=15_000) as dl:
        page.click("#export-link")
    exported = json.loads(open(dl.value.path()).read())
    assert exported["format"] == "tabletracker-game/1" and len(exported["rulings"]) == 1
    kept = exported["rulings"][0]["state"]
    assert len(kept["extra"]["corrections"]) == 1  # the move, not the undone side change
    named = [f for f in kept["fighters"] if f["id"] == assigned]
    assert not named or named[0]["name"] == "Ironjaw"
    report = browser.new_page()
    report.goto(url + page.get_attribute("#report-link", "href"))
    assert "Battle round 1" in report.inner_text("body")
    assert errors == [], errors


@pytest.mark.browser
def test_calibration_page(open_page):
    app, url, page, errors = open_page("/calibration", viewport={"width": 1400, "height": 900})
    page.wait_for_function("document.getElementById('pose-err').textContent.includes('px')", timeout=30_000)
    page.wait_for_selector("[data-testid=marker]", timeout=15_000)
    assert page.locator("[data-testid=marker]").count() >= 3
    # The picture's blur now, read off the markers: the bundled footage's is under the warning.
    blur = page.inner_text("[data-testid=blur]")
    assert blur.endswith("in)") and 0 < float(blur.split(" px")[0]) < 0.95
    page.wait_for_function("document.getElementById('markers-img').naturalWidth > 0", timeout=15_000)
    page.click("[data-testid=recalibrate]")
    page.wait_for_function("document.getElementById('recal-msg').textContent.includes('re-calibrated')",
                           timeout=30_000)
    href = page.get_attribute("[data-testid=sheet-markers]", "href")
    r = page.request.get(url + href)
    assert r.ok and r.headers["content-type"] == "image/png" and "300dpi" in r.headers["content-disposition"]
    assert errors == [], errors
