"""Terrain pieces from their tags: pose from the tag, geometry from the terrain library.

A tag lies on the piece's flat top at the piece's height (physical spec), so its corners
are unprojected at that height; the tag's centre is the piece's origin and its top edge
the piece's +y. A tagged piece missing from the library is reported with a 1 in
footprint and type "unknown" so the judge can type it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .config import GameConfig
from .world import TerrainPiece

TERRAIN_TAG_IDS = range(10, 40)


def tag_pose(corners_uv: np.ndarray, camera: Any, height_in: float) -> tuple[float, float, float]:
    """World (x, y, theta) of a tag from its four image corners (OpenCV order TL, TR,
    BR, BL), lying flat at ``height_in``. theta is the angle of the tag's +x axis."""
    xy = np.asarray(camera.unproject(np.asarray(corners_uv, float).reshape(4, 2), height_in), float)
    centre = xy.mean(axis=0)
    ex = (xy[1] - xy[0]) + (xy[2] - xy[3])  # TL→TR and BL→BR: the tag's +x
    ey = (xy[0] - xy[3]) + (xy[1] - xy[2])  # BL→TL and BR→TR: the tag's +y (its top edge)
    # Average the two axes' angles so that neither edge alone sets the heading.
    th_x = np.arctan2(ex[1], ex[0])
    th_y = np.arctan2(ey[1], ey[0]) - np.pi / 2
    th = float(np.arctan2(np.sin(th_x) + np.sin(th_y), np.cos(th_x) + np.cos(th_y)))
    return float(centre[0]), float(centre[1]), th


def terrain_from_markers(ids: np.ndarray, corners: np.ndarray, camera: Any, config: GameConfig) -> tuple[TerrainPiece, ...]:
    """Terrain pieces for the terrain tags (ids 10-39) among detected markers."""
    pieces = []
    for tag_id, c in zip(np.asarray(ids).ravel(), np.asarray(corners).reshape(-1, 4, 2)):
        tag_id = int(tag_id)
        if tag_id not in TERRAIN_TAG_IDS:
            continue
        spec = config.terrain_spec(tag_id)
        height = spec.height_in if spec else 0.0
        x, y, th = tag_pose(c, camera, height)
        if spec is not None:
            fp = np.asarray(spec.footprint_in_tag_frame, float)
            ptype = spec.type
        else:
            fp = np.array([[-0.5, -0.5], [0.5, -0.5], [0.5, 0.5], [-0.5, 0.5]])
            ptype = "unknown"
        R = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
        world = fp @ R.T + np.array([x, y])
        pieces.append(TerrainPiece(id=f"terrain-{tag_id}", type=ptype,
                                   footprint=tuple((float(a), float(b)) for a, b in world),
                                   height_in=float(height), tag_id=tag_id))
    return tuple(sorted(pieces, key=lambda p: p.tag_id or 0))
