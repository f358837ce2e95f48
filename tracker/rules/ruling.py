"""The :class:`Ruling`: one call, with the measurement it rests on and how sure it is.

A ruling carries the measured value, the threshold, the margin (the combined 1-sigma
position error of the fighters and tokens measured), a verdict, the rule it applies
(quoted verbatim) and details for drawing.

Verdicts: ``"yes"``, ``"no"``, or ``"too close to call"`` when the threshold lies within
2 sigma of the measured value (with no position error, exactly on the threshold is a
plain answer: "within" means "at that distance or less").

>>> from tracker.rules.quotes import CONTROL
>>> distance_verdict(3.0, 3.0, margin=0.0)
'yes'
>>> distance_verdict(3.05, 3.0, margin=0.05)
'too close to call'
>>> distance_verdict(3.2, 3.0, margin=0.05)
'no'
>>> r = Ruling(question="control", subject="obj1", rule=CONTROL, verdict="yes",
...            measured=2.5, threshold=3.0, margin=0.05, outcome="side 0 gains control")
>>> r.to_dict()["rule"]["id"], r.to_dict()["verdict"]
('control', 'yes')
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

from .quotes import Rule

Verdict = Literal["yes", "no", "too close to call"]
YES: Verdict = "yes"
NO: Verdict = "no"
TOO_CLOSE: Verdict = "too close to call"

#: How many sigma either side of a threshold is "too close to call".
CALL_SIGMAS = 2.0


def combined_sigma(*sigmas: float) -> float:
    """Combine independent 1-sigma errors (root sum of squares).

    ``sigma_in`` is read as the 1-sigma error of a position along any one horizontal
    direction, so a distance between two points has the combined error of both.

    >>> combined_sigma(0.03, 0.04)
    0.05
    """
    return round(math.sqrt(sum(float(s) ** 2 for s in sigmas)), 12)


def distance_verdict(measured: float, threshold: float, margin: float, *, at_most: bool = True) -> Verdict:
    """``"yes"`` if ``measured <= threshold`` (``>=`` when ``at_most`` is False), ``"no"``
    otherwise, ``"too close to call"`` if the threshold is within 2 sigma (``margin``) of
    the measured value.

    >>> distance_verdict(2.9, 2.0, 0.0, at_most=False)
    'yes'
    """
    if margin > 0 and abs(measured - threshold) <= CALL_SIGMAS * margin + 1e-9:
        return TOO_CLOSE
    ok = measured <= threshold + 1e-9 if at_most else measured >= threshold - 1e-9
    return YES if ok else NO


def unsure_sides_note(unsure: list[dict[str, Any]]) -> str:
    """The note a control ruling carries when fighters whose side the camera is not sure
    of (``Fighter.rival_sides``; each ``{"fighter", "side", "could_be"}``) make it close.

    >>> unsure_sides_note([{"fighter": "f2", "side": 0, "could_be": [1]}])[52:]
    'rim of f2 to be sure of its side (side 0, or perhaps 1): look at the table'
    """
    return ("too close to call: the camera saw too little of the rim of "
            + "; ".join(f"{u['fighter']} to be sure of its side (side {u['side']}, or perhaps "
                        f"{' or '.join(map(str, u['could_be']))})" for u in unsure)
            + ": look at the table")


def _jsonable(v: Any) -> Any:
    if isinstance(v, float):
        return round(v, 6) if math.isfinite(v) else None
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        items = sorted(v) if isinstance(v, (set, frozenset)) else v
        return [_jsonable(x) for x in items]
    if hasattr(v, "to_dict"):
        return v.to_dict()
    return v


@dataclass(frozen=True)
class Measurement:
    """One measured quantity behind a ruling, e.g. one fighter's distance to a token."""

    subject: str
    measured: float
    threshold: float
    margin: float
    verdict: Verdict
    comparison: str = "<="
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {"subject": self.subject, "measured": self.measured, "threshold": self.threshold,
             "margin": self.margin, "comparison": self.comparison, "verdict": self.verdict}
        if self.note:
            d["note"] = self.note
        return _jsonable(d)


@dataclass(frozen=True)
class Ruling:
    """One call on one question.

    ``question`` is what was asked (``control``, ``cover``, ``pick-up``...), ``subject``
    what it was asked about (an objective id, ``"attacker->target"``...). ``measured``,
    ``threshold`` and ``margin`` are the deciding measurement (``None`` for calls that
    measure nothing, e.g. a runemark restriction); ``measurements`` lists every
    measurement taken; ``outcome`` says the call in words; ``notes`` the caveats
    (occluded fighters...); ``details`` what a renderer needs (lines, points, ids).
    """

    question: str
    subject: str
    rule: Rule
    verdict: Verdict
    measured: float | None = None
    threshold: float | None = None
    margin: float = 0.0
    comparison: str = "<="
    outcome: str = ""
    measurements: tuple[Measurement, ...] = ()
    notes: tuple[str, ...] = ()
    also: tuple[Rule, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def too_close_to_call(self) -> bool:
        return self.verdict == TOO_CLOSE

    @property
    def rules(self) -> tuple[Rule, ...]:
        """The main rule and every other rule the call relied on."""
        return (self.rule,) + self.also

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (floats rounded to 1e-6 inch)."""
        return _jsonable({
            "question": self.question, "subject": self.subject, "verdict": self.verdict,
            "too_close_to_call": self.too_close_to_call, "outcome": self.outcome,
            "measured": self.measured, "threshold": self.threshold, "margin": self.margin,
            "comparison": self.comparison, "rule": self.rule, "also": list(self.also),
            "measurements": list(self.measurements), "notes": list(self.notes),
            "details": dict(self.details),
        })

    def describe(self) -> str:
        """A few human-readable lines: the call, the measurement, the rule."""
        head = f"[{self.question}] {self.subject}: {self.verdict.upper()}"
        if self.outcome:
            head += f" - {self.outcome}"
        lines = [head]
        if self.measured is not None and self.threshold is not None:
            lines.append(f"  measured {self.measured:.3f}\" {self.comparison} {self.threshold:g}\""
                         f" (margin 1-sigma {self.margin:.3f}\")")
        for m in self.measurements:
            extra = f" ({m.note})" if m.note else ""
            lines.append(f"    {m.subject}: {m.measured:.3f}\" {m.comparison} {m.threshold:g}\" "
                         f"+/- {m.margin:.3f} -> {m.verdict}{extra}")
        for n in self.notes:
            lines.append(f"  note: {n}")
        lines.append(f"  rule ({self.rule.source}): \"{self.rule.quote}\"")
        return "\n".join(lines)
