"""The web UI on a real HTTP server on 127.0.0.1: JSON state and MJPEG frames over the
wire, from the real pipeline playing the bundled footage."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from urllib.parse import urlsplit

import cv2
import numpy as np
import pytest



@pytest.fixture
def live_url(live_app, serve_app):
    return serve_app(live_app())


def read_mjpeg(url: str, n: int, timeout: float = 60.0) -> list[tuple[int, bytes]]:
    """Read ``n`` parts of a multipart/x-mixed-replace stream: (frame index, JPEG)."""
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        conn.request("GET", f"{u.path}?{u.query}" if u.query else u.path)
        resp = conn.getresponse()
        assert resp.status == 200
        ctype = resp.getheader("Content-Type")
        assert ctype.startswith("multipart/x-mixed-replace"), ctype
        boundary = ctype.split("boundary=")[1].encode()
        parts = []
        while len(parts) < n:
            line = resp.fp.readline()
            if not line:
                break
            if line.strip() != b"--" + boundary:
                continue
            headers = {}
            while True:
                h = resp.fp.readline().strip()
                if not h:
                    break
                k, v = h.decode().split(":", 1)
                headers[k.strip().lower()] = v.strip()
            body = resp.fp.read(int(headers["content-length"]))
            parts.append((int(headers["x-frame-index"]), body))
        return parts
    finally:
        conn.close()


def test_state_and_mjpeg_over_http(live_url):
    with urllib.request.urlopen(live_url + "/api/state", timeout=30) as r:
        assert r.status == 200 and r.headers["Content-Type"] == "application/json"
        state = json.loads(r.read())
    assert state["state"]["fighters"] and state["fps"]["source"] > 0

    parts = read_mjpeg(live_url + "/stream.mjpg", 4)
    assert len(parts) == 4
    indices = [i for i, _ in parts]
    # new frames, in order (a frame may come twice: again at once with a newly processed overlay)
    assert indices == sorted(indices) and len(set(indices)) >= 2, indices
    for _, jpg in parts:
        img = cv2.imdecode(np.frombuffer(jpg, np.uint8), cv2.IMREAD_COLOR)
        assert img is not None and img.shape[1] == state["stream"]["width"]

    # the page and a finite stream (?frames=N closes after N frames)
    with urllib.request.urlopen(live_url + "/", timeout=30) as r:
        assert b"End battle round" in r.read()
    with urllib.request.urlopen(live_url + "/stream.mjpg?frames=1&layers=rings", timeout=60) as r:
        assert r.read().count(b"\xff\xd8") >= 1


def test_bad_requests_over_http_are_json(live_url):
    req = urllib.request.Request(live_url + "/api/round/end", data=b"{oops", method="POST",
                                 headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=30)
    assert e.value.code == 400 and "not valid JSON" in json.loads(e.value.read())["error"]
