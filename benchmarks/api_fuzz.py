"""The JSON API fuzzed over its own OpenAPI document (issue #29), against a real server.

    python benchmarks/api_fuzz.py [--examples 300] [--seed 1] [--source FOOTAGE] [--json out.json]
    python benchmarks/api_fuzz.py --url http://127.0.0.1:5000   # an already running server

Starts the real server (``python -m tracker.cli serve`` on a free 127.0.0.1 port: waitress,
the bundled footage, a throw-away SQLite file), waits until it shows fighters, reads
``/api/openapi.json`` and has schemathesis generate requests for every operation in it:
``--examples`` schema-valid ones (positive) and as many schema-invalid ones (negative) per
operation. An operation without inputs has one request to make, so the total is less
than 2 x examples x operations. Each reply is checked: no 5xx, its status and content type
documented, its body as documented, invalid input refused with a 4xx, and no reply over
``--max-reply`` bytes (or the operation's own ``x-max-reply-bytes``: the game export with
its pictures). Prints the requests sent, the count per status, the 5xx (must be 0),
the largest reply, requests/s and every failed check with the request that made it.

``fuzz()`` is what tests/test_webui_openapi.py runs, with a few examples per operation.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_REPLY = 1024 * 1024  # no reply of the JSON API may be larger (1 MB)


@dataclass
class FuzzStats:
    requests: int = 0
    statuses: collections.Counter = field(default_factory=collections.Counter)
    largest: tuple[int, str] = (0, "")  # (bytes, the request)
    largest_page: tuple[int, str] = (0, "")  # the same, of the replies held to --max-reply
    per_operation: collections.Counter = field(default_factory=collections.Counter)
    failures: list[str] = field(default_factory=list)  # one line each, with a curl command
    seconds: float = 0.0

    @property
    def server_errors(self) -> int:
        return sum(n for s, n in self.statuses.items() if s >= 500)

    def summary(self) -> dict:
        return {"requests": self.requests, "statuses": dict(sorted(self.statuses.items())),
                "server_errors": self.server_errors, "largest_reply_bytes": self.largest[0],
                "largest_reply_request": self.largest[1], "largest_general_reply_bytes": self.largest_page[0],
                "largest_general_reply_request": self.largest_page[1], "seconds": round(self.seconds, 1),
                "requests_per_s": round(self.requests / self.seconds, 1) if self.seconds else None,
                "operations": len(self.per_operation), "failures": self.failures}


def checks():
    """The checks every reply gets (schemathesis' own, by name)."""
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        negative_data_rejection,
        response_schema_conformance,
        status_code_conformance,
    )

    return [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
            negative_data_rejection]


def _first_line(e: BaseException) -> str:
    subs = getattr(e, "exceptions", None)
    if subs:
        return "; ".join(_first_line(x) for x in subs)
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0][:300]


def fuzz(base_url: str, examples: int, *, seed: int | None = 1, max_reply: int = MAX_REPLY,
         modes: tuple[str, ...] = ("positive", "negative"), only: str | None = None,
         progress=None) -> FuzzStats:
    """Generate ``examples`` requests per operation of ``base_url``'s /api/openapi.json in
    each of ``modes`` and send them to it; every reply checked (see the module docstring).
    Failures are collected, not raised, so one run reports them all."""
    import requests
    import schemathesis
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis.errors import Unsatisfiable

    session = requests.Session()
    got = session.get(base_url + "/api/openapi.json", timeout=60)
    got.raise_for_status()
    schema = schemathesis.openapi.from_dict(got.json())  # (from_url would leave this route itself out)
    stats = FuzzStats()
    the_checks = checks()
    ops = [r.ok() for r in schema.get_all_operations()]
    doc = got.json()
    started = time.monotonic()
    for op in ops:
        if only is not None and only not in op.label:
            continue
        for mode in modes:
            try:
                strategy = op.as_strategy(generation_mode=schemathesis.GenerationMode(mode))
            except Exception as e:  # noqa: BLE001 - e.g. nothing to make invalid
                stats.failures.append(f"{op.label} [{mode}]: no strategy: {_first_line(e)}")
                continue

            # (a download may state its own bound: the export with its pictures)
            bound = doc["paths"][op.path][op.method.lower()].get("x-max-reply-bytes", max_reply)
            one = _one_request(stats, strategy, f"{op.label} [{mode}]", base_url, session, the_checks, bound,
                               bound == max_reply,
                               settings(max_examples=examples, deadline=None, database=None,
                                        derandomize=seed is not None, phases=[Phase.explicit, Phase.generate],
                                        suppress_health_check=list(HealthCheck), print_blob=False))
            try:
                one()
            except Unsatisfiable:
                pass  # (an operation whose inputs cannot be made invalid in this mode)
            if progress is not None:
                progress(op.label, mode, stats)
    stats.seconds = time.monotonic() - started
    session.close()
    return stats


