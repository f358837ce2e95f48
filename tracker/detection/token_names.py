"""Tokens against bases: which discs are paper, and the names of unread tags.

In: the look's bases and token discs.
Out: each disc settled as a token or a base (``_settle_discs``: a printed tag's face is
paper, never a base), weak round rims lying on tokens' edges dropped (``_on_token_edges``),
and discs whose tag will not decode named among the config's ids by likeness, summed over
looks (``_name_discs``).
"""

from __future__ import annotations

import math

import numpy as np

from ..base_shapes import SHAPE_CODES
from ..vision.tag_match import Likeness, assign, likeness
from ..vision.tokens import objective_face
from ..world import MM_PER_IN
from .detections import (
    KIND_NAMES,
    KIND_OBJECTIVE,
    KIND_STATE,
    KIND_TREASURE,
    STATE_TAG_RANGE,
    Detections,
)
from .learned import ONE_HEIGHT_IN
from .tokens import TOKEN_CAP_MARGIN


class TokenNames:
    """Settles discs between tokens and bases (a mixin of ``TableDetector``)."""

    def _token_sized(self, base_mm: np.ndarray, xy: np.ndarray, kind: int) -> np.ndarray:
        """Which of these bases round the plain disc at ``xy`` are no larger than the
        disc itself might read: up to 1.2 times a token, or up to 1.3 times (a 32 mm base
        round a 1 in disc) where the disc, as its own fit measured it, is nearer a
        token's size than that base's and off a token's edge by no more than blur and
        shade leave (a gold coin's dark edge at 720p, blurred into a teal mat, read as a
        32 mm green rim). Such a disc is still a token only with a token's flat face
        (``_styled_token``): a miniature's paint inside a 32 mm base is not one."""
        token_mm = self._paper_diameter_in() * MM_PER_IN
        out = base_mm <= 1.2 * token_mm
        if out.all():
            return out
        which = "treasure" if kind == KIND_TREASURE else "objective"
        sizes = [(float(np.hypot(*(q - xy))), r) for q, k, r in self._disc_sizes if k == which]
        near = min(sizes, default=(np.inf, 0.0))
        if near[0] > 0.2:
            return out
        disc_mm = 2 * near[1] * MM_PER_IN
        # (its edge within 2.5 px of a token's, as _untagged_discs' fit allows: coins
        # measured 1.3-1.5 px short at 720p and 1080p, a gold miniature in a white 32 mm
        # base at 4K 4.3 px)
        like_token = abs(disc_mm - token_mm) / 2 / MM_PER_IN * self.px_per_in <= 2.5
        return out | ((base_mm <= 1.3 * token_mm) & like_token & (abs(disc_mm - token_mm) < abs(disc_mm - base_mm)))

    def _settle_discs(self, bases: Detections, tokens: Detections, lab: np.ndarray,
                      frame: np.ndarray | None = None) -> tuple[Detections, Detections]:
        """A 25 mm base and a 1 in token are the same size from above. A plain disc
        centred inside a base found by its rim is that base (a token under a base cannot
        be seen anyway), unless it shows an objective's face, concentric all round; a
        disc with a token tag is always a token. Plain tokens are then capped at the
        number the game config says are on the table. With the ``frame``, a small
        white-rimmed base no token claims is looked at up close (_paper_rim)."""
        keep_token = np.ones(len(tokens), bool)
        keep_base = np.ones(len(bases), bool)
        took: dict[int, np.ndarray] = {}  # per plain token: the bases it took for its own edge
        # Bases found as a patch that a token's disc could be: one the disc fills at least
        # half of (a 40 x 20 mm stand, a 32 mm base; not a 60 x 35 mm oval, whose yellow
        # miniature read as a gold disc took it for its own).
        disc_patch = bases.from_foreground & (self._paper_area_share(bases) >= 0.5)
        if len(bases) and self._paper_discs:
            # A token whose tag is not read yet is still a token: a base of its size
            # centred on it is the paper disc's edge read as a rim (a white side's 25 mm
            # base and a 1 in token look alike from above), not a fighter.
            paper = np.array([xy for xy, _ in self._paper_discs], float)
            d = np.linalg.norm(bases.xyz[:, None, :2] - paper[None], axis=2)
            small = bases.base_mm <= 1.2 * self._paper_diameter_in() * MM_PER_IN
            keep_base &= ~(small & (d < 0.35 * self._paper_diameter_in()).any(axis=1))
            keep_base &= ~(disc_patch & (d < bases.base_mm[:, None] / MM_PER_IN / 2).any(axis=1))
        if len(bases) and len(tokens) and disc_patch.any():
            # A base found only as a patch of its outline's shape is no more than that: a
            # token disc is such a patch too (a 1 in disc fills 40 x 20 mm outlines' middles
            # about as well as the stands do). A token found on it is the token.
            d = np.linalg.norm(tokens.xyz[:, None, :2] - bases.xyz[None, :, :2], axis=2)
            on = disc_patch[None, :] & (d < bases.base_mm[None, :] / MM_PER_IN / 2) & keep_base[None, :]
            for i in np.flatnonzero(on.any(axis=1) & (tokens.tag_id < 0)):
                took[i] = on[i]  # (given back if the token is capped away, below)
            keep_base &= ~on.any(axis=0)
        if len(bases) and len(tokens):
            d = np.linalg.norm(tokens.xyz[:, None, :2] - bases.xyz[None, :, :2], axis=2)
            inside = (d < (bases.base_mm[None, :] / MM_PER_IN / 2)) & keep_base[None, :]
            # Two tags read inside one "rim": the arcs of paper discs side by side closing
            # a large circle (a 60 mm white one round two state tokens), not a base with
            # tokens lying on it.
            keep_base &= (inside & (tokens.tag_id[:, None] >= 0)).sum(axis=0) < 2
            for i in np.flatnonzero(inside.any(axis=1)):
                # A flat disc of a plain token's colour with no rim beyond it: the base
                # "around" it is the token's own edge, unless a larger base's rim lies
                # round it (a gold miniature on a 40 mm base is no treasure).
                # (and only a base on the token's own centre: a disc half on a 25 mm
                # base beside it is that base's rim and miniature, no token)
                token_sized = self._token_sized(bases.base_mm[inside[i]], tokens.xyz[i, :2], int(tokens.kind[i]))
                face = self._styled_token(lab, tokens.xyz[i, :2]) == tokens.kind[i]
                # (or a rim seen little beside it, off its centre: a blue objective's edge
                # and a purple base's yellow crescent made a 40 mm yellow rim round it)
                styled = face and ((token_sized.all() and (d[i][inside[i]] < 0.25).all())
                                   or (bases.score[inside[i]] < self.token_hiding_score).all())
                if tokens.tag_id[i] >= 0 or styled or (tokens.kind[i] == KIND_OBJECTIVE
                                                       and self._objective_face(lab, tokens.xyz[i, :2])):
                    # Nothing stands on a token: a "base" centred on it is the disc's own
                    # edge read as a rim (a white side's rect stands fit a white disc).
                    if tokens.tag_id[i] < 0:
                        took[i] = took.get(i, False) | (keep_base & (d[i] < 0.5))
                    keep_base &= ~(d[i] < 0.5)
                else:
                    keep_token[i] = False
        if self.token_edges_explain and len(bases) and keep_token.any() and self._weak_edges:
            keep_base &= ~self._on_token_edges(bases, tokens[keep_token])
        if frame is not None and len(bases):
            keep_base &= ~self._paper_rim(frame, bases, keep_base)
        for kind, name in ((KIND_OBJECTIVE, "objective"), (KIND_TREASURE, "treasure")):
            plain = np.flatnonzero(keep_token & (tokens.kind == kind) & (tokens.tag_id < 0))
            spec = self.config.tokens.get(name)
            # The game's untagged tokens, and its tagged ones whose tag was not read now
            # (blur, a shadow): never more tokens of a kind than the game has.
            read = set(tokens.tag_id[keep_token & (tokens.kind == kind)].tolist())
            untagged = 0 if spec is None else spec.untagged
            unread = 0 if spec is None else len(set(spec.tag_ids) - read)
            if len(plain) <= untagged:
                continue
            # A disc with the flat face of an untagged token's colour is one of those; a
            # tag not read now leaves a printed card's place, not one for such a disc.
            styled = np.array([self._styled_token(lab, tokens.xyz[i, :2]) == kind for i in plain], bool) \
                if name in self._token_styles_by_kind else np.zeros(len(plain), bool)
            order = np.argsort(-tokens.score[plain], kind="stable")
            faced, unfaced = [int(plain[k]) for k in order if styled[k]], [int(plain[k]) for k in order if not styled[k]]
            # The untagged places to the discs of their colours first; the rest (an
            # untagged token whose colour does not show: shade, blur) after the tags' own.
            n_faced = min(len(faced), untagged)
            n_unfaced = min(len(unfaced), unread + untagged - n_faced)
            # Discs of a token's colour beyond the game's count go only if they look less
            # like its face than those kept; alike, which is which is not known, and a
            # disc left a token is never made a fighter.
            least = TOKEN_CAP_MARGIN * tokens.score[faced[n_faced - 1]] if n_faced else np.inf
            dropped = [i for i in faced[n_faced:] if tokens.score[i] < least] + unfaced[n_unfaced:]
            by_roster = bases.from_foreground & (bases.rivals != 0) & (bases.shape == 0) \
                & (self.config.epic is None) & self.roster_side_guard  # (_pursued_outline's)
            for i in dropped:
                keep_token[i] = False
                # A disc the game has no token left for is no token: the base it was taken
                # to be the edge of, or whose patch it was taken for, is a base again (a
                # pale miniature on a white side's 25 mm base looks like a white
                # objective's face; a yellow one on a yellow rim like a gold treasure);
                # a patch only where its rim named its side: one given a side only as
                # the one side short of a base its size (the others its rivals) is a
                # blob of a disc's size and nothing more (a die, a damage counter).
                keep_base |= took.get(i, np.zeros(len(bases), bool)) & ~by_roster
        return bases[keep_base], tokens[keep_token]

    def _on_named_bases(self, tokens: Detections, named: Detections) -> np.ndarray:
        """Which plain tokens (no tag read) lie on a base the refiner named where the rules
        saw only a patch (``_doubts_read``, after the tokens took their discs): their
        centre inside its circle, on its surface. Nothing lies on a base's top, and a token
        under one is hidden: a disc seen there is its miniature's paint (a gold figure on
        a green 32 mm base read as a treasure 0.55 in off the base's centre)."""
        if not self.tokens_off_named or not len(tokens) or not len(named):
            return np.zeros(len(tokens), bool)
        r = named.base_mm / MM_PER_IN / 2
        d = np.hypot(tokens.xyz[:, None, 0] - named.xyz[None, :, 0], tokens.xyz[:, None, 1] - named.xyz[None, :, 1])
        level = np.abs(tokens.xyz[:, None, 2] - named.xyz[None, :, 2]) < ONE_HEIGHT_IN
        return (tokens.tag_id < 0) & ((d < r[None, :]) & level).any(axis=1)

    def _on_token_edges(self, bases: Detections, tokens: Detections) -> np.ndarray:
        """Which poorly seen round bases stand only on the edges of token discs: their
        rim's edge points (``_weak_edges``) on a token's disc or its edge, taken away,
        leave less of the circle than the base needed to be kept (_explained_away's rule,
        with tokens for the bases: nothing lies under a token, and the arcs of two paper
        discs side by side close a rim round bare mat)."""
        out = np.zeros(len(bases), bool)
        st = self.config.state_tokens
        diameter = {k: spec.diameter_in for k, spec in ((KIND_OBJECTIVE, self.config.tokens.get("objective")),
                                                        (KIND_TREASURE, self.config.tokens.get("treasure")),
                                                        (KIND_STATE, st)) if spec is not None}
        radius = np.array([diameter.get(int(k), 1.0) / 2 for k in tokens.kind])
        margin = self.explained_margin_px / self.px_per_in
        for j in range(len(bases)):
            pts = self._weak_edges.get(tuple(bases.xyz[j]))
            if pts is None or not len(pts):
                continue
            # Tokens beside the rim, not on its middle: a disc inside a base's circle may
            # be that base's own top or miniature read as a token, which the rest of
            # _settle_discs decides (a purple 25 mm base under a disc read as an
            # objective). A tag read is a token whatever lies round it: one inside a
            # large rim, off its middle (half an inch or more), explains the rim's edge
            # points on it too (a tag's paper ring inside a 60 mm "rim" it touches).
            off = np.hypot(tokens.xyz[:, 0] - bases.xyz[j, 0], tokens.xyz[:, 1] - bases.xyz[j, 1])
            level = (np.abs(tokens.xyz[:, 2] - bases.xyz[j, 2]) < 0.5) & (
                (off >= bases.base_mm[j] / MM_PER_IN / 2) | ((tokens.tag_id >= 0) & (off >= 0.5)))
            if not level.any():
                continue
            d = np.hypot(pts[:, None, 0] - tokens.xyz[None, level, 0], pts[:, None, 1] - tokens.xyz[None, level, 1])
            on = (d <= radius[None, level] + margin).any(axis=1)
            least = float(self._min_score(bases.base_mm[j]))
            if bases.score[j] < least:  # (kept as one its side's roster is short of: _nearly_seen)
                least *= self.roster_relax
            out[j] = bool(on.any() and bases.score[j] * (1.0 - on.mean()) < least)
        return out

    def _paper_rim(self, frame: np.ndarray, bases: Detections, keep: np.ndarray) -> np.ndarray:
        """Which bases are a paper token's edge: a round base of a token's size, of a
        white-rimmed side, whose middle shows a printed tag's face (TagReader.read:
        a tag's border scores 100 or so, a miniature on a white-rimmed 25 mm base 26 or
        less). The token pass misses such a token where a hand's shadow falls round it
        (its disc is found against the empty table); its white paper ring is then read
        as a rim. A base found still where its middle was looked at in the last look is
        not looked at again (a decode costs ~10 ms)."""
        paper_d = self._paper_diameter_in()
        white = [s for s, lab, _ in self._side_lab() if np.hypot(lab[1], lab[2]) < 15.0 and lab[0] / 0.35 > 128]
        out = np.zeros(len(bases), bool)
        seen: list[np.ndarray] = []
        for j in np.flatnonzero(keep & np.isin(bases.side, white) & (bases.shape == 0) & (bases.xyz[:, 2] == 0)
                                & (bases.base_mm <= 1.2 * paper_d * MM_PER_IN)):
            xy = bases.xyz[j, :2].copy()
            if any(np.hypot(*(xy - p)) < 0.05 for p in self._mini_seen):
                seen.append(xy)
                continue
            got = self.tags.read(frame, xy, paper_d, self.tag_face_floor, self._full_count)
            if got.tag is not None or got.tag_face(self.tag_face_floor, self.tag_face_cost):  # (read: a token's id)
                out[j] = True
            else:
                seen.append(xy)
        self._mini_seen = seen
        return out

    def _name_discs(self, frame: np.ndarray, rows: list[dict],
                    maybe: list[tuple[np.ndarray, float, float, int | None]]) -> None:
        """Tags too small or soft to decode, named among the ids the game config lists
        that no token of this look has read: each candidate's code drawn as the camera
        would see it and correlated with the close-up (``vision.tag_match.likeness``),
        one id a disc, the best assignment kept where it is clear (``assign``). A tag
        too small to decode (0.66 in is 11 px at 720p) is still more like its own code
        than like the game's few others. ``rows``: this look's tokens, those of an
        objective or treasure colour whose tag was not read (-1) are named in place
        (likeness ``name_floor`` or more); ``maybe``: discs nothing claimed (xy, score,
        diameter, and a code to beat: the decoder's guess where it was a state
        token's), made tokens of their id's kind only on stronger evidence
        (``name_disc_floor``, and more like the id's code than like a blob: a disc
        alone does not make a token, a miniature's blob looks like a blurred tag); such a
        disc not clearly one id's is a token of the kind every id it is nearly as like
        shares, its id unread (``name_kind_alone``)."""
        kinds = {k: KIND_NAMES[k] for k in (KIND_OBJECTIVE, KIND_TREASURE)}
        read = {r["tag_id"] for r in rows}
        ids = tuple(sorted({i for k in kinds.values() if (spec := self.config.tokens.get(k)) is not None
                            for i in spec.tag_ids} - read))
        named = [r for r in rows if r["tag_id"] < 0 and r["kind"] in kinds]
        if not ids or not (named or maybe):
            return
        self._name_votes = [v for v in self._name_votes
                            if v[4] >= self._full_count - 4 * max(1, self.tokens_every)][-64:]
        kind_of = np.array([self._token_kind(i) for i in ids])
        like, floor = [], []
        for r in named:
            diam = self.config.tokens[kinds[r["kind"]]].diameter_in
            per_id = self._tag_likeness(frame, np.array(r["xyz"][:2]), diam, ids).per_id.copy()
            # A disc of an objective's colour is an objective, unless its tag is clearly
            # more like another kind's id (a treasure's gold ring is a pixel wide at
            # 720p; its tag, read by likeness, says what it is).
            mine = float(per_id[kind_of == r["kind"]].max(initial=-1.0))
            per_id[(kind_of != r["kind"]) & (per_id < mine + self.name_other_kind)] = -1.0
            like.append(per_id)
            floor.append(self.name_floor)
        for xy, _, diam, decoy in maybe:
            if decoy is None:
                got = self._tag_likeness(frame, xy, diam, ids)
                rival = got.blob
            else:  # (and more like it than like the decoder's own guess)
                got = self._tag_likeness(frame, xy, diam, ids + (decoy,))
                rival = max(got.blob, float(got.per_id[-1]))
                got = Likeness(got.per_id[:-1], got.blob)
            # More like its code than like a blob by name_blob_gain, or by half what the
            # blob leaves unexplained where a blob explains nearly all (an 8 px tag at
            # 720p blurs into a square: id 0.96, blob 0.91).
            gain = min(self.name_blob_gain, self.name_blob_share * (1.0 - rival))
            like.append(np.where(got.per_id >= rival + gain, got.per_id, -1.0))
            floor.append(self.name_disc_floor)
        like = np.array(like)
        names = assign(like, np.array(floor), self.name_margin)
        for r, c in zip(named, names):
            if c is not None:
                r["tag_id"], r["kind"] = ids[c], int(kind_of[c])
        for (xy, score, _, _), c, per_id in zip(maybe, names[len(named):], like[len(named):]):
            if c is not None:
                rows.append({"xyz": (float(xy[0]), float(xy[1]), 0.0), "kind": int(kind_of[c]), "tag_id": ids[c],
                             "score": score})
                continue
            # Like a printed tag, but not clearly like one id more than another: still a
            # token, of the kind every id it is nearly as like shares, its id unread
            # (an Epic objective's tag at 720p is 8 px: its face shows, its code does not).
            close = per_id >= max(float(per_id.max()) - self.name_margin, self.name_disc_floor)
            if self.name_kind_alone and close.any() and len(set(kind_of[close].tolist())) == 1:
                rows.append({"xyz": (float(xy[0]), float(xy[1]), 0.0), "kind": int(kind_of[close][0]), "tag_id": -1,
                             "score": score})

    def _tag_likeness(self, frame: np.ndarray, xy: np.ndarray, diam: float, ids: tuple[int, ...]) -> Likeness:
        """``likeness`` of the disc at ``xy`` to each of ``ids``, averaged over its looks at
        this place (at most ``name_looks`` of them drawn: a token lies still)."""
        vote = next((v for v in self._name_votes if v[1] == ids and np.hypot(*(v[0] - xy)) < 0.08), None)
        if vote is None:
            vote = [np.asarray(xy, float).copy(), ids, Likeness(np.zeros(len(ids)), 0.0), 0, self._full_count]
            self._name_votes.append(vote)
        if vote[3] < self.name_looks:
            _, gray, S = self.tags.closeup(frame, xy, diam)
            like = likeness(gray, S, diam, self.config.table.dictionary, ids)
            vote[2] = Likeness(vote[2].per_id + like.per_id, vote[2].blob + like.blob)
            vote[3] += 1
        vote[4] = self._full_count
        return Likeness(vote[2].per_id / vote[3], vote[2].blob / vote[3])

    def _paper_area_share(self, bases: Detections) -> np.ndarray:
        """How much of each base's outline the largest token disc would cover (its area
        over the outline's, at most 1)."""
        mm = np.where(bases.shape[:, None] > 0, bases.size_mm, bases.base_mm[:, None]) / MM_PER_IN
        area = np.where(bases.shape == SHAPE_CODES["rect"], mm[:, 0] * mm[:, 1], math.pi / 4 * mm[:, 0] * mm[:, 1])
        return np.minimum(1.0, math.pi / 4 * self._paper_diameter_in() ** 2 / np.maximum(area, 1e-9))

    def _paper_diameter_in(self) -> float:
        """The largest token disc on this table (plain tokens or state tokens)."""
        st = self.config.state_tokens
        return max([spec.diameter_in for spec in self.config.tokens.values()]
                   + ([st.diameter_in] if st is not None else []) + [1.0])

    def _objective_face(self, lab: np.ndarray, xy: np.ndarray, diameter_in: float = 1.0) -> bool:
        """``vision.tokens.objective_face`` of the disc at ``xy`` (inches) in the floor view."""
        return objective_face(lab, self.floor.to_pixel(np.asarray(xy, float)[None])[0], diameter_in / 2 * self.px_per_in)

    def _cached_tag(self, xy: np.ndarray) -> int | None:
        """A disc where a tag was read before, not moved since: the same token. Reading
        a tag costs a close-up re-sampling; tokens mostly lie still."""
        for tag, pos in [*self._tag_pos.items(), *self._state_tag_pos]:
            if np.hypot(*(pos - xy)) < 0.08:
                return tag
        return None

    def _token_kind(self, tag_id: int) -> int | None:
        kind = self.config.token_kind_for_tag(tag_id)
        if kind is None and STATE_TAG_RANGE[0] <= tag_id <= STATE_TAG_RANGE[1]:
            return KIND_STATE  # (a config with state tokens may not list 80-99 as objective/treasure tags)
        if kind is None:  # the physical spec's id ranges
            kind = "objective" if 40 <= tag_id <= 59 else "treasure" if 60 <= tag_id <= 79 else None
        return None if kind is None else (KIND_OBJECTIVE if kind == "objective" else KIND_TREASURE)

    def _token_ids_key(self) -> tuple:
        """What the token ids depend on: the config's token kinds and their tag ids."""
        return tuple((kind, tuple(spec.tag_ids)) for kind, spec in self.config.tokens.items())
