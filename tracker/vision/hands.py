"""Hands and arms over the table: skin-coloured, far larger than a base, and reaching in
from beyond the table.

A player's hand is skin-coloured, and so is much of what stands on a table: flesh
painted on miniatures, yellow and tan rims blurred with them. Size alone does not tell
them apart: a packed unit of eight Epic stands covers ten square inches, as much as
the part of a hand a camera sees. What does is where a hand comes from: an arm, sleeved
or bare, runs from the hand to the player beyond the table's edge. A hand's skin is
therefore part of one connected patch of change from the empty table that reaches the
edge of the view (or where the camera stops seeing the table); a unit of stands, however
skin-coloured, is an island of change inside it. (On 40 tuning tables every one of 39
hands seen was so linked, and the one skin-coloured unit taken for a hand was an island.)

In: a coarse rectified view of the frame (BGR), the empty table in the same view (Lab
as ``colour.detector_lab`` gives it; None when there is no picture of it), where the
view sees the table, and the view's pixels an inch. Out: the skin of hands (bool mask of
the view).
"""

from __future__ import annotations

import cv2
import numpy as np

from .colour import detector_lab

# Skin in YCrCb (Y, Cr, Cb): the band that holds painted, lit and shaded skin tones.
SKIN_LO, SKIN_HI = (40, 138, 77), (255, 178, 127)
# A pixel changed from the empty table when |dL| + |da| + |db| (detector Lab) is over this.
CHANGE_SUM = 12
# ... unless it is the hand's shadow: darker than the empty table (its channels' sum under
# SHADOW_DARKER of the table's) with the table's chromaticity (|db| + |dg| + |dr| of
# channel / sum under SHADOW_CHROMA). A tan or sand mat is skin-coloured, and the shadow a
# hand casts on it changed it; taken for skin, it hid the bases beside the hand. On 40
# tuning tables' hand frames: 87 % of the skin found off the hand was such shadow, 0.2 %
# of the hand's own skin was (the hand is brighter than the table or of another hue).
SHADOW_DARKER = 0.9
SHADOW_CHROMA = 0.025
# A hand shows more skin than this (square inches). On 65 tuning tables (520 frames),
# with the link to the edge: 61 of 65 hands found and nothing else; 4 found one hand
# more, but took smaller patches of skin on the bundled Warcry clip for hands, and
# the gated pipeline then lost a fighter the ungated one kept (tests/test_motion.py).
# The opening that clears specks of skin colour is SPECK_IN wide.
HAND_MIN_IN2 = 6.0
SPECK_IN = 0.15


