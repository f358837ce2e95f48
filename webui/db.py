"""SQLite storage, in the style of Flask's tutorial: one connection per request
(``get_db()``), closed at teardown; ``flask --app webui init-db`` recreates the tables.

The database runs in WAL mode, so the page can read the rulings log while a ruling with
its JPEG snapshot is being written.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone

import click
from flask import current_app, g
from flask.cli import with_appcontext


def connect(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=10.0)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA foreign_keys=ON")
    # FULL: a ruling or correction answered with 2xx is on disk (fsync at each commit),
    # not only safe from a crashed server but from a power cut too.
    db.execute("PRAGMA synchronous=FULL")
    return db


def get_db() -> sqlite3.Connection:
    if "db" not in g:
        g.db = connect(current_app.config["DATABASE"])
    return g.db


def close_db(e: BaseException | None = None) -> None:
    db = g.pop("db", None)
    if db is not None:
        db.close()


SCHEMA = """\
-- Tabletop tracker web UI: games and their end-of-round rulings (with JPEG evidence).
DROP TABLE IF EXISTS epic_ledger;
DROP TABLE IF EXISTS terrain_types;
DROP TABLE IF EXISTS corrections;
DROP TABLE IF EXISTS assignments;
DROP TABLE IF EXISTS roster;
DROP TABLE IF EXISTS rulings;
DROP TABLE IF EXISTS games;

CREATE TABLE games (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  started_at TEXT NOT NULL,
  ended_at TEXT,
  source TEXT NOT NULL DEFAULT '',
  footage TEXT NOT NULL DEFAULT '',
  battle_round INTEGER NOT NULL DEFAULT 1,
  control TEXT NOT NULL DEFAULT '{}'
);

CREATE TABLE rulings (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  game_id INTEGER NOT NULL REFERENCES games (id),
  battle_round INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  frame_index INTEGER NOT NULL,
  time_s REAL NOT NULL,
  previous_control TEXT NOT NULL,
  control TEXT NOT NULL,
  rulings TEXT NOT NULL,
  state TEXT NOT NULL,
  snapshot BLOB
);

CREATE INDEX rulings_game ON rulings (game_id, battle_round);
""" + """
-- The imported roster (one warband list per side, replaced by each import) and which
-- detected base (tracker fighter id) is which roster fighter.
CREATE TABLE IF NOT EXISTS roster (
  name TEXT PRIMARY KEY,
  side INTEGER NOT NULL,
  base_mm TEXT NOT NULL,
  runemarks TEXT NOT NULL DEFAULT '[]',
  move INTEGER,
  wounds INTEGER,
  position INTEGER NOT NULL DEFAULT 0,
  imported_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS assignments (
  fighter TEXT PRIMARY KEY,
  roster_name TEXT NOT NULL UNIQUE REFERENCES roster (name) ON DELETE CASCADE,
  assigned_at TEXT NOT NULL,
  assigned_by TEXT NOT NULL
);

-- Judge corrections of misdetections: move / remove / side, in force until undone.
CREATE TABLE IF NOT EXISTS corrections (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  game_id INTEGER NOT NULL REFERENCES games (id),
  created_at TEXT NOT NULL,
  created_by TEXT NOT NULL,
  fighter TEXT NOT NULL,
  action TEXT NOT NULL CHECK (action IN ('move', 'remove', 'side')),
  params TEXT NOT NULL DEFAULT '{}',
  note TEXT NOT NULL DEFAULT '',
  undone_at TEXT,
  undone_by TEXT
);

CREATE INDEX IF NOT EXISTS corrections_game ON corrections (game_id, undone_at);

-- Judge's types for terrain found without a tag (webui/terrain_api.py), per table set-up
-- (footage folder); the centre says which piece was typed.
CREATE TABLE IF NOT EXISTS terrain_types (
  footage TEXT NOT NULL,
  piece TEXT NOT NULL,
  type TEXT NOT NULL,
  height_in REAL NOT NULL CHECK (height_in >= 0),
  centre_x REAL NOT NULL,
  centre_y REAL NOT NULL,
  typed_at TEXT NOT NULL,
  typed_by TEXT NOT NULL,
  PRIMARY KEY (footage, piece)
);

-- Epic-scale games: each game's Army Morale ledger (webui/epic_api.py), written in the
-- same transaction as the Rally phase's rulings.
CREATE TABLE IF NOT EXISTS epic_ledger (
  game_id INTEGER PRIMARY KEY REFERENCES games (id),
  ledger TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
"""

#: Tables added after the first release: created in an existing database on start.
ADDED_TABLES = SCHEMA[SCHEMA.index("-- The imported roster"):]


def _schema() -> str:
    return SCHEMA


def init_db() -> None:
    """Drop and recreate every table."""
    db = get_db()
    db.executescript(_schema())
    db.commit()


def ensure_db(path: str) -> None:
    """Create the tables if the file has none yet (the server works without init-db)."""
    db = connect(path)
    try:
        have = db.execute("SELECT name FROM sqlite_master WHERE type='table' AND name='games'").fetchone()
        if have is None:
            db.executescript(_schema())
        else:
            db.executescript(ADDED_TABLES)
        db.commit()
    finally:
        db.close()


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def current_game(db: sqlite3.Connection, *, source: str = "", footage: str = "") -> sqlite3.Row:
    """The game being played (the latest one); a new one is started if there is none."""
    row = db.execute("SELECT * FROM games ORDER BY id DESC LIMIT 1").fetchone()
    if row is None:
        row = new_game(db, source=source, footage=footage)
    return row


def new_game(db: sqlite3.Connection, *, source: str = "", footage: str = "") -> sqlite3.Row:
    cur = db.execute("INSERT INTO games (started_at, source, footage) VALUES (?, ?, ?)", (now_iso(), source, footage))
    db.commit()
    return db.execute("SELECT * FROM games WHERE id = ?", (cur.lastrowid,)).fetchone()


def control_of(row: sqlite3.Row) -> dict[str, int | None]:
    return json.loads(row["control"])


@click.command("init-db")
@with_appcontext
def init_db_command() -> None:
    """Clear the existing data and create new tables."""
    from . import stop_player

    stop_player(current_app)  # no live view needed for this
    init_db()
    click.echo(f"Initialized the database at {current_app.config['DATABASE']}.")


def init_app(app) -> None:
    app.teardown_appcontext(close_db)
    app.cli.add_command(init_db_command)
