"""One still of a described scene, with its truth (for tests and quick looks).

>>> import numpy as np
>>> from tracker.synthetic import plan_game, overhead_camera, render_still
>>> game = plan_game(np.random.default_rng(0), seconds=2, n_fighters=4, hands=False)
>>> cam = overhead_camera(np.random.default_rng(0), 320, 180)
>>> img, truth = render_still(game, cam, time_s=0.0)
>>> img.shape, len(truth["fighters"])
((180, 320, 3), 4)
"""

from __future__ import annotations

import numpy as np

from .camera import Camera
from .game import FrameState, Game, Sensor, frame_truth, movers_for, play
from .scene import Mover, Renderer


def state_at(game: Game, time_s: float, step_s: float = 0.05) -> FrameState:
    """The game at ``time_s`` (played from the start, so pickups have happened)."""
    n = int(round(time_s / step_s)) + 1
    state = None
    for state in play(game, 1.0 / step_s, n):
        pass
    assert state is not None
    return state


def render_still(game: Game, camera: Camera, time_s: float = 0.0, supersample: int = 2,
                 sensor: Sensor | None = None, seed: int = 0, extra: list[Mover] | None = None,
                 renderer: Renderer | None = None) -> tuple[np.ndarray, dict]:
    """Render the game at ``time_s`` through ``camera``. Returns (BGR uint8 image, truth
    of that frame in the eval format, plus "camera"). Without a ``sensor`` the image is
    clean (no blur, noise or vignetting). ``extra`` movers (e.g. a calibration board) are
    drawn too; pass a ``renderer`` to reuse its cached table."""
    state = state_at(game, time_s)
    r = renderer or Renderer(game.table, camera, supersample)
    img, info = r.render(movers_for(state) + list(extra or []))
    if sensor is not None:
        out = sensor.apply(img, np.random.default_rng(seed))
    else:
        out = np.clip(img, 0, 255).astype(np.uint8)
    truth = frame_truth(0, state, camera, info, r)
    truth["camera"] = camera.to_truth()
    return out, truth
