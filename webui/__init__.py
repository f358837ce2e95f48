"""The web UI: a live overlay for the players and rulings with evidence for the judges.

An application factory in the style of Flask's tutorial::

    flask --app webui init-db          # (re)create the SQLite tables
    flask --app webui run              # or: tabletracker serve

Config keys (``test_config`` or ``instance/config.py``):

``SOURCE``        camera index, video file, image folder or footage folder
                  (default: the bundled sample footage, played on loop)
``FOOTAGE``       folder with ``game.yaml`` and ``calib/`` (default: SOURCE when it is a
                  footage folder, else the bundled sample)
``DATABASE``      SQLite file (default ``<instance>/tabletracker.sqlite``)
``START_PLAYER``  start the live player thread (default True)
``JUDGE_TOKEN``   when set, every state-changing request needs it (header
                  ``X-Judge-Token`` or ``Authorization: Bearer ...``), else 403
``SERVE_HOST``    the address the server listens on (``tabletracker serve --host``):
                  requests must name it, an IP address, localhost or, on 0.0.0.0, the
                  machine's names in their Host header, else 403 (DNS rebinding)
``ALLOWED_HOSTS`` more host names to answer to (e.g. a reverse proxy's), a list
``MAX_ROUNDS``    battle rounds in a game (default 4)
``STREAM_WIDTH``  width of the streamed video in pixels (default 1280)
``REALTIME``      pace files to their frame rate, dropping frames when behind (default True)
``PIPELINE``      an already built :class:`tracker.pipeline.Pipeline` to use (the CLI builds
                  it first so that bad footage fails before the server starts)
"""

from __future__ import annotations

import atexit
import os
from pathlib import Path
from typing import Any

from flask import Flask
from werkzeug.routing import IntegerConverter

from tracker.config import CONFIG_FILES

__all__ = ["create_app", "get_player", "stop_player"]

PLAYER_KEY = "tabletracker.player"


def create_app(test_config: dict[str, Any] | None = None) -> Flask:
    app = Flask(__name__, instance_relative_config=True)
    app.config.from_mapping(
        SECRET_KEY=os.environ.get("TABLETRACKER_SECRET_KEY", "dev"),
        SOURCE=None,
        FOOTAGE=None,
        DATABASE=os.path.join(app.instance_path, "tabletracker.sqlite"),
        START_PLAYER=True,
        JUDGE_TOKEN=os.environ.get("TABLETRACKER_TOKEN") or None,
        SERVE_HOST=None,
        ALLOWED_HOSTS=[h for h in os.environ.get("TABLETRACKER_ALLOWED_HOSTS", "").split(",") if h.strip()],
        MAX_ROUNDS=4,
        STREAM_WIDTH=1280,
        REALTIME=True,
        PIPELINE=None,
        MAX_CONTENT_LENGTH=64 * 1024,
    )
    app.json.sort_keys = False
    app.url_map.converters["int"] = Int64Converter  # /api/rulings/<int:id>: 404 beyond SQLite's 64 bits
    if test_config is None:
        app.config.from_pyfile("config.py", silent=True)
    else:
        app.config.from_mapping(test_config)

    source, footage = resolve_source(app.config["SOURCE"], app.config["FOOTAGE"])
    app.config["SOURCE"] = str(source)
    app.config["FOOTAGE"] = str(footage)

    db_path = Path(app.config["DATABASE"])
    db_path.parent.mkdir(parents=True, exist_ok=True)

    from . import api, auth, calib, db, errors, judge_api, views

    db.init_app(app)
    db.ensure_db(str(db_path))
    auth.init_app(app)
    errors.register(app)
    app.register_blueprint(views.bp)
    app.register_blueprint(api.bp)
    app.register_blueprint(__import__(f"{__name__}.fighters_api", fromlist=["bp"]).bp)  # fighter states (#8)
    app.register_blueprint(judge_api.bp)
    app.register_blueprint(calib.bp)
    app.register_blueprint(__import__(f"{__name__}.terrain_api", fromlist=["bp"]).bp)  # untagged terrain (#4)
    app.register_blueprint(__import__(f"{__name__}.epic_api", fromlist=["bp"]).bp)  # Epic-scale games (#7)

    if app.config["START_PLAYER"]:
        start_player(app)
    return app


class Int64Converter(IntegerConverter):
    """``<int:...>`` up to 2**63 - 1, the largest id SQLite keeps: a larger one is no
    route (404), not an OverflowError (500)."""

    def __init__(self, map, *args, **kwargs):
        kwargs.setdefault("max", 2 ** 63 - 1)
        super().__init__(map, *args, **kwargs)




def is_footage_folder(path: Path) -> bool:
    return path.is_dir() and any((path / n).exists() for n in CONFIG_FILES)


def resolve_source(source: Any, footage: Any) -> tuple[str, Path]:
    """(source, footage folder). The source defaults to the bundled sample; the footage
    (game config + calibration) to the source when it is a footage folder, or the folder
    of a clip inside one. A camera or a clip elsewhere needs its footage folder named:
    the sample's calibration would put every fighter in the wrong place."""
    from tracker.errors import UserError
    from tracker.sources import default_footage

    src = str(source) if source not in (None, "") else str(default_footage())
    if footage not in (None, ""):
        return src, Path(str(footage))
    sp = Path(src)
    if is_footage_folder(sp):
        return src, sp
    if sp.is_file() and is_footage_folder(sp.parent):
        return src, sp.parent
    if sp.exists() or src.isdecimal():
        raise UserError(f"{src}: give the footage folder for this camera (--footage DIR with game.yaml and calib/); "
                        f"the sample's calibration does not fit it")
    return src, default_footage()  # a missing source: opening it says so


def start_player(app: Flask):
    """Build the pipeline (unless given) and start the live player on ``app``."""
    from tracker.pipeline import Pipeline

    from .live import LivePlayer

    pipeline = app.config.get("PIPELINE") or Pipeline.from_footage(app.config["FOOTAGE"])
    player = LivePlayer(app.config["SOURCE"], pipeline, loop=True,
                        stream_width=int(app.config["STREAM_WIDTH"]), realtime=bool(app.config["REALTIME"]))
    # The overlay starts with the control stored for the current game.
    with app.app_context():
        from .adjust import load
        from .db import control_of, current_game, get_db

        game = current_game(get_db(), source=app.config["SOURCE"], footage=app.config["FOOTAGE"])
        player.set_control(control_of(game))
        player.set_adjustments(load(get_db(), game["id"]))  # roster and corrections survive restarts
    __import__(f"{__name__}.terrain_api", fromlist=["apply_stored"]).apply_stored(app, player)  # judge's terrain types
    app.extensions[PLAYER_KEY] = player.start()
    # Stop the threads before the interpreter goes (OpenCV aborts if a capture is torn
    # down under a running thread), e.g. after ``flask --app webui init-db``.
    atexit.register(player.stop, 2.0)
    return player


def get_player(app: Flask):
    return app.extensions.get(PLAYER_KEY)


def stop_player(app: Flask, timeout: float = 5.0) -> None:
    player = app.extensions.pop(PLAYER_KEY, None)
    if player is not None:
        player.stop(timeout)
