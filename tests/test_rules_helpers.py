"""Shared builders for the rules tests (imported by the test_rules_* modules)."""

from __future__ import annotations

from tracker.world import Base, Fighter, TerrainPart, TerrainPiece, Token, WorldState

B1 = Base("round", 1.0, 1.0)  # a 1" round base: radius 0.5


def fighter(fid, side=0, x=0.0, y=0.0, z=0.0, base=B1, **kw) -> Fighter:
    return Fighter(id=fid, side=side, x=x, y=y, z=z, base=base, **kw)


def objective(tid="obj", x=0.0, y=0.0, z=0.0, **kw) -> Token:
    return Token(id=tid, kind="objective", x=x, y=y, z=z, **kw)


def treasure(tid="tr", x=0.0, y=0.0, z=0.0, **kw) -> Token:
    return Token(id=tid, kind="treasure", x=x, y=y, z=z, **kw)


def box(x0, y0, x1, y1):
    return ((x0, y0), (x1, y0), (x1, y1), (x0, y1))


def part(pid, ptype, fp, height, base_z=0.0, **kw) -> TerrainPart:
    return TerrainPart(id=pid, type=ptype, footprint=fp, height_in=height, base_z=base_z, **kw)


def piece(pid, *parts, ptype="obstacle") -> TerrainPiece:
    fp = parts[0].footprint if parts else box(0, 0, 1, 1)
    return TerrainPiece(id=pid, type=ptype, footprint=fp, height_in=max(p.top_z for p in parts), parts=tuple(parts))


def state(fighters=(), tokens=(), terrain=()) -> WorldState:
    return WorldState(fighters=tuple(fighters), tokens=tuple(tokens), terrain=tuple(terrain))
