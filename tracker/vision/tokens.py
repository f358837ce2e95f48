"""Plain (untagged) tokens told apart by their configured colours.

A 1 in token and a 25 mm base look the same size from above; what tells them apart is
that a token is one flat colour all over (its face, embossed rings and a glint of the
same hue), while a base carries a miniature of other paints inside its rim. The game
config lists each kind's untagged colours (``untagged_token_styles``); this stage
compares a disc's face with them, as this table's light renders them
(``vision.colour.TableLight``).

In: the disc's face as Lab samples (the detector's ``_lab``: L scaled by 0.35, a and b
centred on 0), the styles. Out: the kind and style name the face is, or None.

>>> import numpy as np
>>> from tracker.config import TokenStyle
>>> styles = TokenStyles.from_config({"objective": (TokenStyle("red", (40, 40, 170)),),
...                                   "treasure": (TokenStyle("gold", (45, 165, 210)),)})
>>> red = styles.labs[0]
>>> flat = np.tile(red, (2 * INNER, 1)) + np.random.default_rng(0).normal(0, 2, (2 * INNER, 3))
>>> styles.face_kind(flat)
('objective', 'red')
>>> styles.face_kind(np.r_[flat[:INNER], np.tile([20.0, -30.0, 40.0], (INNER, 1))]) is None  # a rim round it
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import cv2
import numpy as np

from .colour import detector_lab

# A face sample this near a style's colour (in the detector's Lab: L scaled by 0.35) is
# that colour; glints and embossed rings of the same paint stay within it.
FACE_TOL = 16.0
# This share of the face must be the style's colour: a miniature inside a rim of the
# token's colour leaves much less of it (it shows its own paints).
FACE_SHARE = 0.6
# A plain token's face lies flat on the table: its middle gets the table's light, within
# these factors of the style's colour as seen (a miniature's middle, shaded by its own
# parts, reads darker; the renders' flat tokens read 0.85-1.0).
FLAT_LIGHT = (0.7, 1.3)
# Where a side's rim has the token's colour: the share of the face's middle that must be
# that colour, and the largest spread (interquartile range) of its light.
FLAT_FACE_SHARE = 0.9
FLAT_FACE_IQR = 0.08
_ANGLES = np.linspace(0, 2 * np.pi, 24, endpoint=False)
INNER = 4 * len(_ANGLES)  # face_samples: the inner rings' samples come first


@dataclass(frozen=True)
class TokenStyles:
    """Every configured untagged token colour: ``kinds[i]``, ``names[i]`` and its colour
    as seen, ``labs[i]``."""

    kinds: tuple[str, ...]
    names: tuple[str, ...]
    labs: np.ndarray

    @classmethod
    def from_config(cls, styles: Mapping[str, Any], light: Any = None) -> "TokenStyles":
        kinds, names, labs = [], [], []
        for kind, entries in styles.items():
            for st in entries:
                bgr = light.as_seen(st.bgr) if light is not None else st.bgr
                kinds.append(kind)
                names.append(st.name)
                labs.append(detector_lab(np.uint8([[bgr]]))[0, 0])
        return cls(tuple(kinds), tuple(names), np.array(labs, np.float32).reshape(-1, 3))

    def __bool__(self) -> bool:
        return bool(self.kinds)

    def face_kind(self, face: np.ndarray, rims: np.ndarray | None = None) -> tuple[str, str] | None:
        """(kind, style name) of the token whose face these samples are (``face_samples``:
        its inner rings, then its outer), or None. The nearest style to the face's median
        colour, if ``FACE_SHARE`` of the inner samples and of the outer ones lie within
        ``FACE_TOL`` of it, and the outer ones are nearer it than any of ``rims`` (the
        sides' rim colours as seen): a 25 mm base whose miniature has a token's colour
        still shows its rim round the edge."""
        if not self or len(face) == 0:
            return None
        face = np.asarray(face, np.float32).reshape(-1, 3)
        med = np.median(face[:INNER], axis=0)[None]
        i = int(np.argmin(shade_distance(med, self.labs)[0]))
        if not FLAT_LIGHT[0] <= shade_of(med[0], self.labs[i]) <= FLAT_LIGHT[1]:
            return None  # a token's face lies flat in the table's light; a miniature's parts do not
        d = shade_distance(face, self.labs[i:i + 1])[:, 0]
        inner, outer = d[:INNER], d[INNER:]
        if (inner <= FACE_TOL).mean() < FACE_SHARE or (outer <= FACE_TOL).mean() < FACE_SHARE:
            return None
        if rims is not None and len(rims):
            rims = np.asarray(rims, np.float32).reshape(-1, 3)
            if (shade_distance(face[INNER:], rims).min(axis=1) < outer).mean() > 1 - FACE_SHARE:
                # Its edge looks like a side's rim. If that rim has the token's own
                # colour, the edge cannot tell them apart and the middle must: a token's
                # face is one flat paint to its centre; a miniature, even of that colour,
                # has folds and shadows.
                unlike = shade_distance(rims, self.labs[i:i + 1])[:, 0] > FACE_TOL
                if unlike.any() and (shade_distance(face[INNER:], rims[unlike]).min(axis=1) < outer).mean() \
                        > 1 - FACE_SHARE:
                    return None
                if unlike.all() or not _flat_middle(face[:INNER], inner, self.labs[i]):
                    return None
        return self.kinds[i], self.names[i]


def _flat_middle(middle: np.ndarray, dist: np.ndarray, colour: np.ndarray) -> bool:
    """Whether a face's middle samples are one flat paint: FLAT_FACE_SHARE of them within
    FACE_TOL of ``colour`` (``dist``), their light spread (IQR) at most FLAT_FACE_IQR."""
    q1, q3 = np.percentile(shade_of(middle, colour), [25, 75])
    return bool((dist <= FACE_TOL).mean() >= FLAT_FACE_SHARE and q3 - q1 <= FLAT_FACE_IQR)


def shade_of(sample: np.ndarray, colour: np.ndarray) -> float | np.ndarray:
    """How much light ``sample`` (a colour, or (N, 3) of them) gets as ``colour``'s paint:
    1 as at set-up, 0.5 half."""
    c = np.asarray(colour, np.float32)
    s = np.asarray(sample, np.float32) @ c / max(float(np.dot(c, c)), 1e-6)
    return float(s) if np.ndim(s) == 0 else s


def shade_distance(samples: np.ndarray, colours: np.ndarray) -> np.ndarray:
    """(N, K) distances from each sample to each colour's shading line: one paint in
    more or less light (a shadow, an embossed ring, the disc's side toward the camera)
    keeps its hue and scales its lightness and chroma together, so it lies near the line
    from black to its colour (in the detector's Lab, black is the origin). Shading from
    half to 1.3 times the colour's own light is allowed."""
    p = np.asarray(samples, np.float32).reshape(-1, 1, 3)
    c = np.asarray(colours, np.float32).reshape(1, -1, 3)
    t = np.clip((p * c).sum(axis=2) / np.maximum((c * c).sum(axis=2), 1e-6), 0.5, 1.3)
    return np.linalg.norm(p - t[..., None] * c, axis=2)


def face_samples(lab: np.ndarray, centre_px: np.ndarray, radius_px: float) -> np.ndarray:
    """A disc's face in a top-down view (``lab``, the disc centred at ``centre_px`` with
    ``radius_px``): ``INNER`` samples on rings at 0.15-0.55 of the radius, then as many
    on rings at 0.8-0.86 (between a token's embossed rings; a base's rim band), 24
    angles each."""
    rho = np.array([0.15, 0.3, 0.45, 0.55, 0.8, 0.83, 0.86, 0.86], np.float32) * radius_px
    X = (centre_px[0] + rho[:, None] * np.cos(_ANGLES)[None, :]).astype(np.float32)
    Y = (centre_px[1] + rho[:, None] * np.sin(_ANGLES)[None, :]).astype(np.float32)
    return cv2.remap(lab, X, Y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE).reshape(-1, 3)


def neutral_middle(lab: np.ndarray, centre_px: np.ndarray, radius_px: float, chroma: float = 15.0) -> bool:
    """Whether a disc's middle (within ``radius_px``, 0.3 of a token's diameter as the
    detector asks) has little colour: its median chroma under ``chroma``. Printed card is
    neutral; a coloured disc, or a miniature's paint, is not.

    >>> lab = np.zeros((21, 21, 3), np.float32); lab[..., 0] = 80
    >>> neutral_middle(lab, np.array([10.0, 10.0]), 3), neutral_middle(lab + (0, 30, 0), np.array([10.0, 10.0]), 3)
    (True, False)
    """
    r = max(1, int(radius_px))
    r0, c0 = int(round(centre_px[1])), int(round(centre_px[0]))
    patch = lab[max(r0 - r, 0):r0 + r + 1, max(c0 - r, 0):c0 + r + 1]
    if not patch.size:
        return False
    return float(np.median(np.hypot(patch[..., 1], patch[..., 2]))) < chroma


def objective_face(lab: np.ndarray, centre_px: np.ndarray, radius_px: float) -> bool:
    """Whether a disc (centred at ``centre_px``, ``radius_px``, in a top-down view of the
    detector's Lab) is a plain objective seen from above: a white centre, neutral and flat
    as printed card, with a dark ring round it on nearly every ray. A miniature on a
    white-rimmed base is not concentric, and its paint neither neutral nor flat.

    >>> lab = np.zeros((41, 41, 3), np.float32); lab[..., 0] = 40
    >>> _ = cv2.circle(lab, (20, 20), 13, (10, 0, 0), -1); _ = cv2.circle(lab, (20, 20), 7, (85, 0, 0), -1)
    >>> objective_face(lab, np.array([20.0, 20.0]), 16.0)
    True
    """
    r = radius_px
    ang = np.linspace(0, 2 * np.pi, 32, endpoint=False)
    # Work on the disc's own patch, not the whole view.
    k = int(r + 3)
    r0, c0 = max(int(centre_px[1]) - k, 0), max(int(centre_px[0]) - k, 0)
    patch = lab[r0:int(centre_px[1]) + k + 1, c0:int(centre_px[0]) + k + 1]
    c = np.asarray(centre_px, float) - np.array([c0, r0])

    def band(img: np.ndarray, f0: float, f1: float) -> np.ndarray:
        rho = np.linspace(f0 * r, f1 * r, 3, dtype=np.float32)
        X = (c[0] + rho[None, :] * np.cos(ang)[:, None]).astype(np.float32)
        Y = (c[1] + rho[None, :] * np.sin(ang)[:, None]).astype(np.float32)
        return cv2.remap(img, X, Y, cv2.INTER_LINEAR).mean(axis=1)

    L = np.ascontiguousarray(patch[..., 0]) / 0.35
    chroma = np.hypot(patch[..., 1], patch[..., 2]).astype(np.float32)
    centre_l = band(L, 0.0, 0.3)
    centre = float(np.median(centre_l))
    ring = band(L, 0.5, 0.75)
    # Printed card is neutral and flat; a painted, shaded miniature is neither.
    flat_neutral = float(np.median(band(chroma, 0.0, 0.3))) < 8.0 and float(np.std(centre_l)) < 15.0
    return centre > 150 and flat_neutral and float(np.mean(ring < centre - 40)) >= 0.8


# A disc partly hidden by terrain (discs_under_terrain): at least this share of it shows
# the token's colour, at least this share lies under the terrain, at most this share is
# neither (bare table where the disc would be, inside its blurred edge of PARTIAL_EDGE_PX),
# and the colour's patches there hold at most this share of a disc in all (a patch of that
# paint larger than a token is no token; its wall, seen past its face, adds a little).
PARTIAL_SEEN, PARTIAL_HIDDEN, PARTIAL_BARE, PARTIAL_PATCH = 0.25, 0.15, 0.12, 1.0
PARTIAL_EDGE_PX = 1.5


def discs_under_terrain(face: np.ndarray, hidden: np.ndarray, radius_px: float,
                        n_max: int) -> list[tuple[float, float, float]]:
    """Discs of ``radius_px`` that terrain hides in part: places where a disc would show
    ``face`` (a mask of the token's colour where the empty table has none) wherever it is
    not ``hidden`` (a mask of the floor terrain stands in front of), by the shares
    PARTIAL_SEEN, PARTIAL_HIDDEN, PARTIAL_BARE and PARTIAL_PATCH. A token half under a
    platform's overhang shows a half disc of its colour cut by the platform's edge: the
    full search, which fits a disc's whole edge, never finds it. Out: up to ``n_max``
    (col, row, share seen), most seen first, no two within a diameter.

    >>> face, hidden = np.zeros((60, 60), bool), np.zeros((60, 60), bool)
    >>> hidden[:, 30:] = True
    >>> _ = cv2.circle(face.view(np.uint8), (30, 25), 10, 1, -1); face &= ~hidden
    >>> [(c, r, round(s, 1)) for c, r, s in discs_under_terrain(face, hidden, 10.0, 2)]
    [(30.0, 25.0, 0.5)]
    >>> discs_under_terrain(face, np.zeros_like(hidden), 10.0, 2)  # nothing hides the rest: no token
    []
    """
    # (Only round the colour's pixels: a disc showing enough of it lies within a radius of
    # them and reaches two radii; the whole floor view is four times the work or more.)
    r = int(np.ceil(radius_px))
    rows, cols = np.nonzero(face)
    if len(rows) < PARTIAL_SEEN * np.pi * radius_px ** 2:
        return []
    m = 2 * r + 2
    r0, c0 = max(int(rows.min()) - m, 0), max(int(cols.min()) - m, 0)
    win = (slice(r0, int(rows.max()) + m + 1), slice(c0, int(cols.max()) + m + 1))
    return [(c + c0, q + r0, s) for c, q, s in _discs_in(face[win], hidden[win], radius_px, n_max)]


def _discs_in(face: np.ndarray, hidden: np.ndarray, radius_px: float, n_max: int) -> list[tuple[float, float, float]]:
    """``discs_under_terrain`` in a window holding every pixel of ``face``."""
    r = int(np.ceil(radius_px))
    yy, xx = np.mgrid[-r:r + 1, -r:r + 1]
    disc = (np.hypot(xx, yy) <= radius_px).astype(np.float32)
    area = float(disc.sum())
    f, h = face.astype(np.float32), (hidden & ~face).astype(np.float32)
    seen = cv2.filter2D(f, -1, disc, borderType=cv2.BORDER_CONSTANT)
    under = cv2.filter2D(h, -1, disc, borderType=cv2.BORDER_CONSTANT)
    # Bare table is counted inside the disc's blurred edge only: there the token's colour
    # mixes with the table's, and the terrain's outline is a pixel or two off.
    # (Placed by the whole disc's fit, seen less twice the bare.)
    core = (np.hypot(xx, yy) <= radius_px - PARTIAL_EDGE_PX).astype(np.float32)
    bare_core = core.sum() - cv2.filter2D(f, -1, core, borderType=cv2.BORDER_CONSTANT) \
        - cv2.filter2D(h, -1, core, borderType=cv2.BORDER_CONSTANT)
    bare = area - seen - under
    ok = (seen >= PARTIAL_SEEN * area) & (under >= PARTIAL_HIDDEN * area) & (bare_core <= PARTIAL_BARE * area)
    if not ok.any():
        return []
    n, labels = cv2.connectedComponents(face.astype(np.uint8), connectivity=8)
    patch_area = np.bincount(labels.ravel(), minlength=n)
    where = np.flatnonzero(ok)
    out: list[tuple[float, float, float]] = []
    for k in where[np.argsort(-(seen - 2 * bare).ravel()[where], kind="stable")]:
        row, col = divmod(int(k), ok.shape[1])
        if len(out) >= n_max:
            break
        if any(np.hypot(col - c, row - q) < 2 * radius_px for c, q, _ in out):
            continue
        win = (slice(max(row - r, 0), row + r + 1), slice(max(col - r, 0), col + r + 1))
        d = disc[win[0].start - row + r:win[0].stop - row + r, win[1].start - col + r:win[1].stop - col + r]
        ids = np.unique(labels[win][(d > 0) & face[win]])
        if patch_area[ids[ids > 0]].sum() > PARTIAL_PATCH * area:
            continue
        out.append((float(col), float(row), float(seen[row, col] / area)))
    return out
