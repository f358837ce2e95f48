"""``tabletracker serve``: the live overlay page on http://127.0.0.1:5000.

With no arguments it plays the bundled sample footage on loop. A bad source or footage
folder raises :class:`tracker.errors.UserError` (one line) before the server starts.
Serving beyond this machine (``--host 0.0.0.0``) needs a judge token: every
state-changing request must then carry it; viewers need none.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import signal
import socket
from pathlib import Path

import click

from tracker.errors import UserError

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def build_app(source: str | None = None, footage: str | None = None, db: str | None = None,
              token: str | None = None, host: str = "127.0.0.1"):
    """Check everything and build the app (player running) or raise UserError."""
    from tracker.pipeline import Pipeline
    from tracker.sources import default_footage, open_source

    from . import create_app, is_footage_folder, resolve_source

    token = token or os.environ.get("TABLETRACKER_TOKEN") or None
    if not is_loopback(host) and not token:
        raise UserError(f"--host {host} lets other machines change the game; give --token TOKEN "
                        f"(or set TABLETRACKER_TOKEN) so only the judge can")
    if footage not in (None, "") and not Path(footage).is_dir():
        raise UserError(f"{footage}: footage folder not found; give --footage a folder with game.yaml and calib/")
    db_path = check_database(db) if db else None  # before the minutes of calibrating
    open_source(source if source not in (None, "") else default_footage()).close()  # SourceError: one line
    src, footage_dir = resolve_source(source, footage)
    if not footage_dir.is_dir():
        raise UserError(f"{footage_dir}: footage folder not found; give --footage a folder with game.yaml and calib/")
    if not is_footage_folder(footage_dir):  # (GameConfig.load would say --game, which serve has not)
        raise UserError(f"{footage_dir}: no game.yaml or setup.json in this folder; give --footage a folder "
                        f"with game.yaml and calib/")
    click.echo(f"Calibrating from {footage_dir} ...", err=True)
    pipeline = Pipeline.from_footage(footage_dir)
    config = {"SOURCE": src, "FOOTAGE": str(footage_dir), "PIPELINE": pipeline, "JUDGE_TOKEN": token,
              "SERVE_HOST": host}  # requests must name this server (webui.auth.check_host)
    if db_path is not None:
        config["DATABASE"] = str(db_path)
    return create_app(config)


def check_database(db: str) -> Path:
    """The ``--db`` file, its folders made, once SQLite can keep the rulings in it; else
    UserError naming the problem (a file where a folder should be, a read-only place, a
    file that is not a SQLite database)."""
    import sqlite3

    from tracker.outputs import check_output

    from .db import ensure_db

    path = check_output(Path(db).expanduser().resolve(), "--db", make_folders=True)
    try:
        ensure_db(str(path))
    except sqlite3.Error as e:
        raise UserError(f"--db {db}: SQLite cannot keep the rulings there ({e}); "
                        f"give a new file name or an existing tabletracker database") from None
    return path


def check_listen(host: str, port: int) -> None:
    """UserError naming what stops the server listening on ``host:port``: a host name
    that does not resolve, an address that is not this machine's, a port in use."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise UserError(f"--host {host}: the host name cannot be resolved; give an address of this machine "
                        f"(127.0.0.1 for it alone, 0.0.0.0 for every network) or a name that resolves to one") from None
    fam, _, _, _, addr = infos[0]
    with socket.socket(fam, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(addr)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise UserError(f"port {port} on {host} is in use; pick another with --port") from None
            if e.errno == errno.EADDRNOTAVAIL:
                raise UserError(f"--host {host}: {addr[0]} is not an address of this machine; give one of its "
                                f"addresses (127.0.0.1 for it alone, 0.0.0.0 for every network)") from None
            if e.errno in (errno.EACCES, errno.EPERM):
                raise UserError(f"port {port} on {host} needs administrator rights; pick one above 1023 with --port") \
                    from None
            raise UserError(f"cannot listen on {host} port {port} ({e.strerror or e}); "
                            f"check --host and --port") from None


SERVE_THREADS = 32  # (10 viewers of the stream, measured by benchmarks/stream.py, and the page's requests)


@click.command("serve")
@click.option("--source", default=None, metavar="SPEC",
              help="Camera index, video file, image folder or footage folder (default: the bundled sample).")
@click.option("--footage", default=None, metavar="DIR", type=click.Path(file_okay=False),
              help="Folder with game.yaml and calib/ (default: the source when it is one, else the sample).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=5000, show_default=True, type=click.IntRange(1, 65535), help="Port.")
@click.option("--db", default=None, metavar="PATH", help="SQLite file for rulings (default: instance/tabletracker.sqlite).")
@click.option("--token", default=None, metavar="TOKEN",
              help="Judge token required for state-changing requests (env TABLETRACKER_TOKEN). Required with a non-loopback --host.")
def serve(source, footage, host, port, db, token):
    """Serve the live overlay page (plays the bundled footage on loop by default)."""
    check_listen(host, port)
    app = build_app(source, footage, db, token, host)
    from . import stop_player

    shown = f"[{host}]" if ":" in host else host
    click.echo(f"Serving the live overlay on http://{shown}:{port}  (Ctrl+C to stop)")
    # A service manager's (or `kill`'s) SIGTERM stops the server as Ctrl+C does: the player
    # and its look worker shut down (left to the default, the process died at once and
    # the worker's semaphores leaked, with a warning on the way out).
    signal.signal(signal.SIGTERM, _stop_as_ctrl_c)
    signal.signal(signal.SIGINT, _stop_as_ctrl_c)
    # A production WSGI server (Flask's own is for development): each MJPEG viewer holds
    # a thread for as long as it watches, so there are threads for many viewers and the
    # page's requests besides.
    from waitress import create_server

    server = create_server(app, host=host, port=port, threads=SERVE_THREADS, ident="tabletracker")
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
        stop_player(app)


def _stop_as_ctrl_c(signum, frame):
    # The first SIGINT or SIGTERM stops the server; one more while it shuts down (Ctrl+C
    # pressed twice, `timeout` passing on a `kill` the server got too) is let go, not
    # raised into the player's and the look worker's shutdown (a traceback and exit 1).
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt  # (the development server ends its loop on it, as on Ctrl+C)


def main() -> None:  # pragma: no cover - ``python -m webui.cli``; the lead's CLI does the same
    import sys

    try:
        serve.main(standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(1)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except UserError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(e.exit_code)


if __name__ == "__main__":  # pragma: no cover
    main()
