"""What the judges add to the tracker's picture of the table: the roster (which detected
base is which named fighter, with its runemarks and Move) and corrections of
misdetections (a base moved, removed, or given to the other side).

Both are kept in SQLite and applied to the tracker's :class:`WorldState` wherever it is
used: ``/api/state``, the overlay, measurements and the rulings at the end of a round.
Pure data and parsing here (no Flask); the routes are in :mod:`webui.judge_api`.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import sqlite3
from dataclasses import dataclass, field, replace
from typing import Any

from tracker.inputs import quote
from tracker.world import WorldState

from .errors import ApiError

FIGHTER_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,32}$")
MAX_ROSTER = 60
ROSTER_KEYS = ("name", "side", "base", "runemarks", "move", "wounds")
ROSTER_ALIASES = {"base_mm": "base", "base_size": "base", "M": "move", "W": "wounds", "runemark": "runemarks"}
ACTIONS = ("move", "remove", "side")

_versions = itertools.count(1)


@dataclass(frozen=True)
class RosterFighter:
    name: str
    side: int
    base_mm: str  # "32" (round) or "60x35" (oval)
    runemarks: tuple[str, ...] = ()
    move: int | None = None
    wounds: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "side": self.side, "base_mm": self.base_mm, "runemarks": list(self.runemarks),
                "move": self.move, "wounds": self.wounds}


@dataclass(frozen=True)
class Correction:
    id: int
    fighter: str
    action: str
    params: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Adjustments:
    """Roster, assignments and the corrections in force for one game, as of ``version``."""

    version: int = 0
    game_id: int | None = None
    roster: dict[str, RosterFighter] = field(default_factory=dict, compare=False)
    assignments: dict[str, str] = field(default_factory=dict, compare=False)  # fighter id -> roster name
    corrections: tuple[Correction, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.assignments and not self.corrections

    def apply(self, state: WorldState) -> WorldState:
        """``state`` with names/runemarks/Move from the roster and the corrections made."""
        if self.empty:
            return state
        fighters = []
        for f in state.fighters:
            name = self.assignments.get(f.id)
            rf = self.roster.get(name) if name else None
            if rf is not None:
                f = replace(f, name=rf.name, runemarks=frozenset(rf.runemarks), move=rf.move)
            removed = False
            for c in self.corrections:
                if c.fighter != f.id:
                    continue
                if c.action == "remove":
                    removed = True
                elif c.action == "side":
                    f = replace(f, side=int(c.params["side"]))
                elif c.action == "move":
                    z = c.params.get("z")
                    f = replace(f, x=float(c.params["x"]), y=float(c.params["y"]), z=f.z if z is None else float(z))
            if not removed:
                fighters.append(f)
        extra = dict(state.extra)
        if self.corrections:
            extra["corrections"] = [c.id for c in self.corrections]
        return replace(state, fighters=tuple(fighters), extra=extra)


# -- loading -------------------------------------------------------------------------
def roster_rows(db: sqlite3.Connection) -> list[sqlite3.Row]:
    return db.execute("SELECT * FROM roster ORDER BY position, name").fetchall()


def roster_fighter(row: sqlite3.Row) -> RosterFighter:
    return RosterFighter(row["name"], int(row["side"]), row["base_mm"], tuple(json.loads(row["runemarks"])),
                         row["move"], row["wounds"])


def load(db: sqlite3.Connection, game_id: int) -> Adjustments:
    roster = {r["name"]: roster_fighter(r) for r in roster_rows(db)}
    assignments = {r["fighter"]: r["roster_name"] for r in db.execute("SELECT fighter, roster_name FROM assignments")}
    corrections = tuple(
        Correction(r["id"], r["fighter"], r["action"], json.loads(r["params"]))
        for r in db.execute("SELECT id, fighter, action, params FROM corrections "
                            "WHERE game_id = ? AND undone_at IS NULL ORDER BY id", (game_id,)))
    return Adjustments(next(_versions), game_id, roster, assignments, corrections)


# -- parsing a roster ------------------------------------------------------------------
def parse_roster_text(text: str) -> Any:
    """YAML or JSON text (JSON is YAML) → data; ApiError(400) when it is neither, or uses
    anchors and aliases, or holds what no value may (``tracker.inputs.check_values``)."""
    import yaml

    from tracker.errors import UserError
    from tracker.inputs import check_values, load_yaml

    try:
        data = load_yaml(text, "the roster")  # no aliases: 358 bytes of them made 722 kB
        check_values(data, "the roster")
    except UserError as e:
        raise ApiError(400, str(e)) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        if "aliases and anchors" in str(getattr(e, "problem", None) or ""):
            raise ApiError(400, f"the roster uses YAML anchors or aliases (& and *){where}; "
                                f"they are not allowed: write each value out") from None
        raise ApiError(400, f"the roster is not valid YAML or JSON{where}; fix the syntax") from None
    return data


def _base_mm(v: Any, where: str) -> str:
    if isinstance(v, bool):
        raise ApiError(400, f"{where}.base: give the base size in mm, e.g. 32 or '60x35', not {quote(v)}")
    if isinstance(v, (int, float)):
        parts = [float(v)]
    elif isinstance(v, str):
        s = v.strip().lower().removesuffix("mm").strip()
        try:
            parts = [float(p) for p in re.split(r"\s*[x×]\s*", s)]
        except ValueError:
            raise ApiError(400, f"{where}.base: give the base size in mm, e.g. 32 or '60x35', not {quote(v)}") from None
    else:
        raise ApiError(400, f"{where}.base: give the base size in mm, e.g. 32 or '60x35', not {quote(v)}")
    if not 1 <= len(parts) <= 2 or not all(math.isfinite(p) and 10 <= p <= 200 for p in parts):
        raise ApiError(400, f"{where}.base: base sizes are 10-200 mm (one number, or width x depth), not {quote(v)}")
    return "x".join(f"{p:g}" for p in parts)


def _int(v: Any, where: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ApiError(400, f"{where}: must be a whole number {lo}-{hi}, not {quote(v)}")
    try:
        f = float(str(v).strip().rstrip('"'))
    except ValueError:
        raise ApiError(400, f"{where}: must be a whole number {lo}-{hi}, not {quote(v)}") from None
    if not math.isfinite(f) or f != int(f) or not lo <= f <= hi:
        raise ApiError(400, f"{where}: must be a whole number {lo}-{hi}, not {quote(v)}")
    return int(f)


def parse_side(v: Any, sides: list[dict[str, Any]], where: str) -> int:
    """A side index or colour name → index (checked against the game's sides if known)."""
    names = {str(s["colour"]).lower(): int(s["index"]) for s in sides}
    indices = {int(s["index"]) for s in sides}
    known = ", ".join(f"{s['index']} ({s['colour']})" for s in sides) or "0-7"
    if isinstance(v, str) and v.strip().lower() in names:
        return names[v.strip().lower()]
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise ApiError(400, f"{where}: give a side index or colour ({known}), not {quote(v)}")
    try:
        i = int(str(v).strip())
    except ValueError:
        raise ApiError(400, f"{where}: give a side index or colour ({known}), not {quote(v)}") from None
    if (indices and i not in indices) or not 0 <= i <= 7:
        raise ApiError(400, f"{where}: no side {quote(v)} in this game; sides are {known}")
    return i


def parse_roster(data: Any, sides: list[dict[str, Any]]) -> list[RosterFighter]:
    """``{"fighters": [...]}`` or a bare list → roster fighters (every field checked)."""
    if isinstance(data, dict):
        extra = sorted(map(str, set(data) - {"fighters", "warband", "name", "game"}))
        if extra:  # (keys quoted and cut: a roster's keys are the client's text)
            raise ApiError(400, f"roster: unknown key(s) {', '.join(quote(k, 40) for k in extra[:5])}; "
                                f"give 'fighters': a list of fighters")
        data = data.get("fighters")
    if not isinstance(data, list) or not data:
        raise ApiError(400, "roster: give 'fighters', a list of fighters with name, side, base, runemarks, move, wounds")
    if len(data) > MAX_ROSTER:
        raise ApiError(400, f"roster: {len(data)} fighters is more than {MAX_ROSTER}; split it")
    out: list[RosterFighter] = []
    seen: set[str] = set()
    for i, fd in enumerate(data):
        where = f"roster.fighters[{i}]"
        if not isinstance(fd, dict):
            raise ApiError(400, f"{where}: expected a mapping with name, side, base, ..., got {type(fd).__name__}")
        fd = {ROSTER_ALIASES.get(str(k), str(k)): v for k, v in fd.items()}
        unknown = set(fd) - set(ROSTER_KEYS)
        if unknown:
            raise ApiError(400, f"{where}: unknown key(s) {', '.join(quote(k, 40) for k in sorted(unknown)[:5])}; "
                                f"the keys are {', '.join(ROSTER_KEYS)}")
        for key in ("name", "side", "base"):
            if key not in fd:
                raise ApiError(400, f"{where}: missing '{key}'")
        name = fd["name"]
        if not isinstance(name, str) or not name.strip() or len(name) > 40:
            raise ApiError(400, f"{where}.name: give a name of 1-40 characters, not {quote(name)}")
        name = name.strip()
        where = f"roster fighter '{name}'"
        if name.lower() in seen:
            raise ApiError(400, f"{where}: two fighters have this name; give each its own")
        seen.add(name.lower())
        rm = fd.get("runemarks", [])
        if isinstance(rm, str):
            rm = [p for p in re.split(r"\s*,\s*", rm.strip()) if p]
        if not isinstance(rm, list) or not all(isinstance(x, str) and 0 < len(x.strip()) <= 30 for x in rm) or len(rm) > 12:
            raise ApiError(400, f"{where}.runemarks: give a list of up to 12 words, not {quote(rm)}")
        out.append(RosterFighter(
            name=name, side=parse_side(fd["side"], sides, f"{where}.side"), base_mm=_base_mm(fd["base"], where),
            runemarks=tuple(sorted({x.strip().lower() for x in rm})),
            move=None if fd.get("move") is None else _int(fd["move"], f"{where}.move", 1, 20),
            wounds=None if fd.get("wounds") is None else _int(fd["wounds"], f"{where}.wounds", 1, 200)))
    return out


def fighter_id(v: Any, what: str = "fighter") -> str:
    if not isinstance(v, str) or not FIGHTER_ID.match(v.strip()):
        raise ApiError(400, f"'{what}' must be a fighter id such as \"f3\" (as on the overlay), not {quote(v)}")
    return v.strip()


def base_mismatch(rf: RosterFighter, size_mm: tuple[float, float]) -> str | None:
    want = sorted(float(p) for p in rf.base_mm.split("x"))
    want = want * 2 if len(want) == 1 else want
    got = sorted(size_mm)
    if any(abs(a - b) > max(4.0, 0.12 * a) for a, b in zip(want, got)):
        return (f"{rf.name} is on a {rf.base_mm} mm base but the detected base measures "
                f"{'x'.join(f'{g:g}' for g in sorted(size_mm, reverse=True))} mm: is it the right fighter?")
    return None
