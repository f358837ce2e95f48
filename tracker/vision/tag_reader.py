"""What is printed on a token-sized disc, read up close, and what this table's looks
have read before.

In: a frame, a disc's centre (world inches) and diameter, and the face score a printed
tag needs in this picture. Out: a ``TagRead``: the token tag read (or None), how much
the disc looks like a printed tag at all (``face``), the nearest code's cost and id.
``TagReader`` keeps, across looks, the per-place sums of uncertain readings
(``votes``: a token lies still, so looks add up) and the discs where a look read
nothing at all (``no_tag_seen``: not read again while their close-up stays the same).
The reading itself is ``vision.tags`` (``read_cut_out``, ``search_costs``,
``disc_centre``); this stage decides which reading stands.

>>> read = TagRead(None, face=90.0, cost=3.0, best=47)
>>> read.tag_face(floor=60.0, cost=6.0)  # a printed tag not read this look
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import cv2
import numpy as np

from ..world import MM_PER_IN
from .tags import disc_centre, read_cut_out, search_costs
from .views import PlaneView

TOKEN_THICKNESS_IN = 2.0 / MM_PER_IN  # a token's top above the surface it lies on (the physical spec)


@dataclass(frozen=True)
class TagRead:
    """One look at a disc's print. ``tag``: the tag read (always a token's id), or None. ``face``: the
    best tag border's score (a printed tag 75-140, a miniature on its base 40 or less;
    inf where the cut-out read a token's code). ``cost``: cells wrong of the nearest
    code this look (inf: no code weighed), ``best`` its id (-1: none). ``centre``: where
    the disc's edge says it lies, when the read was taken there (else None).
    ``closeup``: (view, grey) the read was taken from (None for a recalled disc)."""

    tag: int | None
    face: float = 0.0
    cost: float = np.inf
    best: int = -1
    centre: np.ndarray | None = None
    closeup: tuple | None = None

    def tag_face(self, floor: float, cost: float) -> bool:
        """No tag read, yet a printed tag's border (``floor`` or more) near some code
        (``cost`` cells or fewer): paper, read again at the next look."""
        return self.tag is None and self.face >= floor and self.cost <= cost


class TagReader:
    """Reads token tags up close through ``camera`` at 4x ``px_per_in``; ``token_kind``
    maps an id to its token kind (None: no token's id), ``state_kind`` is the kind of
    state tokens (read by votes over looks; objective and treasure ids only in one
    clear look). ``token_ids_key`` returns what the token ids depend on (the config's
    token tags), to know when to recompute which ids are no token's."""

    def __init__(self, camera: Any, px_per_in: float, image_size: tuple[int, int] | None, dictionary: str,
                 token_kind: Callable[[int], int | None], state_kind: int, token_ids_key: Callable[[], Any]):
        self.camera, self.px_per_in, self.image_size, self.dictionary = camera, px_per_in, image_size, dictionary
        self.token_kind, self.state_kind, self.token_ids_key = token_kind, state_kind, token_ids_key
        # An objective or treasure tag read by search: in one look at most this far (of
        # 16 cells) from its code, and 2 nearer than any other code. The shared eval
        # sets' tags read 0.5-0.6 where the cut-out fails (next code 3.2); a miniature 15
        # or more.
        self.search_cost = 2.0
        # Discs where the last token look read nothing at all (read ended before weighing
        # any code, and saw no tag's border): (xy, diameter, close-up view, its grey
        # close-up, face). A disc found there again whose close-up has changed no more
        # than the camera's noise is not read again (recall_or_read): the same bases were
        # read every look, ~4 ms each.
        self.no_tag_seen: list[tuple] = []
        self.still_in = 0.05
        self.same_mean, self.same_level, self.same_share = 3.0, 12, 0.01
        self.votes: list[list] = []  # [xy, summed cost per id, looks, last look]: see _search
        self._not_token_key: Any = None
        self._not_token: list[int] = []

    def set_camera(self, camera: Any) -> None:
        """A new pose: close-ups taken through the old one are no longer comparable."""
        self.camera = camera
        self.no_tag_seen = []

    def forget_votes(self, since: int) -> None:
        """Keep the votes of places looked at in look ``since`` or later (at most 64)."""
        self.votes = [v for v in self.votes if v[3] >= since][-64:]

    def closeup(self, frame: np.ndarray, xy: np.ndarray, diam: float) -> tuple[PlaneView, np.ndarray, float]:
        """A token's close-up: top-down at its top, centred on ``xy``, 1.2 diameters wide,
        at 4x the floor view's scale. Returns (its view, the grey close-up, pixels an inch)."""
        S = self.px_per_in * 4
        half = 0.6 * diam
        view = PlaneView.build(self.camera, TOKEN_THICKNESS_IN, (xy[0] - half, xy[1] - half, xy[0] + half, xy[1] + half),
                               S, self.image_size)
        return view, cv2.cvtColor(view.sample(frame), cv2.COLOR_BGR2GRAY), S

    def recall_or_read(self, frame: np.ndarray, xy: np.ndarray, diam: float, floor: float, look: int,
                       no_tag: list[tuple]) -> TagRead:
        """``read``, unless the last token look read nothing at all at this disc (no code
        weighed, no tag's border: a miniature's base, a coin) and its close-up, taken
        where it was then, has changed no more than the camera's noise since: then
        nothing again (no tag read, no tag face, no vote), without the search. Such a
        read leaves nothing behind but its face, kept with it. ``no_tag`` collects this
        look's such discs (the next look's ``no_tag_seen``)."""
        for entry in self.no_tag_seen:
            seen_xy, seen_d, view, grey, face = entry
            if seen_d == diam and np.hypot(*(xy - seen_xy)) < self.still_in:
                now = cv2.cvtColor(view.sample(frame), cv2.COLOR_BGR2GRAY)
                change = cv2.absdiff(now, grey)
                if float(change.mean()) <= self.same_mean and \
                        np.count_nonzero(change > self.same_level) <= self.same_share * change.size:
                    no_tag.append(entry)
                    return TagRead(None, face=face)
                break
        got = self.read(frame, xy, diam, floor, look)
        if got.tag is None and got.cost == np.inf and got.face < floor and got.closeup is not None:
            no_tag.append((np.asarray(xy, float), diam, *got.closeup, got.face))
        return got

    def read(self, frame: np.ndarray, xy: np.ndarray, diam: float, floor: float, look: int = 0) -> TagRead:
        """Read a tag printed to fill a token. Its corners nearly touch the disc's edge,
        which defeats ArUco's own square finder; but the tag is centred on a disc we
        have already found, so: take the dark square inside the disc, straighten it to
        a 6x6 cell grid (border plus 4x4 bits) and look the bits up in the dictionary,
        in all four rotations (``vision.tags.read_cut_out``); else search for it. A face
        under ``floor`` (nothing like a tag) is looked at once more, centred on the
        disc's edge (the finder's centre leans away from the tag's print)."""
        first = self._read_closeup(frame, xy, diam, floor, look)
        if first.tag is not None or first.face >= floor:
            return first
        view, gray = first.closeup
        c = disc_centre(gray, self.px_per_in * 4, diam)
        if c is None:
            return first
        centre = view.to_world(np.array([c[0]]), np.array([c[1]]))[0]
        if not (0.02 < np.hypot(*(centre - xy)) < 0.3 * diam):
            return first
        again = self._read_closeup(frame, centre, diam, floor, look)
        if again.tag is None and again.face < first.face:
            return first
        return TagRead(again.tag, again.face, again.cost, again.best, centre, again.closeup)

    def _read_closeup(self, frame: np.ndarray, xy: np.ndarray, diam: float, floor: float, look: int) -> TagRead:
        """``read``'s reading of the close-up centred on ``xy``."""
        view, gray, S = self.closeup(frame, xy, diam)
        worth, idx = read_cut_out(gray, S, diam, self.dictionary)
        if not worth:
            return TagRead(None, closeup=(view, gray))
        if idx is not None and self.token_kind(idx) is not None:
            return TagRead(idx, face=np.inf, cost=0.0, closeup=(view, gray))
        tag, face, cost, best = self._search(gray, S, diam, floor, look, xy)
        return TagRead(tag, face, cost, best, closeup=(view, gray))

    def _search(self, gray: np.ndarray, S: float, diam: float, floor: float, look: int,
                xy: np.ndarray | None = None) -> tuple[int | None, float, float, int]:
        """The tag read by search when its dark square cannot be cut out alone (a
        shadow or a miniature touching it, a corner clipped by the disc's edge at 45
        degrees): every turn (3 degree steps), size (the tag fills 50-80 % of the disc)
        and small shift of a 6x6 cell grid about the disc's centre is sampled, and the
        one whose border cells are darkest against the paper just outside them is
        read softly against every code. A token lies still: a reading too close to
        call in one look is summed with the looks before at the same place (``xy``)
        until one code clearly wins. Objective and treasure ids are taken from here only
        when one look reads them nearly perfectly (``search_cost``). The search itself:
        ``vision.tags.search_costs``. Returns (tag or None, face, cost, best id)."""
        # The best border's score says whether there is a tag at all, read or not: a
        # printed tag scores 75-140, a miniature on its base 40 or less.
        face, per_id = search_costs(gray, S, diam, self.dictionary)
        if per_id is None:
            return None, face, np.inf, -1
        # A disc carries a token's tag (objective, treasure or state ids), never a table
        # marker's or a terrain piece's: only those are told apart.
        per_id[self._not_token_ids(len(per_id))] = np.inf
        cost, best = float(per_id.min()), int(np.argmin(per_id))
        look_two = np.partition(per_id, 1)[:2]  # this look alone (objective, treasure: below)
        n = 1
        if xy is not None:  # sum with earlier looks at this place
            for vote in self.votes:
                if np.hypot(*(vote[0] - xy)) < 0.08:
                    vote[1] += per_id
                    vote[2] += 1
                    vote[3] = look
                    per_id, n = vote[1], vote[2]
                    break
            else:
                self.votes.append([np.asarray(xy, float), per_id.copy(), 1, look])
        best_two = np.partition(per_id, 1)[:2]
        idx = int(np.argmin(per_id))
        if best_two[0] / n > 3.5 or best_two[1] - best_two[0] < 2.0:
            return None, face, cost, best
        if self.token_kind(idx) == self.state_kind and face >= floor:
            # (Only where this look sees a printed tag's border: looks of one still
            # picture add up to a clear code even on a miniature, face 36 against a
            # floor of 43, a white stand read as state tag 91 at its third look.)
            return idx, face, cost, best
        # An objective or treasure tag whose square the cut-out could not take alone
        # (its border run into the disc's dark edge): read here only when it is clear
        # in one look (a misread objective moves a control ruling), never by votes.
        if face >= floor and look_two[0] <= self.search_cost and look_two[1] - look_two[0] >= 2.0 and idx == best:
            return idx, face, cost, best
        return None, face, cost, best

    def _not_token_ids(self, n: int) -> list[int]:
        """The ids below ``n`` that are no token's, kept while the token ids stay the
        same: the search asks for them at every disc."""
        key = (n, self.token_ids_key())
        if self._not_token_key != key:
            self._not_token_key = key
            self._not_token = [i for i in range(n) if self.token_kind(i) is None]
        return self._not_token
