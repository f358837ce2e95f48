"""Reading what a user gives (a file, a request body): JSON and YAML within bounds.

A JSON file nested 100,000 deep ends ``json.loads`` in a RecursionError, and one a
little shallower sends every recursive walk after it (``jsonable``, ``json.dumps``)
the same way; a YAML document of nested aliases (a "billion laughs", a few hundred
bytes) expands to gigabytes. So: :func:`load_json` and :func:`load_yaml` raise
:class:`~tracker.errors.UserError` (one line) for nesting deeper than
:data:`MAX_DEPTH` and for YAML anchors and aliases (no roster or game config needs
them); :func:`quote` cuts any input echoed in a message to :data:`QUOTE_CHARS`.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from .errors import UserError

__all__ = ["MAX_DEPTH", "QUOTE_CHARS", "NoAliasSafeLoader", "depth", "load_json", "load_yaml", "quote"]

MAX_DEPTH = 64  # a world state nests 6 deep, a game config 5: far beyond any real file
QUOTE_CHARS = 200


def quote(value: Any, limit: int = QUOTE_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters (the cut marked with '...')."""
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


def _too_deep(where: str) -> UserError:
    return UserError(f"{where}: nested more than {MAX_DEPTH} levels deep; no tabletracker file nests so deep")


def load_json(text: str | bytes, where: str) -> Any:
    """``json.loads(text)`` nested at most :data:`MAX_DEPTH` deep; UserError naming
    ``where`` for invalid or too deeply nested JSON."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise _too_deep(where) from None
    except json.JSONDecodeError as e:
        raise UserError(f"{where}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    if depth(data) > MAX_DEPTH:
        raise _too_deep(where)
    return data


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
