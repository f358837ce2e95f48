"""Quotes are verbatim; doctests of the rules package run."""

from __future__ import annotations

import doctest
import importlib
import pathlib
import pkgutil

import pytest

import tracker.rules
from tracker.rules import quotes

RULES_DIR = pathlib.Path(__file__).resolve().parents[2] / "shared" / "rules"


@pytest.mark.parametrize("rule", quotes.ALL_RULES, ids=lambda r: r.id)
def test_quote_is_verbatim(rule):
    text = (RULES_DIR / rule.source).read_text(encoding="utf-8")
    assert rule.quote in text


def test_rule_ids_unique():
    ids = [r.id for r in quotes.ALL_RULES]
    assert len(ids) == len(set(ids))


MODULES = ["tracker.world"] + [f"tracker.rules.{m.name}" for m in pkgutil.iter_modules(tracker.rules.__path__)]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    mod = importlib.import_module(name)
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert res.failed == 0
