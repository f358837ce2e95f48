"""Objective, treasure and state tokens: finding their discs.

In: a frame, its floor view, where rims can be seen, the bases found.
Out: token rows (kind, tag id, place) from token-sized discs of change (``_disc_evidence``,
``_discs``): tagged tokens read up close (``vision.tag_reader``), plain ones by their face's
kind and colour (``vision.tokens``), every configured untagged colour looked for
(``_untagged_discs``); ``bare``: the share of a place that differs from the empty table.
"""

from __future__ import annotations

import math
from typing import Any

import cv2
import numpy as np

from ..vision.bare import BARE_SHARE, change_evidence, changed_share
from ..vision.filters import (
    _correlate_many,
    _local_maxima,
    _subpixel_peaks,
    ring_kernel,
)
from ..vision.foreground import PATTERN_WINDOW_PX, shadow
from ..vision.rim_fit import _fit_rims_at
from ..vision.tag_reader import TOKEN_THICKNESS_IN
from ..vision.tokens import (
    FACE_TOL,
    discs_under_terrain,
    face_samples,
    neutral_middle,
    shade_distance,
)
from ..world import MM_PER_IN
from .detections import KIND_OBJECTIVE, KIND_STATE, KIND_TREASURE, Detections

# Plain tokens' colours (eval sets: treasure is gold, objectives white with a black ring).
TOKEN_COLOURS_BGR = {"treasure": (40, 175, 215), "objective": (235, 235, 235)}


# A plain disc of a token's colour beyond the game's count of them is dropped only when
# its score is under this share of the last one kept (scores of token faces: 0.7-1.0).
TOKEN_CAP_MARGIN = 0.9
# A plain token placed from the part of it terrain leaves in sight (_tokens_by_terrain):
# its centre is known along the part seen, less well toward the part hidden.
PARTIAL_TOKEN_SIGMA_IN = 0.1
# ... and its disc may lie on a base found by at most this share (the bases' own error).
PARTIAL_ON_BASE = 0.15


def _share_in(mask: np.ndarray, col: float, row: float, radius_px: float) -> float:
    """The share of the disc at (``col``, ``row``) of ``radius_px`` that ``mask`` covers.

    >>> m = np.zeros((20, 20), bool); m[:, 15:] = True
    >>> round(_share_in(m, 10.0, 10.0, 5.0), 2), round(_share_in(m, 16.0, 10.0, 3.0), 2)
    (0.01, 0.79)
    """
    r = int(np.ceil(radius_px))
    yy, xx = np.mgrid[-r:r + 1, -r:r + 1]
    rows, cols = np.round(row + yy).astype(int), np.round(col + xx).astype(int)
    inside = (np.hypot(xx, yy) <= radius_px) & (rows >= 0) & (cols >= 0) & (rows < mask.shape[0]) & (cols < mask.shape[1])
    return float(mask[rows[inside], cols[inside]].mean()) if inside.any() else 0.0


def _on_bases(rows: np.ndarray, cols: np.ndarray, not_here: np.ndarray | None) -> np.ndarray:
    """Which peaks of a half-resolution response map (``rows``, ``cols``) lie on a base
    found by its rim (``not_here``, at full resolution). Such discs are looked at after
    every disc off the bases, never instead of them: a stand's miniature is a patch of
    change of a token's size (on an Epic tuning table 12 of the token search's 14 discs
    were stands, and three of its five objectives were never looked at), while a paper
    disc can itself be read as a base's rim (_settle_discs decides). The map is left as
    it was: zeroed there, it would read as unchanged table round a patch beside a stand."""
    if not_here is None or not len(rows):
        return np.zeros(len(rows), bool)
    return not_here[np.clip(2 * rows, 0, not_here.shape[0] - 1), np.clip(2 * cols, 0, not_here.shape[1] - 1)]


def _on_mask(view: Any, xy: np.ndarray, mask: np.ndarray | None) -> bool:
    """Whether world ``xy`` falls on ``mask`` (a mask of ``view``'s pixels, or None)."""
    if mask is None:
        return False
    c, r = np.rint(view.to_pixel(xy)[0]).astype(int)
    return bool(0 <= r < mask.shape[0] and 0 <= c < mask.shape[1] and mask[r, c])


