"""Issue #29: DNS rebinding. A page on another site that re-points its own name at
127.0.0.1 reaches the loopback server with its own name in the Host header: refused
(403), while the names the server was started for and any IP address are answered."""

from __future__ import annotations

import http.client
import json
import socket
from urllib.parse import urlsplit

import pytest


def _post(client, host: str):
    return client.post("/api/game/new", json={}, headers={"Host": host})


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:5000", "localhost.attacker.example",
                                  "127.0.0.1.nip.io:5000", "x" * 300])
def test_a_foreign_host_name_is_refused_on_loopback_without_a_token(live_app, host):
    app = live_app(START_PLAYER=False)
    client = app.test_client()
    r = _post(client, host)
    assert r.status_code == 403 and "host name" in r.get_json()["error"], r.get_data(as_text=True)
    assert len(r.get_data()) < 500
    r = client.get("/api/game", headers={"Host": host})  # reading, too: the page would read the state
    assert r.status_code == 403


@pytest.mark.parametrize("host", ["localhost", "localhost:5000", "LOCALHOST:5000", "127.0.0.1:5000",
                                  "[::1]:5000", "192.168.1.20:5000", "localhost.:5000"])
def test_loopback_names_and_addresses_are_answered(live_app, host):
    app = live_app(START_PLAYER=False)
    r = _post(app.test_client(), host)
    assert r.status_code == 201, (host, r.get_data(as_text=True))


def test_the_host_served_for_and_allowed_hosts_are_answered(live_app):
    app = live_app(START_PLAYER=False, SERVE_HOST="table.lan", ALLOWED_HOSTS=["proxy.example.org"])
    client = app.test_client()
    assert _post(client, "table.lan:5000").status_code == 201
    assert _post(client, "proxy.example.org").status_code == 201
    assert _post(client, "attacker.example").status_code == 403


def test_serving_on_every_network_answers_to_the_machines_names(live_app):
    app = live_app(START_PLAYER=False, SERVE_HOST="0.0.0.0")
    client = app.test_client()
    name = socket.gethostname()
    assert _post(client, f"{name}:5000").status_code == 201
    assert _post(client, f"{name.split('.')[0]}.local:5000").status_code == 201
    assert _post(client, "attacker.example:5000").status_code == 403


def test_rebinding_over_real_http(live_app, serve_app):
    """The request as the browser sends it after the rebinding: to 127.0.0.1, naming the
    attacker's host."""
    url = urlsplit(serve_app(live_app(START_PLAYER=False)))
    for host, status in (("attacker.example", 403), (url.netloc, 201)):
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        conn.request("POST", "/api/game/new", body="{}",
                     headers={"Host": host, "Content-Type": "application/json"})
        resp = conn.getresponse()
        body = json.loads(resp.read())
        conn.close()
        assert resp.status == status, (host, body)
