"""Detection: bases (with their side), tokens and terrain in one frame, in world inches.

Why it works in a rectified view: every surface a base can stand on is a horizontal
plane at a known height (the floor, a platform top). Re-sampling the camera image onto
that plane (at the height of the base's top face, where the rim is) turns every rim into
a true circle of its known radius, centred exactly above the base's centre, whatever
the camera's tilt and lens. The rim is the signal: miniatures cover most of a base and
may share the rim's colour, so the detector looks for a thin ring of the side's colour
at one of the side's base radii, not for a blob.

Colour is judged against the empty table (``table.jpg``): each pixel is explained as a
mix of the background seen there and a side's rim colour; the mix fraction is the rim
evidence. That keeps a green rim on green grass, or a white rim on pale sand, visible.

``TableDetector`` (``detector.py``) runs a look's stages in order, each a module here:

- ``table_views``: the frame re-lit and re-sampled onto each plane; hands; each place's error;
- ``round_rims``: round rims per side and size, whole or partly hidden;
- ``shaped``: oval and rectangular bases and Epic stands by their outline;
- ``placement``: which candidate fits can stand together as bases;
- ``sides``: each base's side from its rim's colour, and the sides it could also be;
- ``roster``: what was found held against the rosters (a prior, never a veto alone);
- ``patches``: bases found as foreground the bases found leave unexplained, and doubts;
- ``tokens`` and ``token_names``: token discs, their tags and kinds, paper told from bases;
- ``learned``: the learned refiner where the rules saw too little;
- ``following``: known fighters re-fitted in small windows between looks.

The pixel-level tools they share (evidence maps, filters, rim fits, foreground, tags) are
in ``tracker.vision``. Detections are one dataclass of parallel numpy arrays
(``detections.Detections``), filtered with boolean masks: ``dets[dets.side == 0]``.
"""

from .detections import KIND_BASE, KIND_NAMES, KIND_OBJECTIVE, KIND_STATE, KIND_TREASURE, STATE_TAG_RANGE, Detections
from .detector import TableDetector
from .learned import REFINED_SIGMA_IN, REFINER_ERROR_IN
from .sides import SIDE_SURE_SCORE
from .table_views import HAND_MASK_GROWTH_IN

__all__ = ["Detections", "TableDetector", "KIND_BASE", "KIND_OBJECTIVE", "KIND_TREASURE", "KIND_STATE", "KIND_NAMES",
           "STATE_TAG_RANGE", "HAND_MASK_GROWTH_IN", "SIDE_SURE_SCORE", "REFINED_SIGMA_IN", "REFINER_ERROR_IN"]
