"""Objective control, as the project's rules call it, on the truth and on the tracker's
world state (``benchmarks/heldout.py``).

Each frame's control is asked of the rules exactly as the page asks it: Warcry kinds
``tracker.rules.warcry.objective_control(state)`` (no control carried over: each frame is
a round's end of its own), Epic ``tracker.rules.epic.control(state, config.epic)`` (Take &
Hold, Cleanse, Capture markers). The truth's state holds the true fighters (base shape,
size, heading, side, x, y, z; Epic stands with their unit ``u<N>``) and true tokens, all
with ``sigma_in = 0``: control follows the measured distances whatever the sigma (sigma
only turns a verdict into "too close to call"), and only the tracker's verdict is read.

A ruling is reduced to ``{x, y, controller, verdict}``; the truth's and the tracker's are
paired by position (minimum-cost matching within 0.75 in, the scorer's own ``match``).
Per true objective-frame: ``agree`` (same controller, None included); ``flagged`` (a
different controller, but the tracker's verdict is too close to call); ``unseen`` (not
in the tracker's state, and its rules said so: set up, not in sight, look at the table);
``wrong`` (a different controller called outright, or the objective missing from the
tracker's state unsaid: ``missing`` counts those). Tracker objectives with no true one
are ``extra``.
"""

from __future__ import annotations

from typing import Any, Callable

from tracker.rules.ruling import TOO_CLOSE
from tracker.world import MM_PER_IN, Base, Fighter, Token, WorldState

CM_PER_IN = 2.54
GATE_IN = 0.75


def _base(f: dict) -> Base:
    if f.get("shape", "round") == "round" or "size_mm" not in f:
        return Base.round_mm(float(f["base_mm"]))
    w, d = (float(v) / MM_PER_IN for v in f["size_mm"])
    return Base(f["shape"], w, d, float(f.get("angle_deg", 0.0)))


def truth_state(frame: dict) -> WorldState:
    """A WorldState of one truth frame's fighters and tokens (sigma 0, none occluded)."""
    fighters = tuple(
        Fighter(id=f"t{f['id']}", side=int(f["team"]), x=float(f["x"]), y=float(f["y"]), z=float(f["z"]),
                base=_base(f), unit=None if f.get("unit") is None else f"u{f['unit']}")
        for f in frame["fighters"])
    tokens = tuple(
        Token(id=t.get("objective_id") or f"{t['kind']}-{i}", kind=t["kind"], x=float(t["x"]), y=float(t["y"]),
              z=float(t.get("z", 0.0)), diameter_in=float(t.get("diameter_in", 1.0)), tag_id=t.get("tag_id"))
        for i, t in enumerate(frame["tokens"]) if t["kind"] in ("objective", "treasure"))
    return WorldState(frame_index=int(frame["frame"]), fighters=fighters, tokens=tokens)


def control_rulings(state: WorldState, epic_config: Any = None) -> list[dict]:
    """Who controls each objective of ``state``: ``[{x, y, controller, verdict, tag}]``
    (``tag``: the objective's tag id, None if untagged). Warcry rules without
    ``epic_config``, Epic rules with it. An objective the rules call unseen (set up, not
    in sight) has no place (x, y None) and ``unseen`` True."""
    if epic_config is None:
        from tracker.rules.warcry import objective_control

        tags = {t.id: t.tag_id for t in state.tokens}
        res = objective_control(state)
        out = []
        for r in res.rulings:
            where = r.details.get("token")
            tag = tags.get(r.subject)
            if where is None and r.subject.removeprefix("objective-").isdigit():
                tag = int(r.subject.removeprefix("objective-"))
            out.append({"x": where[0] if where else None, "y": where[1] if where else None,
                        "controller": res.control.get(r.subject), "verdict": r.verdict, "tag": tag,
                        "unseen": where is None})
        return out
    from tracker.epic import markers_in_state
    from tracker.rules.epic import control

    where = {m.id: (m.x_cm / CM_PER_IN, m.y_cm / CM_PER_IN) for m in markers_in_state(state, epic_config)}
    tags = {o.id: o.tag_id for o in epic_config.objectives}
    res = control(state, epic_config)
    return [{"x": where[r.subject][0] if r.subject in where else None,
             "y": where[r.subject][1] if r.subject in where else None,
             "controller": res.control.get(r.subject), "verdict": r.verdict, "tag": tags.get(r.subject),
             "unseen": bool(r.details.get("unseen"))}
            for r in res.rulings if r.subject in where or r.details.get("unseen")]


def compare(truth: list[dict], tracked: list[dict], match: Callable) -> dict[str, int]:
    """Counts of one frame's true objectives by how the tracker's ruling agrees. A true
    objective with no tracked one at its place is ``unseen`` (flagged: the rules said it
    is set up but not in sight, "look at the table") when an unseen ruling of its tag, or
    one that names no tag, is left for it; else ``missing`` (and wrong)."""
    placed = [j for j, r in enumerate(tracked) if not r.get("unseen")]
    pairs = match([(r["x"], r["y"]) for r in truth], [(tracked[j]["x"], tracked[j]["y"]) for j in placed], GATE_IN)
    got = {i: placed[j] for i, j, _ in pairs}
    unseen = [r for r in tracked if r.get("unseen")]
    out = {"ctl_n": len(truth), "ctl_agree": 0, "ctl_flag": 0, "ctl_wrong": 0, "ctl_missing": 0, "ctl_unseen": 0,
           "ctl_extra": len(placed) - len(pairs), "ctl_agree_flag": 0}
    for i, t in enumerate(truth):
        if i not in got:
            said = next((u for u in unseen if u["tag"] is not None and u["tag"] == t.get("tag")), None) \
                or next((u for u in unseen if u["tag"] is None), None)
            if said is not None:
                unseen.remove(said)
                out["ctl_unseen"] += 1
                continue
            out["ctl_wrong"] += 1
            out["ctl_missing"] += 1
            continue
        q = tracked[got[i]]
        if q["controller"] == t["controller"]:
            out["ctl_agree"] += 1
            out["ctl_agree_flag"] += q["verdict"] == TOO_CLOSE  # right, yet flagged: what honesty costs
        elif q["verdict"] == TOO_CLOSE:
            out["ctl_flag"] += 1
        else:
            out["ctl_wrong"] += 1
    return out


def compare_frames(truth_frames: list[dict], tracked_rulings: list[list[dict]], epic_config: Any,
                   match: Callable) -> dict[str, int]:
    """``compare``'s counts summed over frames: each truth frame's control (its fighters
    and tokens) against the tracker's rulings of the same frame."""
    total: dict[str, int] = {}
    for fr, got in zip(truth_frames, tracked_rulings):
        for k, v in compare(control_rulings(truth_state(fr), epic_config), got, match).items():
            total[k] = total.get(k, 0) + v
    return total