def _one_request(stats: FuzzStats, strategy, where: str, base_url: str, session, the_checks, max_reply: int,
                 general: bool, hypothesis_settings):
    """A Hypothesis test sending one generated request and checking its reply."""
    from hypothesis import given

    @hypothesis_settings
    @given(case=strategy)
    def one(case):
        resp = case.call(base_url=base_url, session=session, timeout=60)
        stats.requests += 1
        stats.per_operation[where.split(" [")[0]] += 1
        stats.statuses[resp.status_code] += 1
        size = len(resp.content)
        if size > stats.largest[0]:
            stats.largest = (size, f"{where}: {case.as_curl_command(base_url=base_url)}")
        if general and size > stats.largest_page[0]:
            stats.largest_page = (size, f"{where}: {case.as_curl_command(base_url=base_url)}")
        problems = []
        if size > max_reply:
            problems.append(f"reply of {size} bytes, over {max_reply}")
        try:
            case.validate_response(resp, checks=the_checks)
        except (Exception, BaseExceptionGroup) as e:  # noqa: BLE001 - a failed check: kept, the run goes on
            problems.append(_first_line(e))
        if problems and len(stats.failures) < 200:
            body = resp.text[:200].replace("\n", " ")
            stats.failures.append(f"{where}: {resp.status_code} {body!r}: {'; '.join(problems)} -- "
                                  f"{case.as_curl_command(base_url=base_url)}")

    return one


# -- a real server -------------------------------------------------------------------------
@contextlib.contextmanager
def waitress_thread(app, threads: int = 8):
    """``app`` served by waitress (as ``tabletracker serve`` does) on a free 127.0.0.1 port,
    in a thread of this process, until the block ends: yields the base URL."""
    from waitress import create_server

    server = create_server(app, host="127.0.0.1", port=0, threads=threads, ident="tabletracker")
    thread = threading.Thread(target=server.run, name="waitress", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.effective_port}"
    finally:
        from waitress import wasyncore

        server.task_dispatcher.shutdown()  # the requests in hand finish first
        # Every socket closed by the loop's own thread (closed from here, a request's
        # last wake-up of the loop would write to a closed pipe): its map empties, run() returns.
        server.trigger.pull_trigger(lambda: wasyncore.close_all(server._map))
        thread.join(10)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(base: str, proc: subprocess.Popen | None, timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            sys.exit(f"error: the server exited with status {proc.returncode}")
        try:
            with urllib.request.urlopen(base + "/api/state", timeout=5) as r:
                if json.loads(r.read())["state"]["fighters"]:
                    return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.5)
    sys.exit(f"error: {base} showed no fighters in {timeout:.0f} s")


@contextlib.contextmanager
def serve_subprocess(db: str, source: str | None = None):
    """``tabletracker serve`` (the bundled footage or ``source``, SQLite file ``db``) on a free port."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tracker.cli", "serve", "--port", str(port), "--db", db]
                            + (["--source", source] if source else []),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=os.environ | {"PYTHONPATH": str(ROOT)})
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, proc)
        yield base, proc
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=300, help="requests per operation and mode (default 300)")
    ap.add_argument("--seed", type=int, default=1, help="derandomised run (0: random)")
    ap.add_argument("--max-reply", type=int, default=MAX_REPLY, help="largest reply allowed, bytes (default 1 MB)")
    ap.add_argument("--only", default=None, help="only operations whose label holds this (e.g. 'POST /api/roster')")
    ap.add_argument("--source", default=None, help="footage to serve (e.g. sample_footage/epic-demo: the Epic routes)")
    ap.add_argument("--url", default=None, help="fuzz an already running server (it is changed: games, rulings)")
    ap.add_argument("--json", default=None, help="write the figures here too")
    args = ap.parse_args()
    command = "python3 " + " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:])

    def progress(label, mode, stats):
        print(f"  {label} [{mode}]: {stats.requests} requests so far, {stats.server_errors} 5xx, "
              f"{len(stats.failures)} failed checks", flush=True)

    with contextlib.ExitStack() as stack:
        if args.url:
            base, proc = args.url.rstrip("/"), None
        else:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="api-fuzz-"))
            base, proc = stack.enter_context(serve_subprocess(str(Path(tmp) / "fuzz.sqlite"), args.source))
        print(f"fuzzing {base} over /api/openapi.json: {args.examples} examples per operation and mode; "
              f"load average {os.getloadavg()[0]:.2f}", flush=True)
        stats = fuzz(base, args.examples, seed=args.seed or None, max_reply=args.max_reply, only=args.only,
                     progress=progress)
        alive = proc is None or proc.poll() is None
    s = stats.summary()
    s["load_average"] = [round(x, 2) for x in os.getloadavg()]  # (the machine may be shared)
    print(f"\ncommand: {command}")
    print(f"operations: {s['operations']}, requests sent: {s['requests']} in {s['seconds']} s "
          f"({s['requests_per_s']} requests/s)")
    print("statuses: " + ", ".join(f"{k}: {v}" for k, v in s["statuses"].items()))
    print(f"5xx: {s['server_errors']}")
    print(f"largest reply: {s['largest_reply_bytes']} bytes ({s['largest_reply_request']})")
    print(f"largest reply held to {args.max_reply} bytes: {s['largest_general_reply_bytes']} bytes "
          f"({s['largest_general_reply_request']})")
    print(f"server still up at the end: {alive}; load average at the end: {s['load_average']}")
    print(f"failed checks: {len(stats.failures)}")
    for f in stats.failures:
        print("  " + f)
    if args.json:
        Path(args.json).write_text(json.dumps(s | {"command": command}, indent=2))
    return 0 if not stats.failures and not s["server_errors"] and alive else 1


if __name__ == "__main__":
    sys.exit(main())
