"""Reading what a user gives (a file, a request body): JSON and YAML within bounds.

A JSON file nested 100,000 deep ends ``json.loads`` in a RecursionError, and one a
little shallower sends every recursive walk after it (``jsonable``, ``json.dumps``)
the same way; a YAML document of nested aliases (a "billion laughs", a few hundred
bytes) expands to gigabytes. So: :func:`depth` measures nesting without recursion
(readers refuse more than :data:`MAX_DEPTH`); :func:`load_yaml` refuses YAML anchors and
aliases (no roster or game config needs them) and too deep a nesting;
:func:`check_values` finds what no request value may be (too deep, beyond 64 bits, a
lone surrogate); :func:`quote` cuts any input echoed in a message to :data:`QUOTE_CHARS`.
"""

from __future__ import annotations

import math
from typing import Any

import yaml

from .errors import UserError

__all__ = ["MAX_DEPTH", "QUOTE_CHARS", "NoAliasSafeLoader", "check_values", "depth", "load_yaml", "quote"]

MAX_DEPTH = 64  # a world state nests 6 deep, a game config 5: far beyond any real file
QUOTE_CHARS = 200


def quote(value: Any, limit: int = QUOTE_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters (the cut marked with '...')."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64 * 4:
        return f"a number of about {int(value.bit_length() * 0.30103)} digits"  # (repr refuses 4,300)
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deep ``value``'s lists and dicts nest (a scalar: 0), counted without recursion
    and stopping once past ``limit``."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            children = v.values()
        elif isinstance(v, (list, tuple)):
            children = v
        else:
            continue
        deepest = max(deepest, d)
        if deepest > limit:
            return deepest
        stack.extend((c, d + 1) for c in children)
    return deepest


INT64 = (-(2 ** 63), 2 ** 63 - 1)  # what SQLite keeps (a larger one: OverflowError)


def _field(path: list) -> str:
    out = ""
    for k in path:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return out if len(out) <= 80 else out[:77] + "..."


def _whole_unicode(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate ("\ud800"): no character at all
        return False
    return True


def check_values(data: Any, where: str = "the request body") -> None:
    """UserError naming the field (``roster[2].name``) for what no tabletracker value
    may be, wherever it lies in ``data``: nesting deeper than :data:`MAX_DEPTH`, a whole
    number beyond 64 bits, a number that is not finite, a string (or key) holding a lone
    surrogate. Walked without recursion."""
    stack: list[tuple[Any, list]] = [(data, [])]
    while stack:
        v, path = stack.pop()
        if len(path) > MAX_DEPTH:
            raise UserError(f"{where}: nested more than {MAX_DEPTH} levels deep")
        at = _field(path) or where
        if isinstance(v, bool) or v is None:
            continue
        if isinstance(v, int):
            if not INT64[0] <= v <= INT64[1]:
                raise UserError(f"'{at}': {quote(v, 40)} is too large a number (beyond 64 bits)")
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise UserError(f"'{at}': {v!r} is not a number")
        elif isinstance(v, str):
            if not _whole_unicode(v):
                raise UserError(f"'{at}': the text holds a lone surrogate (not a character); send UTF-8 text")
        elif isinstance(v, dict):
            for k, x in v.items():
                if isinstance(k, str) and not _whole_unicode(k):
                    raise UserError(f"'{at}': a field name holds a lone surrogate (not a character)")
                stack.append((x, path + [k]))
        elif isinstance(v, (list, tuple)):
            stack.extend((x, path + [i]) for i, x in enumerate(v))


def _too_deep(where: str) -> UserError:
    return UserError(f"{where}: nested more than {MAX_DEPTH} levels deep; no tabletracker file nests so deep")


class NoAliasSafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` refusing anchors and aliases (``&a`` / ``*a``): a few hundred
    bytes of nested aliases expand to gigabytes."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, f"found the alias *{event.anchor}: aliases and anchors are not allowed here; "
                            f"write each value out", event.start_mark)
        event = self.peek_event()
        if getattr(event, "anchor", None) is not None:
            raise yaml.composer.ComposerError(
                None, None, f"found the anchor &{event.anchor}: aliases and anchors are not allowed here; "
                            f"write each value out", event.start_mark)
        return super().compose_node(parent, index)


def load_yaml(text: str | bytes, where: str) -> Any:
    """``yaml.safe_load(text)`` without anchors or aliases, nested at most
    :data:`MAX_DEPTH` deep. A YAML mistake is raised as ``yaml.YAMLError`` (for the
    caller to word with its line); too deep a nesting as UserError naming ``where``."""
    try:
        data = yaml.load(text, Loader=NoAliasSafeLoader)  # noqa: S506 (a SafeLoader)
    except RecursionError:
        raise _too_deep(where) from None
    if depth(data) > MAX_DEPTH:
        raise _too_deep(where)
    return data