def hand_skin(bgr: np.ndarray, empty_lab: np.ndarray | None, valid: np.ndarray, px_per_in: float,
              empty_bgr: np.ndarray | None = None) -> np.ndarray:
    """The skin of the hands over the table: skin-coloured patches changed from the empty
    table, over ``HAND_MIN_IN2``, whose patch of change reaches the view's edge or where
    the view stops seeing the table (an arm comes from beyond it). Without ``empty_lab``
    any skin patch large enough is a hand. With ``empty_bgr`` (the empty table in BGR),
    the hand's shadow on the table is no change for skin (``shadow_of``), though it still
    links the hand to the edge.

    >>> empty = np.full((60, 100, 3), (60, 120, 90), np.uint8)   # a green mat (BGR)
    >>> frame = empty.copy()
    >>> skin, sleeve = (150, 175, 225), (140, 90, 50)
    >>> _ = cv2.rectangle(frame, (30, 20), (55, 40), skin, -1)      # a hand ...
    >>> _ = cv2.rectangle(frame, (0, 25), (30, 35), sleeve, -1)     # ... its sleeve to the edge
    >>> _ = cv2.rectangle(frame, (70, 15), (90, 40), skin, -1)      # a skin-painted unit
    >>> valid = np.ones((60, 100), bool)
    >>> found = hand_skin(frame, detector_lab(empty), valid, 4.0)
    >>> bool(found[30, 40]), bool(found[30, 80])
    (True, False)
    """
    H, W = bgr.shape[:2]
    skin = cv2.inRange(cv2.cvtColor(bgr, cv2.COLOR_BGR2YCrCb), SKIN_LO, SKIN_HI)
    none = np.zeros((H, W), bool)
    if not cv2.countNonZero(skin):
        return none
    change = None
    if empty_lab is not None:
        change = cv2.compare(cv2.transform(cv2.absdiff(detector_lab(bgr), empty_lab), np.ones((1, 3))),
                             CHANGE_SUM, cv2.CMP_GT)
        skin &= change
        if empty_bgr is not None:  # (judged only where skin changed: the per-frame cost is on few pixels)
            at = np.flatnonzero(skin)
            flat = skin.reshape(-1)
            flat[at[shadow_of(bgr.reshape(-1, 3)[at], empty_bgr.reshape(-1, 3)[at]) > 0]] = 0
    k = max(3, int(px_per_in * SPECK_IN) | 1)
    skin = cv2.morphologyEx(skin, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k)))
    least = HAND_MIN_IN2 * px_per_in ** 2
    if cv2.countNonZero(skin) <= least:
        return none  # (too little skin colour in all for one hand)
    # 16-bit labels where they suffice (each blob left by the opening holds the
    # structuring element): the same labels, cheaper to write.
    ltype = cv2.CV_16U if skin.size < 5 * 65000 else cv2.CV_32S
    n, labels, stats, _ = cv2.connectedComponentsWithStats(skin, connectivity=8, ltype=ltype)
    big = np.zeros(n, bool)
    big[1:] = stats[1:, cv2.CC_STAT_AREA] > least
    if change is not None and big.any():
        big &= _reaching_in(labels, n, change, valid)
    return big[labels] if big.any() else none


def shadow_of(bgr: np.ndarray, empty_bgr: np.ndarray) -> np.ndarray:
    """Where ``bgr`` is the empty table darkened (8-bit mask, 255): its channels' sum
    under ``SHADOW_DARKER`` of the table's, its chromaticity within ``SHADOW_CHROMA``.
    Any shape whose last axis holds the three channels (a view, or a list of pixels).

    >>> table = np.full((2, 2, 3), (90, 150, 200), np.uint8)       # a sand mat (BGR)
    >>> frame = table.copy()
    >>> frame[0, 0] = (63, 105, 140)                               # the mat in shadow
    >>> frame[0, 1] = (60, 90, 150)                                # darker, redder: not shadow
    >>> shadow_of(frame, table)[0].tolist()
    [255, 0]
    """
    f = bgr.astype(np.float32) + 4.0  # (the offset keeps near-black pixels from exploding)
    e = empty_bgr.astype(np.float32) + 4.0
    fs, es = f.sum(axis=-1), e.sum(axis=-1)
    chroma = np.abs(f / fs[..., None] - e / es[..., None]).sum(axis=-1)
    return (((fs < SHADOW_DARKER * es) & (chroma < SHADOW_CHROMA)) * 255).astype(np.uint8)


def _reaching_in(labels: np.ndarray, n: int, change: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Per skin label: whether its patch of change (a pixel's gaps bridged) reaches the
    view's edge or its blind part."""
    linked = cv2.dilate(change, np.ones((3, 3), np.uint8))
    _, patches = cv2.connectedComponents(linked, connectivity=8)
    rim = np.zeros(valid.shape, bool)
    rim[[0, -1], :] = rim[:, [0, -1]] = True
    rim |= cv2.dilate((~valid).astype(np.uint8), np.ones((3, 3), np.uint8)) > 0
    outside = np.zeros(patches.max() + 1, bool)
    outside[patches[rim]] = True
    outside[0] = False
    reach = np.zeros(n, bool)
    skin_patch = patches[labels > 0]
    np.logical_or.at(reach, labels[labels > 0], outside[skin_patch])
    return reach
