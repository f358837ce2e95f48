"""``rule STATE.json``: print the rulings for a saved world state (or a track file's
frame, or ``/api/state``'s body).

The only module of the rules core that reads files. Registered on the ``tabletracker``
group by the lead; also runs alone: ``python -m tracker.rules.cli STATE.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from tracker.errors import UserError
from tracker.inputs import MAX_DEPTH, depth

from . import quotes
from .cover import cover
from .measure import closest
from .ruling import NO, Ruling
from .schema import StateError, parse_control, parse_world_state
from .terrain import falling_test
from .treasure import PICK_UP_IN, drop_points, pick_up, touching_treasure
from .warcry import objective_control

QUESTIONS = ("control", "cover", "treasure", "falling", "all")


def _read_json(path: str, what: str) -> Any:
    p = Path(path)
    if not p.is_file():
        raise UserError(f"{path}: {what} file not found")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise StateError(f"{path}: not a text file; give the {what} as JSON") from None
    except json.JSONDecodeError as e:
        raise StateError(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    except RecursionError:  # (a file nested 100,000 deep)
        data = None
    if data is None or depth(data) > MAX_DEPTH:
        raise StateError(f"{path}: nested more than {MAX_DEPTH} levels deep; give the {what} as "
                         f"WorldState.to_dict() writes it") from None
    return data


def world_state_of(doc: Any, path: str, frame: int | None = None) -> tuple[Any, str | None]:
    """The world-state dict in what the project writes: a world state itself
    (``WorldState.to_dict()``), ``track --out``'s file (its frame whose ``frame_index``
    is ``frame``, else its last) or ``/api/state``'s body (its ``state``). Also a note
    for the user when a frame was chosen for them (None otherwise)."""
    if isinstance(doc, dict) and isinstance(doc.get("frames"), list) and "fighters" not in doc:
        frames = [f for f in doc["frames"] if isinstance(f, dict)]
        if not frames:
            raise StateError(f"{path}: a track file with no frames; track some footage first")
        if frame is None:
            last = frames[-1]
            return last, (f"{path}: ruling on its last frame ({last.get('frame_index', len(frames) - 1)}); "
                          f"choose another with --frame N") if len(frames) > 1 else None
        found = next((f for f in frames if f.get("frame_index") == frame), None)
        if found is None:
            have = [f.get("frame_index") for f in frames]
            raise StateError(f"{path}: no frame {frame} (it holds frames {have[0]} to {have[-1]}); "
                             f"give --frame one of those")
        return found, None
    if frame is not None:
        raise UserError(f"--frame {frame}: {path} holds one world state, not a track file's frames; leave --frame out")
    if isinstance(doc, dict) and isinstance(doc.get("state"), dict) and "fighters" not in doc:
        return doc["state"], None  # (/api/state's body)
    return doc, None


def rulings_for(state, question: str = "all", attacker: str | None = None, target: str | None = None,
                previous: dict | None = None, battle_round: int = 1) -> tuple[dict | None, list[Ruling]]:
    """(control map or None, rulings) for one question; pure (no I/O)."""
    ids = [f.id for f in state.fighters]
    for flag, v in (("--attacker", attacker), ("--target", target)):
        if v is not None and v not in ids:
            raise UserError(f"{flag} {v}: no such fighter (fighters: {', '.join(ids) or 'none'})")
    out: list[Ruling] = []
    control = None
    if question in ("control", "all"):
        res = objective_control(state, previous, battle_round)
        control = res.control
        out.extend(res.rulings)
    if question in ("cover", "all"):
        if attacker and target:
            pairs = [(attacker, target)]
        elif question == "cover" and (attacker or target):
            raise UserError("--question cover needs both --attacker ID and --target ID (or neither, for every pair)")
        else:
            pairs = [(a.id, t.id) for a in state.fighters for t in state.fighters
                     if a.side != t.side and (attacker in (None, a.id)) and (target in (None, t.id))]
        out.extend(cover(state, a, t) for a, t in pairs)
    if question in ("falling", "all"):
        who = [target] if target else [f.id for f in state.fighters if f.z > 0 or f.climbing]
        out.extend(falling_test(state, t) for t in who)
    if question in ("treasure", "all"):
        for f in state.fighters:
            for tok in state.treasure():
                r = pick_up(state, f.id, tok.id)
                near = closest(f, tok).distance <= PICK_UP_IN + 2 * (f.sigma_in + tok.sigma_in)
                if r.verdict != NO or near:  # refusals (Beast, already carrying) only when it is in reach
                    out.append(r)
            t = touching_treasure(state, f.id)
            if t.verdict != NO:
                out.append(t)
            if f.carrying:
                pts = drop_points(state, f.id)
                out.append(Ruling("drop", f"{f.id} drops {f.carrying}", quotes.DROP, "yes" if pts else "no",
                                  outcome=f"{len(pts)} suggested legal drop points",
                                  details={"points": [list(p) for p in pts]}))
    return control, out


@click.command("rule")
@click.argument("state_file", metavar="STATE.json", type=click.Path(dir_okay=False))
@click.option("--question", type=click.Choice(QUESTIONS), default="all", show_default=True,
              help="Which rulings to give.")
@click.option("--attacker", metavar="ID", default=None, help="Attacking fighter (cover).")
@click.option("--target", metavar="ID", default=None, help="Targeted fighter (cover, falling).")
@click.option("--previous", metavar="control.json", default=None, type=click.Path(dir_okay=False),
              help="Control carried over from the last round: {objective id: side or null}.")
@click.option("--round", "battle_round", type=click.IntRange(1), default=1, show_default=True,
              help="The battle round that is ending (control).")
@click.option("--frame", "frame", type=click.IntRange(0), default=None,
              help="With a track file (track --out): the frame to rule on (default: its last).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def rule(state_file, question, attacker, target, previous, battle_round, frame, as_json):
    """Print the rulings (control, cover, treasure, falling) for a saved world state:
    a world state, a track file (``track --out``; ``--frame N``) or ``/api/state``'s body."""
    doc, note = world_state_of(_read_json(state_file, "world state"), state_file, frame)
    if note:
        click.echo(note, err=True)
    state = parse_world_state(doc)
    prev = parse_control(_read_json(previous, "control"), "previous") if previous else None
    control, rulings = rulings_for(state, question, attacker, target, prev, battle_round)
    if as_json:
        doc: dict[str, Any] = {"rulings": [r.to_dict() for r in rulings]}
        if control is not None:
            doc["control"] = control
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    if control is not None:
        click.echo("control after battle round %d: %s" % (battle_round, ", ".join(
            f"{k}: {'side ' + str(v) if v is not None else 'nobody'}" for k, v in control.items()) or "no objectives"))
    for r in rulings:
        click.echo(r.describe())
    if not rulings:
        click.echo("no rulings")


def main(argv: list[str] | None = None) -> int:
    """Run ``rule`` alone, printing a UserError as one line."""
    try:
        rule.main(args=argv, prog_name="rule", standalone_mode=False)
    except UserError as e:
        click.echo(f"error: {e}", err=True)
        return e.exit_code
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except click.exceptions.Abort:
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