class Tokens:
    """Finds token discs and reads them (a mixin of ``TableDetector``)."""

    def _tokens(self, frame: np.ndarray, floor_bgr: np.ndarray, lab: np.ndarray, usable: np.ndarray,
                markers: Any, not_here: np.ndarray | None = None, hidden: np.ndarray | None = None) -> Detections:
        """Tokens are 1 in discs lying on the floor or a platform. Each disc found is
        looked at again up close: a top-down crop at 4x the table resolution, where a
        0.66 in tag (too small for a whole-frame search) decodes reliably. Discs on ``not_here``
        are looked at last; a plain one on ``hidden`` (what a lifted fighter hides) is none."""
        rows = []
        taken: list[np.ndarray] = []
        self._disc_sizes = []

        def add(xy, z, kind, tag, score):
            taken.append(np.asarray(xy, float))
            rows.append({"xyz": (float(xy[0]), float(xy[1]), z), "kind": kind, "tag_id": tag, "score": score})

        if markers is not None:  # tags big enough to be found in the whole frame
            for tag_id, corners in zip(markers.ids, markers.corners):
                kind = self._token_kind(int(tag_id))
                if kind is None or (kind == KIND_STATE and not self._state_known(int(tag_id))):
                    continue
                xy = np.asarray(self.camera.unproject(corners, TOKEN_THICKNESS_IN), float).mean(axis=0)
                z = self._surface_height(xy)
                if z > 0:
                    xy = np.asarray(self.camera.unproject(corners, z + TOKEN_THICKNESS_IN), float).mean(axis=0)
                add(xy, z, kind, int(tag_id), 1.0)
        diam = max(spec.diameter_in for spec in self.config.tokens.values())
        n_tokens = sum(len(spec.tag_ids) + spec.untagged for spec in self.config.tokens.values())
        # State tokens (ids 80-99) are discs too: with recognition on, room for them; with
        # it off they are still read, so that a printed tag is never taken for a plain token.
        st = self.config.state_tokens
        n_state = self.max_state_tokens if st is not None else 4
        discs = [(xy, sc, which, diam) for xy, sc, which in self._discs(lab, usable, diam, max(4, 2 * n_tokens) + n_state,
                                                                             not_here)]
        if st is not None and abs(st.diameter_in - diam) > 0.1:  # state tokens of their own size
            discs += [(xy, sc, "state", st.diameter_in)
                      for xy, sc in self._untagged_discs(lab, usable, "objective", st.diameter_in, n_state, not_here)]
        state_seen: list[tuple[int, np.ndarray]] = []
        paper: list[tuple[np.ndarray, bool]] = []
        no_tag: list[tuple] = []
        # Discs nothing claimed (_name_discs): (xy, score, diameter, the decoder's nearest
        # code where it was a state token's, else None).
        maybe: list[tuple[np.ndarray, float, float, int | None]] = []
        for xy, score, which, d in discs:
            if any(np.hypot(*(xy - t)) < d for t in taken):
                continue
            n_rows = len(rows)
            tag = self._cached_tag(xy)
            tag_face = False  # a printed tag not read this look (half in a shadow)
            face = 0.0  # how much the disc looks like a printed tag (TagRead.face)
            unread = False  # an objective's or treasure's tag, seen but not read
            if tag is None:
                got = self.tags.recall_or_read(frame, xy, d, self.tag_face_floor, self._full_count, no_tag)
                tag, face = got.tag, got.face
                if got.centre is not None:  # (read where the disc's edge says it lies)
                    xy = got.centre
                tag_face = got.tag_face(self.tag_face_floor, self.tag_face_cost)
                if tag_face and self._token_kind(got.best) != KIND_STATE:
                    # An objective or treasure tag the cut-out missed: taken as a token of
                    # its disc's colour, its tag unknown (-1), never a base.
                    paper.append((np.asarray(xy, float), True))
                    tag_face, unread = False, True
                if tag is not None and self._token_kind(tag) != KIND_STATE:
                    self._tag_pos[tag] = xy
            if tag is None and not (tag_face or unread) and _on_mask(self.floor, xy, hidden):
                continue  # a fighter on a platform hides the floor there: its miniature, no token
            if tag is not None and self._token_kind(tag) == KIND_STATE:
                # Never an objective or treasure: "they do not interact with the battle".
                state_seen.append((tag, xy))
                if self._state_known(tag):
                    add(xy, 0.0, KIND_STATE, tag, score)
                else:
                    taken.append(np.asarray(xy, float))
                    paper.append((np.asarray(xy, float), True))
                continue
            if tag_face:
                # No token to report yet, but paper all the same, never a base (nor a
                # plain objective); read again at the next look.
                taken.append(np.asarray(xy, float))
                paper.append((np.asarray(xy, float), False))
                if self.name_state_faces and self._token_kind(got.best) == KIND_STATE \
                        and self._neutral_disc(lab, xy, d, self.name_disc_chroma, self.name_mat_share):
                    # Its nearest code a state token's, from a blur of a few cells (an
                    # Epic objective's tag at 720p is 8 px; 4 of 5 such misses on 8 Epic
                    # tuning tables): no evidence of a state token where the table uses
                    # none, so named among the game's ids as any tag face; where it uses
                    # them, only against that code.
                    decoy = int(got.best) if self.config.state_tokens is not None else None
                    maybe.append((np.asarray(xy, float), score, d, decoy))
            elif which == "state":
                pass  # a disc of the state tokens' size with no state tag: no token
            elif tag is not None:
                add(xy, 0.0, self._token_kind(tag) or KIND_OBJECTIVE, tag, score)
            elif which == "tag":
                pass  # a patch of change with no tag read: no token
            elif unread and which in ("objective", "treasure") and getattr(self.config.tokens.get(which), "tag_ids", ()):
                # Blur or a shadow over its tag: still the game's token, of its colour's
                # kind (a soft focus had lost 8 of the eval sets' 11 tagged objectives).
                add(xy, 0.0, KIND_OBJECTIVE if which == "objective" else KIND_TREASURE, -1, score)
            elif (styled := self._styled_token(lab, xy, d)) is not None:
                # A flat disc of one of the colours the config gives this table's plain
                # tokens (untagged_token_styles), whichever pass found it.
                add(xy, 0.0, styled, -1, score)
            elif which in self._token_styles_by_kind:
                pass  # a kind whose plain tokens' colours are configured: this face is none of them
            elif which == "treasure" and self.config.tokens["treasure"].untagged > 0:
                add(xy, 0.0, KIND_TREASURE, -1, score)
            elif which == "objective" and self.config.tokens["objective"].untagged > 0 and self._neutral_disc(lab, xy):
                # A plain objective is printed card, white and black: a red damage token or
                # any coloured disc of its size is not one ("other tokens" never count).
                add(xy, 0.0, KIND_OBJECTIVE, -1, score)
            if len(rows) == n_rows and tag is None and not tag_face and which != "state" \
                    and face >= self.name_face_min and self._neutral_disc(lab, xy, d, self.name_disc_chroma,
                                                                          self.name_mat_share):
                maybe.append((np.asarray(xy, float), score, d, None))
        self._name_discs(frame, rows, maybe)
        # Keep cached reads of tokens still lying where they were read; votes of places
        # looked at in the last two looks.
        self._state_tag_pos = state_seen
        self._paper_discs = paper
        self.tags.no_tag_seen = no_tag
        self.tags.forget_votes(since=self._full_count - 2 * max(1, self.tokens_every))
        self._disc_ev = None  # (the look's maps: not kept past it)
        dets = Detections.from_rows(rows)
        self._add_sigma(dets)
        return dets

    def bare(self, frame: np.ndarray, xyz: np.ndarray, radius_in: np.ndarray) -> np.ndarray:
        """Which places (centre ``xyz`` on the surface there, ``radius_in``) look as the
        empty table does in ``frame`` (vision.bare): nothing stands there. All False
        without an empty-table picture."""
        xyz = np.asarray(xyz, float).reshape(-1, 3)
        if self._background_bgr is None or self._background_bgr.shape != frame.shape:
            return np.zeros(len(xyz), bool)
        out = changed_share(self.relight(frame), self._background_bgr, self.camera, xyz, radius_in) < BARE_SHARE
        # A place on the floor that terrain hides from the camera looks as the empty table
        # does whether or not a fighter stands there: never judged bare.
        r = np.broadcast_to(np.asarray(radius_in, float), (len(xyz),))
        for i in np.flatnonzero(out & (xyz[:, 2] <= 0.0)):
            c, rr = np.round(self.floor.to_pixel(xyz[i:i + 1, :2])[0]).astype(int), int(np.ceil(r[i] * self.px_per_in))
            win = self._terrain_mask_floor[max(c[1] - rr, 0):c[1] + rr + 1, max(c[0] - rr, 0):c[0] + rr + 1]
            out[i] = not win.any()
        return out

    def _in_shadow(self, lab: np.ndarray, centre_px: np.ndarray, diameter_in: float) -> bool:
        """Whether the middle of a disc at ``centre_px`` (floor view) is mostly the empty
        table in shadow (``vision.foreground.shadow``: darker, the mat's own a and b, and
        its print's pattern kept): a miniature's shadow on a dark green mat is a dark disc
        of a token's size, the face of a black token; a token's paint is flat and not the
        mat's (a white token on a pale grey mat keeps its hue, not its print)."""
        if self._bg_floor is None or self.styled_shadow_share > 1.0:
            return False
        R = max(1, int(0.4 * diameter_in * self.px_per_in))
        r0, c0 = int(round(centre_px[1])), int(round(centre_px[0]))
        win = (slice(max(r0 - R, 0), r0 + R + 1), slice(max(c0 - R, 0), c0 + R + 1))
        if not lab[win].size:
            return False
        return float(shadow(lab[win], self._bg_floor[win], pattern=True).mean()) >= self.styled_shadow_share

    def _tokens_by_terrain(self, lab: np.ndarray, bases: Detections, tokens: Detections,
                           usable: np.ndarray) -> Detections:
        """Plain tokens of a configured colour (``untagged_token_styles``) that terrain
        hides in part (``vision.tokens.discs_under_terrain``), while the game has more plain
        tokens of that kind than were found: on the floor beside a piece, where the frame
        shows the colour and the empty table does not, off every base found (``bases``)
        and token (``tokens``). Their sigma at least PARTIAL_TOKEN_SIGMA_IN with the
        calibration's. (``usable``: the floor view's pixels that may be looked at.)"""
        styles = self._token_styles
        hidden = self._terrain_mask_floor
        if not styles or not self.tokens_by_terrain or self._bg_floor is None or not hidden.any():
            return Detections()
        S = self.px_per_in
        codes = {"objective": KIND_OBJECTIVE, "treasure": KIND_TREASURE}
        plain = tokens.tag_id < 0
        lacking = {kind: spec.untagged - int((plain & (tokens.kind == codes[kind])).sum())
                   for kind, spec in self.config.tokens.items() if kind in codes}
        if max(lacking.values(), default=0) <= 0:
            return Detections()
        reach = int(np.ceil(max(spec.diameter_in for spec in self.config.tokens.values()) * S))
        near = cv2.dilate(hidden.astype(np.uint8), cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * reach + 1,) * 2)) > 0
        covered = self._footprints(bases)
        near &= usable & ~hidden & ~covered
        idx = np.flatnonzero(near)
        here, empty = lab.reshape(-1, 3)[idx], self._bg_floor.reshape(-1, 3)[idx]
        placed = [np.asarray(xy, float) for xy in tokens.xyz[:, :2]]
        in_shadow = shadow(lab, self._bg_floor, pattern=True).flat[idx]  # (the mat darkened, its print kept: no paint)
        rows = []
        for k, kind in enumerate(styles.kinds):
            spec = self.config.tokens.get(kind)
            if spec is None or lacking.get(kind, 0) <= 0:
                continue
            face = np.zeros(near.shape, bool)
            face.flat[idx[(shade_distance(here, styles.labs[k:k + 1])[:, 0] <= FACE_TOL)
                          & (shade_distance(empty, styles.labs[k:k + 1])[:, 0] > FACE_TOL) & ~in_shadow]] = True
            # (One more than lacking: one may lie on a base or a token, and is passed over.)
            for col, row, seen in discs_under_terrain(face, hidden, spec.diameter_in / 2 * S, lacking[kind] + 1):
                xy = self.floor.to_world(np.array([col]), np.array([row]))[0]
                # (Nor over a base found: a token does not lie under one, and a miniature half
                # under a piece, its paint the token's, stands beside its base's rim.)
                if _share_in(covered, col, row, spec.diameter_in / 2 * S) > PARTIAL_ON_BASE \
                        or any(np.hypot(*(xy - p)) < spec.diameter_in for p in placed) or lacking[kind] <= 0:
                    continue
                placed.append(xy)
                lacking[kind] -= 1
                rows.append({"xyz": (float(xy[0]), float(xy[1]), 0.0), "kind": codes[kind], "tag_id": -1,
                             "score": seen})
        found = Detections.from_rows(rows)
        self._add_sigma(found)
        if len(found) and len(found.sigma_in):
            found.sigma_in = np.hypot(found.sigma_in, PARTIAL_TOKEN_SIGMA_IN)
        return found

    @property
    def _token_styles_by_kind(self) -> set[str]:
        """The token kinds whose plain tokens' colours the config lists (and that have some)."""
        return {k for k, spec in self.config.tokens.items() if spec.untagged > 0 and spec.untagged_styles}

    def _styled_token(self, lab: np.ndarray, xy: np.ndarray, diameter_in: float = 1.0) -> int | None:
        """KIND_OBJECTIVE / KIND_TREASURE if the floor disc at ``xy`` has the flat face of
        one of the configured plain-token colours of a kind the table has plain tokens
        of (vision.tokens), else None."""
        styles = self._token_styles
        if not styles:
            return None
        c = self.floor.to_pixel(np.asarray(xy, float)[None])[0]
        rims = np.array([self._rim_seen[s] for s, _, sizes in self._side_lab()
                         if self.token_rim_size_mm is None
                         or any(abs(mm - diameter_in * MM_PER_IN) <= self.token_rim_size_mm for mm in sizes)],
                        np.float32).reshape(-1, 3)
        got = styles.face_kind(face_samples(lab, c, diameter_in / 2 * self.px_per_in), rims)
        if got is None or self.config.tokens[got[0]].untagged <= 0:
            return None
        if self._in_shadow(lab, c, diameter_in):
            return None
        return KIND_OBJECTIVE if got[0] == "objective" else KIND_TREASURE

    def _neutral_disc(self, lab: np.ndarray, xy: np.ndarray, diameter_in: float = 1.0, chroma: float = 15.0,
                      mat_share: float = 0.0) -> bool:
        """``vision.tokens.neutral_middle`` of the disc at ``xy`` (inches) in the floor view;
        with ``mat_share``, under that share of the empty mat's own chroma round it will do
        too (card on a strongly coloured mat takes a cast of it)."""
        c = self.floor.to_pixel(np.asarray(xy, float)[None])[0]
        if mat_share > 0 and self._bg_floor is not None:
            R = int(diameter_in * self.px_per_in)
            r0, c0 = int(round(c[1])), int(round(c[0]))
            bg = self._bg_floor[max(r0 - R, 0):r0 + R + 1, max(c0 - R, 0):c0 + R + 1]
            if bg.size:
                chroma = max(chroma, mat_share * float(np.median(np.hypot(bg[..., 1], bg[..., 2]))))
        return neutral_middle(lab, c, 0.3 * diameter_in * self.px_per_in, chroma)

    @property
    def tag_face_floor(self) -> float:
        """tag_face_min as this picture shows it: a tag's border is one cell wide (a sixth
        of a tag two thirds of the disc), and blur of sigma ``blur_in`` leaves it
        erf(cell / (2 sqrt 2 sigma)) of its contrast (a miniature's score falls alike). At
        the eval sets' 0.02 in this is tag_face_min; at 720p over an Epic table (0.07 in)
        a little over half of it."""
        if not self.blur_in or self.blur_in <= 0:
            return self.tag_face_min
        diam = max((spec.diameter_in for spec in self.config.tokens.values()), default=1.0)
        cell = 0.66 * diam / 6
        return self.tag_face_min * math.erf(cell / (2 * math.sqrt(2) * self.blur_in))

    def _state_known(self, tag_id: int) -> bool:
        """A state-token tag this table gives a meaning to (recognition on)."""
        st = self.config.state_tokens
        return st is not None and st.meaning(tag_id) is not None

    def _discs(self, lab: np.ndarray, usable: np.ndarray, diameter_in: float, n_max: int,
               not_here: np.ndarray | None = None):
        """Token-sized discs: bright neutral (white tokens, printed tags) or gold. Yields
        (xy, score, 'objective' | 'treasure')."""
        out = []
        # Gold first: its evidence is specific, while the objective pass takes any change.
        for which in ("treasure", "objective"):
            out += [(xy, sc, which) for xy, sc in self._untagged_discs(lab, usable, which, diameter_in, n_max, not_here)]
        n_tags = sum(len(spec.tag_ids) for spec in self.config.tokens.values())
        if n_tags:
            # A printed tag on paper as pale as the mat changes the picture only where its
            # black is: no ring for the passes above. Its body is a compact patch of
            # change the size of the tag, with unchanged table round it; such patches
            # are read for a tag (and are tokens only if one is read). A few more than
            # the tags: miniatures on pale bases are such patches too, and with one or two
            # tags in the game they took every place (a tag plain to see at 4K unread).
            taken = [xy for xy, _, _ in out]
            out += [(xy, sc, "tag") for xy, sc in self._tag_bodies(lab, usable, diameter_in, 2 * n_tags + 6, not_here)
                    if all(np.hypot(*(xy - t)) > 0.5 * diameter_in for t in taken)]
        return out

    def _tag_bodies(self, lab: np.ndarray, usable: np.ndarray, diameter_in: float, n_max: int,
                    not_here: np.ndarray | None = None):
        """Compact patches of change the size of a token's printed tag (about two thirds
        of its disc), with little change in a ring round them: (xy, score), best first."""
        ev = self._disc_evidence(lab, usable, "objective")
        half = cv2.resize(ev, (ev.shape[1] // 2, ev.shape[0] // 2), interpolation=cv2.INTER_AREA)
        S = self.px_per_in / 2
        r_body, r_out = 0.33 * diameter_in * S, 0.75 * diameter_in * S
        k = int(np.ceil(r_out)) + 1
        yy, xx = np.mgrid[-k:k + 1, -k:k + 1]
        rr = np.hypot(xx, yy)
        body, ring = rr <= r_body, (rr >= 0.6 * diameter_in * S) & (rr <= r_out)
        kern = body / max(body.sum(), 1) - ring / max(ring.sum(), 1)
        resp = cv2.filter2D(half, cv2.CV_32F, kern.astype(np.float32), borderType=cv2.BORDER_CONSTANT)
        rows, cols = _local_maxima(resp, 0.15, max(2, int(r_out)))
        best = np.lexsort((-resp[rows, cols], _on_bases(rows, cols, not_here)))[:n_max]
        xy = self.floor.to_world(2 * cols[best] + 0.5, 2 * rows[best] + 0.5)
        return [(p, float(resp[r, c])) for p, r, c in zip(xy, rows[best], cols[best])]

    def _untagged_discs(self, lab: np.ndarray, usable: np.ndarray, kind: str, diameter_in: float, n_max: int,
                        not_here: np.ndarray | None = None):
        """Plain tokens: a treasure is a gold disc, an objective a white disc with a black
        ring. A disc of exactly the token's size, with table all round it, is a token; a
        miniature of the same colour is neither round nor of that size."""
        ev = self._disc_evidence(lab, usable, kind)
        S = self.px_per_in
        r = diameter_in / 2 * S
        # Candidates at half resolution, the fit at full.
        half = cv2.resize(ev, (ev.shape[1] // 2, ev.shape[0] // 2), interpolation=cv2.INTER_AREA)
        k = ring_kernel(r * 0.39, r * 0.225, outer_gap_px=0.75, outer_width_px=1.0, outer_weight=0.8)
        resp = _correlate_many(half, [k], self._ring_spectra)[0]
        rows, cols = _local_maxima(resp, 0.25, max(2, int(r / 2)))
        # The strongest 4 n_max, fitted together (those off the bases first).
        on_base = _on_bases(rows, cols, not_here)
        best = np.lexsort((-resp[rows, cols], on_base))[: 4 * n_max]
        prs, pcs = _subpixel_peaks(resp, rows[best], cols[best])
        fits = _fit_rims_at(ev, 2 * pcs + 0.5, 2 * prs + 0.5, 0.4 * r, r + 0.35 * S, n_rays=64)
        if kind == "objective":
            fits = self._fits_out_of_shadow(ev, lab, fits, 2 * pcs + 0.5, 2 * prs + 0.5, r, S)
        found = []
        for i, fit in enumerate(fits):
            if fit is None:
                continue
            cx, cy, rad, cover, _, _ = fit
            # A shaded disc (a coin) fades toward its edge: its evidence edge falls inside,
            # by up to a third of the radius (a gold coin by a terrain piece's shadow at
            # 720p: 8.3 px of 10.5), never far outside.
            off = rad - r - self.edge_bias_px
            if off > max(2.5, 0.25 * r) or off < -max(2.5, 0.33 * r) or cover < 0.5:
                continue
            xy = self.floor.to_world(np.array([cx]), np.array([cy]))[0]
            found.append((xy, cover, bool(on_base[best[i]])))
            self._disc_sizes.append((xy, kind, float((rad - self.edge_bias_px) / S)))
        found.sort(key=lambda f: (f[2], -f[1]))
        kept: list[tuple[np.ndarray, float]] = []
        for xy, score, _ in found:
            if all(np.hypot(*(xy - k2)) > diameter_in for k2, _ in kept):
                kept.append((xy, score))
        return kept[:n_max]

    def _fits_out_of_shadow(self, ev: np.ndarray, lab: np.ndarray, fits: list, cx: np.ndarray, cy: np.ndarray,
                            r: float, S: float) -> list:
        """Disc fits that found no edge, tried again on the evidence of their window with the
        table's own shadow taken out (``vision.foreground.shadow``, scaled and keeping the
        mat's pattern). A shadow (a hand's, an arm's) changes the table as much as a
        disc does: a white disc lying in one has change all round it and no edge (an
        objective plain to see at 1080p, in an arm's shadow, never looked at)."""
        if self._bg_floor is None:
            return fits
        H, W = ev.shape
        R = int(np.ceil(r + 0.35 * S)) + PATTERN_WINDOW_PX + 2
        out = list(fits)
        for i in (i for i, f in enumerate(fits) if f is None):
            x0, y0 = max(int(cx[i]) - R, 0), max(int(cy[i]) - R, 0)
            x1, y1 = min(int(cx[i]) + R + 1, W), min(int(cy[i]) + R + 1, H)
            if x1 - x0 < 2 * PATTERN_WINDOW_PX or y1 - y0 < 2 * PATTERN_WINDOW_PX:
                continue
            win = (slice(y0, y1), slice(x0, x1))
            yy, xx = np.ogrid[y0 - cy[i]:y1 - cy[i], x0 - cx[i]:x1 - cx[i]]
            rr = np.hypot(xx, yy)
            if np.median(ev[win][(rr > r + 0.1 * S) & (rr < r + 0.35 * S)]) < 0.3:
                continue  # the table round it is as it was: no shadow to take out
            dim = shadow(lab[win], self._bg_floor[win], scaled=True, pattern=True).astype(np.uint8)
            # (single pixels of noise inside a shadow are shadow too: a median of 5)
            dim = cv2.medianBlur(dim, 5) > 0
            if dim.mean() < 0.1:
                continue  # no shadow here: the first fit stands
            lit = np.where(dim, 0.0, ev[win]).astype(np.float32)
            out[i] = _fit_rims_at(lit, cx[i:i + 1] - x0, cy[i:i + 1] - y0, 0.4 * r, r + 0.35 * S, n_rays=64)[0]
            if out[i] is not None:
                out[i] = (out[i][0] + x0, out[i][1] + y0, *out[i][2:])
        return out

    def _disc_evidence(self, lab: np.ndarray, usable: np.ndarray, kind: str) -> np.ndarray:
        """_untagged_discs' evidence (read-only): a treasure's gold, or for an objective
        any change from the empty table; 0 where not ``usable``. Both start from the
        frame's difference from the empty table, plane by plane: worked out once per
        look (``lab``, ``usable``) for both kinds, and each kind's map once (the state
        tokens' own size reuses the objectives')."""
        if self._disc_ev is None or self._disc_ev[0] is not lab or self._disc_ev[1] is not usable:
            self._disc_ev = (lab, usable, {})
        maps = self._disc_ev[2]
        if kind in maps:
            return maps[kind]
        if "diff" not in maps:
            maps["diff"] = [p - bg for p, bg in zip(cv2.split(lab), self._gold.bg)]  # (the empty table, per plane)
        d = maps["diff"]
        if "sq" not in maps:  # (the gold's mix starts from the same sum of squares)
            pp = d[0] * d[0]
            pp += d[1] * d[1]
            pp += d[2] * d[2]
            maps["sq"] = pp
        if kind == "objective":
            # White discs, black rings, printed tags: anything that differs from the
            # empty table, counted above this picture's noise (vision.bare); the disc's
            # size and roundness then decide. (Per channel plane: the same sums as over
            # the pixel's three values, in a third of the time.)
            ev = change_evidence(np.sqrt(maps["sq"]), usable)
        else:
            ev = self._gold.evidence(lab, diff=d, diff_sq=maps["sq"].copy())[0]
        ev[~usable] = 0.0
        ev.setflags(write=False)
        maps[kind] = ev
        return ev
