"""The overlay page in a real headless Chromium (Debian's /usr/bin/chromium driven by the
``playwright`` package): the video plays, and ending a battle round fills in the
objective control panel. Set ``TABLETRACKER_SCREENSHOT=docs/overlay.png`` to save the page."""

from __future__ import annotations

import os
import shutil

import pytest




@pytest.mark.browser
def test_overlay_page_plays_and_ends_a_round(open_page, tmp_path):
    app, url, page, errors = open_page("/", viewport={"width": 1400, "height": 860})

    # the MJPEG video shows frames, and they advance
    page.wait_for_function("document.getElementById('video').naturalWidth > 0", timeout=30_000)
    page.wait_for_function("/^\\d+$/.test(document.getElementById('frame-index').textContent)", timeout=30_000)
    first = int(page.inner_text("#frame-index"))
    page.wait_for_function(f"Number(document.getElementById('frame-index').textContent) > {first}",
                           timeout=30_000)
    shot1 = page.locator("#video").screenshot()
    for _ in range(40):  # the picture itself changes (up to ~20 s on a slow machine)
        page.wait_for_timeout(500)
        if page.locator("#video").screenshot() != shot1:
            break
    else:
        pytest.fail("the video element showed the same picture for 20 s")

    # before any round is ended the control panel is empty; the fighters list is filled
    assert page.locator("[data-testid=control-row]").count() == 0
    assert page.locator("#fighters li").count() > 0
    assert page.inner_text("#battle-round").strip() == "1"

    page.click("[data-testid=end-round]")
    page.wait_for_selector("[data-testid=control-row]", timeout=30_000)
    rows = page.locator("[data-testid=control-row]")
    assert rows.count() >= 1
    assert page.inner_text("#battle-round").strip() == "2"
    assert "Round 1 ended" in page.inner_text("#end-round-msg")
    page.wait_for_selector("#log li", timeout=10_000)

    # judge tool: click a fighter, then another → a distance with its margin
    page.wait_for_function("Object.keys(window.tabletracker.state.pixels.fighters).length >= 2", timeout=30_000)
    pix = page.evaluate("window.tabletracker.state.pixels.fighters")
    stream_w = page.evaluate("window.tabletracker.state.stream.width")
    box = page.locator("#video").bounding_box()
    k = box["width"] / stream_w
    (a, (ua, va, _)), (b, (ub, vb, _)) = list(pix.items())[:2]
    page.mouse.click(box["x"] + ua * k, box["y"] + va * k)
    # one fighter alone: may it pick up treasure, must it test for falling
    page.wait_for_function("document.getElementById('measure').textContent.includes('falling test')",
                           timeout=15_000)
    if "pick up treasure" not in page.inner_text("#measure"):
        # (only when no treasure token was in sight: carried, or under a hand)
        assert not page.evaluate("(window.tabletracker.state.state.tokens || [])"
                                 ".some((t) => t.kind === 'treasure' && !t.occluded)")
    page.mouse.click(box["x"] + ub * k, box["y"] + vb * k)
    page.wait_for_function("document.getElementById('measure').textContent.includes('±')", timeout=15_000)
    assert f"{a} → {b}" in page.inner_text("#measure")

    # the status bar says the picture is sharp, once two table markers have been read
    page.wait_for_function("document.querySelector('[data-testid=picture]').textContent !== '–'", timeout=30_000)
    assert page.inner_text("[data-testid=picture]") == "sharp"
    assert "σ" in page.get_attribute("[data-testid=picture]", "title")
    # ... and whether every objective the set-up lists is in sight, as the state says
    unseen = page.evaluate("window.tabletracker.state.state.unseen_objectives")
    said = page.inner_text("[data-testid=objectives]")
    assert said == "all in sight" if not unseen else all(o in said for o in unseen), (said, unseen)
    # the timeline lists what happened on the table: the state's newest twelve events, newest
    # first (read in one go with the state they were drawn from; which events those are
    # depends on how far the clip has played: "placed" ones scroll out once it has moved on)
    page.wait_for_selector("[data-testid=timeline] li", timeout=10_000)
    shown, events = page.evaluate("""() => [
        [...document.querySelectorAll('[data-testid=timeline] li')].map((li) => li.textContent),
        ((window.tabletracker.state.state.extra || {}).events || []).map((e) => [e.subject, e.kind, e.time_s])]""")
    assert events and len(shown) == min(12, len(events)), (shown, events)
    for line, (subject, kind, t) in zip(shown, reversed(events[-12:])):
        at, _, words = line.partition(" s ")
        assert abs(float(at) - t) <= 0.051 and words.startswith(f"{subject} {kind}"), (line, subject, kind, t)
    assert {kind for _, kind, _ in events} <= {"placed", "moved", "removed", "picked up treasure",
                                                "dropped treasure", "token placed", "token removed"}, events
    assert errors == [], errors

    shot = os.environ.get("TABLETRACKER_SCREENSHOT")
    page.screenshot(path=str(tmp_path / "overlay.png"))
    if shot:
        shutil.copy(tmp_path / "overlay.png", shot)
