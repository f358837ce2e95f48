"""The project's own scene renderer and sample footage.

An overhead camera (exactly OpenCV's model) over a Warcry table: mat, table markers,
terrain with tags, fighters on rimmed bases with miniatures, tokens, players' hands,
lighting and shadows, sensor noise. See :func:`render_set` (a whole set: game.yaml,
calib views, empty table, clip, truth) and :func:`render_still` (one image of a
described scene, for tests).

>>> from tracker.synthetic import render_set, render_still   # doctest: +SKIP
"""

from .camera import Camera, bumped, overhead_camera
from .game import Game, Sensor, plan_game, render_set
from .scene import Renderer, Table
from .still import render_still

__all__ = ["Camera", "Game", "Renderer", "Sensor", "Table", "bumped", "overhead_camera", "plan_game",
           "render_set", "render_still"]
