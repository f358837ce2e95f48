"""Rim evidence: how much each pixel of a view looks like a side's rim colour over the
empty table seen there.

Each pixel is explained as a mix of the background and a rim colour; the mix fraction,
discounted by how badly the mix explains the pixel and gated by hue, is the evidence.
That keeps a green rim on green grass, or a white rim on pale sand, visible.

In: a view of the frame and of the empty table in the detector's Lab (``detector_lab``:
L scaled by 0.35, a and b centred on 0), the rim colours as seen. Out: one float32 map
in [0, 1] per rim colour (``RimColours.evidence``; ``rim_evidence`` for one colour).
"""

from __future__ import annotations

import copy

import cv2
import numpy as np


# Every a, b pair a pixel can have (whole numbers, -128..127), at (b + 128) * 256 + a + 128.
_AB_B, _AB_A = (g.ravel().astype(np.float32) - 128.0 for g in np.meshgrid(np.arange(256), np.arange(256), indexing="ij"))
_AB_CHROMA = np.sqrt(_AB_A * _AB_A + _AB_B * _AB_B)


class RimColours:
    """Rim evidence for several colours over one known background (one rectified view).

    Each pixel is explained as a mix of the background seen there and a rim colour:
    pixel = bg + a * (rim - bg) + residual, a in [0, 1]. The evidence is a, discounted
    by how badly the mix explains the pixel. Blur and the rim's thinness make a rim
    pixel a partial mix, which this reads correctly where a plain colour distance
    would not. A hue gate then keeps out what merely moves away from the background
    (shadows, grey miniatures): the pixel itself must lean toward the rim's hue, or,
    for a neutral (white) rim, be neutral and brighter than the table there.

    Everything that depends only on the background is computed once, here. Per frame:
    the hue gate depends on the pixel's a, b alone (whole numbers), so it is looked up
    in a table per colour; most of the table fails it (a few % of the pixels pass for
    a coloured rim), and the mix is worked out only where it passes.
    """

    def __init__(self, bg_lab: np.ndarray, rims: list[np.ndarray]):
        self.bg = [np.ascontiguousarray(bg_lab[..., k], np.float32) for k in range(3)]
        self.rims = [np.asarray(r, np.float32) for r in rims]
        # Per colour: rim - bg (3 planes), |rim - bg|^2, its inverse and the residual
        # tolerance; the part of the hue gate that depends on a, b; neutral: bright or dark.
        self.terms, self.gate_ab, self.bright = [], [], []
        for rim in self.rims:
            d = [(rim[k] - self.bg[k]).astype(np.float32) for k in range(3)]
            dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + 1e-3
            # Residual tolerance grows with the contrast between rim and background.
            self.terms.append((*d, dd, 1.0 / dd, -0.5 / (0.08 * dd + 60.0)))
            neutral, bright = _rim_is_neutral(rim)
            self.gate_ab.append(_hue_gate_ab(_AB_A, _AB_B, _AB_CHROMA, rim))
            self.bright.append(bright if neutral else None)
        # All colours' gates side by side, one record per a, b: one gather fetches them all.
        n = len(self.rims)
        self._gates = np.ascontiguousarray(np.stack(self.gate_ab, axis=1) if n else np.zeros((65536, 0), np.float32))
        self._gate_records = self._gates.view(np.dtype((np.void, 4 * n))).reshape(-1) if n else None

    def crop(self, window: tuple[slice, slice]) -> "RimColours":
        """The same colours over the part ``window`` of the view (slices, no copies)."""
        out = copy.copy(self)
        out.bg = [b[window] for b in self.bg]
        out.terms = [tuple(t[window] for t in terms) for terms in self.terms]
        return out

    def evidence(self, lab: np.ndarray, window: tuple[slice, slice] | None = None,
                 only: int | None = None, diff: list[np.ndarray] | None = None,
                 diff_sq: np.ndarray | None = None) -> list[np.ndarray]:
        """Evidence maps, one per rim colour (or only colour ``only``); ``window``: the
        part of the view that ``lab`` covers. ``lab`` as _lab gives it (whole a, b).
        ``diff``: its planes minus the background's, if the caller has them already;
        ``diff_sq``: their squares' sum, (d0 d0 + d1 d1) + d2 d2, to be used up (one
        colour only)."""
        w = window if window is not None else (slice(None), slice(None))
        H, W = lab.shape[:2]
        if diff is None:
            planes = cv2.split(lab)
            diff = [planes[k] - self.bg[k][w] for k in range(3)]
        p = diff
        # Each pixel's a, b as one 16-bit index into the gate tables: the bytes a + 128,
        # b + 128 side by side, read as one little-endian number.
        ab = cv2.merge(cv2.split(cv2.convertScaleAbs(lab, beta=128.0))[1:]).view("<u2").reshape(H, W)
        out = []
        pick = range(len(self.rims)) if only is None else [only]
        n = len(self.rims)
        gates = None if only is not None or not n else np.take(self._gate_records, ab).view(np.float32).reshape(H, W, n)
        for i in pick:
            gate = np.take(self.gate_ab[i], ab) if gates is None else gates[..., i]
            terms = [t[w] for t in self.terms[i]]
            live = gate > 0
            if self.bright[i] is not None:  # (dL / 0.35 > 8: lighter, or darker, by 2.8 at least)
                live &= (p[0] > 2.79) if self.bright[i] else (p[0] < -2.79)
            if window is None and np.count_nonzero(live) < 0.25 * H * W:
                nz = np.flatnonzero(live)
                # Few pixels pass the gate: the mix is worked out on those alone.
                ev = np.zeros(H * W, np.float32)
                if len(nz):
                    g = np.take(gate, nz) if gates is None else np.take(gates.reshape(-1), nz * n + i)
                    ev[nz] = _mix_evidence([np.take(q, nz) for q in p], [np.take(t, nz) for t in terms], g,
                                           self.bright[i])
                out.append(ev.reshape(H, W))
            else:
                out.append(_mix_evidence(p, terms, gate, self.bright[i], diff_sq if len(pick) == 1 else None))
        return out


