"""The shape issue #28 asks of detection: a package of small stages, each saying what goes
in and what comes out, all of them named in ARCHITECTURE.md."""

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STAGES = sorted(p for folder in ("tracker/detection", "tracker/vision") for p in (REPO / folder).glob("*.py")
                if p.name != "__init__.py")
MOST_LINES = 500  # "no stage is more than a few hundred lines"


@pytest.mark.parametrize("path", STAGES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_stage_is_small_and_says_what_goes_in_and_out(path):
    text = path.read_text()
    assert len(text.splitlines()) <= MOST_LINES, f"{path.name}: split it into stages of a few hundred lines"
    doc = ast.get_docstring(ast.parse(text)) or ""
    assert re.search(r"^In:", doc, re.M) and re.search(r"\bOut:|→", doc), \
        f"{path.name}: its docstring should say what goes in (In:) and what comes out (Out:)"


def test_architecture_names_every_stage():
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| (detection|vision stages) \|.*$",
                                                         (REPO / "ARCHITECTURE.md").read_text(), re.M)}
    for path in STAGES:
        row = rows["detection" if path.parent.name == "detection" else "vision stages"]
        assert f"`{path.stem}`" in row or f"`{path.name}`" in row, f"ARCHITECTURE.md does not name {path.name}"
