"""Durability: the real server (``python -m webui.cli``) on a SQLite file, a burst of
End-battle-round and correction requests from several clients, SIGKILL in the middle of
it, a restart on the same file: every ruling and correction that was answered 2xx is
still there, and the database passes ``PRAGMA integrity_check``."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(url: str, method: str = "GET", body: dict | None = None, timeout: float = 10.0):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def start_server(db: Path, port: int, log: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("TABLETRACKER_TOKEN", None)
    return subprocess.Popen([sys.executable, "-m", "webui.cli", "--db", str(db), "--port", str(port)],
                            cwd=ROOT, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT)


def wait_ready(base: str, proc: subprocess.Popen, log: Path, timeout: float = 90.0) -> dict:
    """/api/state once it shows fighters (the server calibrates, then plays the clip)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the server exited with {proc.returncode}:\n{log.read_text()[-2000:]}")
        try:
            status, body = request(base + "/api/state", timeout=5)
            if status == 200 and body["state"]["fighters"]:
                return body
        except (OSError, ValueError):
            pass
        time.sleep(0.3)
    pytest.fail(f"the server was not ready in {timeout:.0f} s:\n{log.read_text()[-2000:]}")


def test_answered_writes_survive_sigkill(tmp_path):
    db = tmp_path / "durable.sqlite"
    log = tmp_path / "server.log"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start_server(db, port, log)
    try:
        state = wait_ready(base, proc, log)
        fighter = state["state"]["fighters"][0]["id"]
        sides = [s["index"] for s in state["sides"]]

        acked_rulings: list[int] = []
        acked_corrections: list[int] = []
        sent = {"n": 0}
        stop = threading.Event()
        lock = threading.Lock()

        # Killed mid-reply, the server leaves a cut-off body (http.client.IncompleteRead):
        # gone as much as a refused connection, and that reply was never an answer.
        GONE = (OSError, http.client.HTTPException)

        def end_rounds():
            while not stop.is_set():
                try:
                    status, body = request(base + "/api/round/end", "POST", {}, timeout=10)
                except GONE:
                    return  # the server is gone
                with lock:
                    sent["n"] += 1
                if 200 <= status < 300:
                    with lock:
                        acked_rulings.append(body["ruling_id"])
                elif status == 409:  # game over (or a race for the same round): next game
                    try:
                        request(base + "/api/game/new", "POST", {}, timeout=10)
                    except GONE:
                        return

        def correct():
            i = 0
            while not stop.is_set():
                i += 1
                try:
                    status, body = request(base + "/api/corrections", "POST",
                                           {"fighter": fighter, "action": "side", "side": sides[i % len(sides)],
                                            "by": "durability"}, timeout=10)
                except GONE:
                    return
                if 200 <= status < 300:
                    with lock:
                        acked_corrections.append(body["id"])

        threads = [threading.Thread(target=end_rounds) for _ in range(3)] + [threading.Thread(target=correct)]
        for t in threads:
            t.start()
        # kill in the middle of the burst, once a good number of writes were answered
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(acked_rulings) < 12:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        stop.set()
        for t in threads:
            t.join(15)
        assert acked_rulings, f"no End battle round was answered before the kill:\n{log.read_text()[-2000:]}"

        # the file on disk, straight after the kill
        con = sqlite3.connect(db)
        try:
            assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        finally:
            con.close()

        # restart on the same database: the log has every answered ruling and correction
        port2 = free_port()
        base2 = f"http://127.0.0.1:{port2}"
        proc = start_server(db, port2, log)
        wait_ready(base2, proc, log)
        status, body = request(base2 + "/api/rulings?game=all&limit=1000")
        assert status == 200
        logged = {r["id"] for r in body["rulings"]}
        missing = sorted(set(acked_rulings) - logged)
        assert not missing, f"rulings answered 201 but not in the log after the restart: {missing}"
        status, body = request(base2 + "/api/corrections?game=all")
        assert status == 200
        logged_c = {c["id"] for c in body["corrections"]}
        assert not sorted(set(acked_corrections) - logged_c)
        assert all(c["by"] == "durability" and c["created_at"] for c in body["corrections"])
        # each stored ruling is whole: control, rulings and a JPEG
        for rid in acked_rulings[:3]:
            status, r = request(f"{base2}/api/rulings/{rid}")
            assert status == 200 and r["state"]["fighters"] is not None and r["snapshot_url"]
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert set(acked_rulings) <= {r[0] for r in con.execute("SELECT id FROM rulings")}
    finally:
        con.close()


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm", "ctrl-c twice", "sigterm twice"])
def test_ctrl_c_or_sigterm_stops_the_server_cleanly(tmp_path, how):
    """Ctrl+C at a terminal sends SIGINT to the whole process group, the look worker
    included; a service manager (or ``kill``) sends SIGTERM to the server alone. Either
    way the server stops with exit 0 and no traceback or warning from any of its
    processes, and leaves none behind; also when the signal comes again while it is
    shutting down (Ctrl+C pressed twice; `timeout` passing on a `kill` the server also
    got)."""
    db = tmp_path / "stop.sqlite"
    log = tmp_path / "server.log"
    port = free_port()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("TABLETRACKER_TOKEN", None)
    proc = subprocess.Popen([sys.executable, "-m", "webui.cli", "--db", str(db), "--port", str(port)],
                            cwd=ROOT, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT,
                            start_new_session=True)  # its own process group, as at a terminal
    try:
        wait_ready(f"http://127.0.0.1:{port}", proc, log)
        deadline = time.monotonic() + 60  # the look worker starts after the first look
        while time.monotonic() < deadline:
            group = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True).stdout.split()
            if len(group) >= 2:
                break
            time.sleep(0.5)
        assert len(group) >= 2, "the look worker did not start"
        time.sleep(2.0)  # the worker idle, waiting for a look, as when Ctrl+C comes
        for k in range(2 if how.endswith("twice") else 1):
            if k:
                time.sleep(0.05)  # the server is shutting down
            if how.startswith("ctrl-c"):
                os.killpg(proc.pid, signal.SIGINT)
            else:
                proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    # None of its processes is left a few seconds on: an orphaned worker checks for its
    # server once a second, and multiprocessing's resource tracker ends when the last
    # process holding its pipe has.
    deadline = time.monotonic() + 6.0
    while True:
        left = subprocess.run(["ps", "-o", "pid=,ppid=,stat=,args=", "-g", str(proc.pid)],
                              capture_output=True, text=True).stdout.strip()
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    time.sleep(0.5)  # (anything a process printed on its way out is in the log)
    text = log.read_text()
    assert "Traceback" not in text and "Warning" not in text, text[-3000:]
    assert not left, f"left behind:\n{left}\nlog:\n{text[-2000:]}"