def _mix_evidence(p: list[np.ndarray], terms: tuple, gate: np.ndarray, bright: bool | None,
                  pp: np.ndarray | None = None) -> np.ndarray:
    """RimColours' evidence from the pixels' difference from the background ``p`` (3),
    the background terms of the colour and its hue gate (a, b part); ``pp``: |p|^2 as
    worked out below, if the caller has it (it is used up)."""
    p0, p1, p2 = p
    d0, d1, d2, dd, inv_dd, inv_tol2 = terms
    # pp = |p|^2, pd = p . d, a = clip(pd / dd, 0, 1), r2 = max(pp - 2 a pd + a^2 dd, 0),
    # ev = a exp(r2 inv_tol2): the same float32 operations in the same order, into two
    # buffers reused in place (over a whole view the temporaries cost as much as the
    # arithmetic).
    tmp = np.multiply(p1, p1)
    if pp is None:
        pp = np.multiply(p0, p0)
        pp += tmp
        np.multiply(p2, p2, out=tmp)
        pp += tmp
    pd = np.multiply(p0, d0)
    np.multiply(p1, d1, out=tmp)
    pd += tmp
    np.multiply(p2, d2, out=tmp)
    pd += tmp
    a = np.multiply(pd, inv_dd)
    np.clip(a, 0.0, 1.0, out=a)
    np.multiply(a, 2, out=tmp)
    tmp *= pd
    pp -= tmp
    np.multiply(a, a, out=tmp)
    tmp *= dd
    pp += tmp
    np.maximum(pp, 0.0, out=pp)
    pp *= inv_tol2
    ev = np.exp(pp, out=pp)
    ev *= a
    ev *= gate if bright is None else gate * _neutral_lift(p0, bright)
    return ev


def rim_evidence(lab: np.ndarray, bg_lab: np.ndarray, rim_lab: np.ndarray) -> np.ndarray:
    """Evidence for one rim colour (see RimColours)."""
    return RimColours(bg_lab, [rim_lab]).evidence(lab)[0]


def _rim_is_neutral(rim_lab) -> tuple[bool, bool]:
    """(neutral, bright): a rim of little colour, lighter than mid grey (else darker)."""
    return float(np.hypot(rim_lab[1], rim_lab[2])) < 15.0, bool(rim_lab[0] / 0.35 > 128)


def _hue_gate_ab(A, B, chroma, rim_lab) -> np.ndarray:
    """The part of the hue gate that depends on the pixel's a, b only."""
    rim_chroma = float(np.hypot(rim_lab[1], rim_lab[2]))
    if rim_chroma < 15.0:
        return np.clip((22.0 - chroma) * 0.1, 0.0, 1.0)
    cos = (A * rim_lab[1] + B * rim_lab[2]) / (chroma * rim_chroma + 1e-6)
    along = np.clip((cos - 0.5) / 0.35, 0.0, 1.0)  # within ~60 deg of the rim's hue
    return along * np.clip((chroma - 5.0) * 0.1, 0.0, 1.0)


def _neutral_lift(dL, bright: bool) -> np.ndarray:
    """Neutral rim: lighter (or darker, for a black rim) than the table beneath, in raw
    lightness (L is scaled by 0.35)."""
    dl = dL / 0.35 if bright else -dL / 0.35
    return np.clip((dl - 8.0) / 20.0, 0.0, 1.0)


def _hue_gate(L, A, B, chroma, dL, rim_lab) -> np.ndarray:
    """Whether a pixel leans toward the rim's hue (coloured rim), or is neutral and
    lighter or darker than the table as the rim is (neutral rim)."""
    neutral, bright = _rim_is_neutral(rim_lab)
    gate = _hue_gate_ab(A, B, chroma, rim_lab)
    return gate * _neutral_lift(dL, bright) if neutral else gate
