"""Filtering a view's evidence: ring kernels, correlation, peaks and blobs.

A rim of a known radius is found by correlating its side's evidence map with a ring
kernel of that radius (``ring_kernel``; many kernels over one image by way of one
spectrum: ``_correlate_many``, ``_filter_many``), then taking the response's local
maxima (``_local_maxima``) to sub-pixel places (``_subpixel_peaks``). Oval and
rectangular stands are looked for only round the blobs of evidence (``_blob_boxes``).

In: float32 maps (evidence, responses) in a view's pixels, kernels, thresholds. Out:
responses, peak rows and columns, blob boxes. Several are faster ways to a plain OpenCV
call, named in their docstrings (tests/test_detect_speed_equiv.py holds them to it).
"""

from __future__ import annotations

import functools

import cv2
import numpy as np


def ring_kernel(radius_px: float, width_px: float, outer_gap_px: float = 1.0, outer_width_px: float = 2.0,
                outer_weight: float = 0.6) -> np.ndarray:
    """An annulus of +1 total weight at the rim, and a thinner ring just outside it of
    -``outer_weight`` total: a rim has table, not rim colour, just beyond it. (Read-only:
    the same few kernels are asked for every frame, and made once.)"""
    return _ring_kernel(float(radius_px), float(width_px), float(outer_gap_px), float(outer_width_px),
                        float(outer_weight))


@functools.lru_cache(maxsize=256)
def _ring_kernel(radius_px: float, width_px: float, outer_gap_px: float, outer_width_px: float,
                 outer_weight: float) -> np.ndarray:
    R = int(np.ceil(radius_px + outer_gap_px + outer_width_px + 1))
    yy, xx = np.mgrid[-R:R + 1, -R:R + 1].astype(np.float32)
    rr = np.hypot(xx, yy)
    inner = np.clip(1.0 - np.abs(rr - (radius_px - width_px / 2)) / (width_px / 2 + 0.5), 0, 1)
    outer_c = radius_px + outer_gap_px + outer_width_px / 2
    outer = np.clip(1.0 - np.abs(rr - outer_c) / (outer_width_px / 2 + 0.5), 0, 1)
    k = (inner / inner.sum() - outer_weight * outer / max(outer.sum(), 1e-6)).astype(np.float32)
    k.setflags(write=False)
    return k


_DISCS: dict[int, tuple[np.ndarray, np.ndarray, int]] = {}


def _disc(radius: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The elliptic structuring element of this radius as offsets (dy, dx), and the
    half-size of the largest square it holds."""
    if radius not in _DISCS:
        k = 2 * radius + 1
        el = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))
        dy, dx = np.nonzero(el)
        s = 0
        while s < radius and el[radius - s - 1:radius + s + 2, radius - s - 1:radius + s + 2].all():
            s += 1
        _DISCS[radius] = (dy - radius, dx - radius, s)
    return _DISCS[radius]


def _nearest_peak_key(cols: np.ndarray, rows: np.ndarray, value: np.ndarray, at: np.ndarray,
                      size_px: float) -> np.ndarray:
    """Which correlation peak a follow takes (the smallest key): the one nearest where
    the base should be (``at``, col and row), unless another is much stronger; ``size_px``
    the base's radius (or half depth), which scales the say of strength."""
    return np.hypot(cols - at[0], rows - at[1]) - 2 * size_px * value


def _local_maxima(resp: np.ndarray, threshold: float, radius: int) -> tuple[np.ndarray, np.ndarray]:
    """Pixels above ``threshold`` and not below any pixel within the elliptic disc of
    ``radius`` round them (cv2.dilate with that disc), in row-major order. A dilation
    with the disc costs one max per disc pixel everywhere; instead a cheap square one
    (separable) inside the disc rules out nearly every pixel, and the few left are
    checked against the whole disc."""
    dy, dx, s = _disc(radius)
    if s == 0:
        k = 2 * radius + 1
        dil = cv2.dilate(resp, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k)))
        return _nonzero((resp >= dil) & (resp > threshold))
    peaks = resp > threshold
    if not peaks.any():
        return _nonzero(peaks)
    peaks &= resp >= cv2.dilate(resp, np.ones((2 * s + 1, 2 * s + 1), np.uint8))
    rows, cols = _nonzero(peaks)
    if not len(rows):
        return rows, cols
    # Outside the image counts for nothing (cv2.dilate's default border).
    pad = cv2.copyMakeBorder(resp, radius, radius, radius, radius, cv2.BORDER_CONSTANT, value=-np.inf)
    near = pad[(rows + radius)[:, None] + dy[None, :], (cols + radius)[:, None] + dx[None, :]]
    keep = resp[rows, cols] >= near.max(axis=1)
    return rows[keep], cols[keep]


def _nonzero(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.nonzero of a 2-d mask, by way of the flat indices (several times faster)."""
    return np.divmod(np.flatnonzero(mask), mask.shape[1])


def _subpixel_peak(resp: np.ndarray, r: int, c: int) -> tuple[float, float]:
    """Parabolic interpolation of one peak in each axis (_subpixel_peaks for one)."""
    pr, pc = _subpixel_peaks(resp, np.array([r]), np.array([c]))
    return float(pr[0]), float(pc[0])


def _subpixel_peaks(resp: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parabolic interpolation of peaks (rows[i], cols[i]) in each axis; a peak on the
    map's edge keeps its whole-pixel place in that axis."""
    h, w = resp.shape
    out = []
    for along, n, step in ((rows, h, (1, 0)), (cols, w, (0, 1))):
        inside = (along > 0) & (along < n - 1)
        r, c = rows[inside], cols[inside]
        a, b, d = resp[r - step[0], c - step[1]], resp[r, c], resp[r + step[0], c + step[1]]
        den = a - 2 * b + d
        off = np.zeros(len(rows))
        with np.errstate(divide="ignore", invalid="ignore"):
            off[inside] = np.where(den < 0, np.clip(0.5 * (a - d) / den, -0.5, 0.5), 0.0)
        out.append(along + off)
    return out[0], out[1]


def _correlate_many(image: np.ndarray, kernels: list[np.ndarray], spectra: dict) -> list[np.ndarray]:
    """cv2.filter2D(image, -1, k) for each kernel (its reflected border), by way of one
    spectrum of the image: filter2D takes a big kernel to the frequency domain anyway,
    image and kernel each time. ``spectra``: kernels' spectra kept between calls."""
    h, w = image.shape
    R = max(k.shape[0] // 2 for k in kernels)
    Hd, Wd = cv2.getOptimalDFTSize(h + 2 * R), cv2.getOptimalDFTSize(w + 2 * R)
    padded = np.zeros((Hd, Wd), np.float32)
    cv2.copyMakeBorder(image, R, R, R, R, cv2.BORDER_REFLECT_101, dst=padded[:h + 2 * R, :w + 2 * R])
    F = cv2.dft(padded, nonzeroRows=h + 2 * R)  # (packed: a real image's spectrum in half the room)
    out = []
    for k in kernels:
        key = (Hd, Wd, k.shape, k.tobytes())
        K = spectra.get(key)
        if K is None:
            if len(spectra) >= 512:  # windows of many sizes (regional looks): kept bounded
                spectra.clear()
            kp = np.zeros((Hd, Wd), np.float32)
            kp[:k.shape[0], :k.shape[1]] = k
            K = spectra[key] = cv2.dft(kp)
        corr = cv2.idft(cv2.mulSpectrums(F, K, 0, conjB=True), flags=cv2.DFT_REAL_OUTPUT | cv2.DFT_SCALE)
        o = R - k.shape[0] // 2
        out.append(corr[o:o + h, o:o + w])
    return out


def _filter_many(image: np.ndarray, kernels: list[np.ndarray], border: int, spectra: dict) -> list[np.ndarray]:
    """cv2.filter2D(image, -1, k, borderType=border) for each of ``kernels`` (float32, all
    one size), to the last bit: filter2D correlates a kernel this big by way of the DFT
    in doubles (OpenCV's crossCorr), transforming image and kernel each time; here,
    planned as crossCorr plans it, the image is transformed once and the kernels'
    spectra are kept in ``spectra``. An image crossCorr would cut into tiles (some 200
    pixels across), or a kernel it would not transform: filter2D itself."""
    h, w = image.shape
    kh, kw = kernels[0].shape
    # crossCorr's tile: 4.5 kernels across, or 256 pixels with the kernel's overhang.
    bh, bw = min(max(round(4.5 * kh), 257 - kh), h), min(max(round(4.5 * kw), 257 - kw), w)
    Hd, Wd = cv2.getOptimalDFTSize(bh + kh - 1), max(cv2.getOptimalDFTSize(bw + kw - 1), 2)
    if kh * kw < 130 or Hd - kh + 1 < h or Wd - kw + 1 < w:
        return [cv2.filter2D(image, -1, k, borderType=border) for k in kernels]
    ay, ax = kh // 2, kw // 2
    padded = np.zeros((Hd, Wd))
    cv2.copyMakeBorder(image.astype(np.float64), ay, kh - 1 - ay, ax, kw - 1 - ax, border,
                       dst=padded[:h + kh - 1, :w + kw - 1])
    # Transforms in place, into arrays made once: fresh ones this big cost the
    # allocator's page faults as much as the arithmetic.
    F = cv2.dft(padded, dst=padded, nonzeroRows=h + kh - 1)
    corr = np.empty_like(F)
    out = []
    for k in kernels:
        key = (Hd, Wd, k.shape, k.tobytes())
        K = spectra.get(key)
        if K is None:
            if len(spectra) * F.nbytes >= 24 << 20:  # kept within some 24 MB
                spectra.clear()
            K = np.zeros((Hd, Wd))
            K[:kh, :kw] = k
            spectra[key] = cv2.dft(K, dst=K, nonzeroRows=kh)
        cv2.mulSpectrums(F, K, 0, c=corr, conjB=True)
        cv2.dft(corr, dst=corr, flags=cv2.DFT_INVERSE | cv2.DFT_SCALE, nonzeroRows=h)
        out.append(corr[:h, :w].astype(np.float32))
    return out


def _blob_boxes(ev: np.ndarray, level: float) -> np.ndarray:
    """The stats rows (x, y, w, h, area) of the 8-connected blobs of ``ev`` > ``level``
    grown by 2 pixels (a 5x5 dilation), background row left out: those of
    cv2.connectedComponentsWithStats over the whole map, in its order. Rims are sparse:
    the blobs are labelled only within their bounding box (the box's corner put on even
    rows and columns, so that the labelling's 2x2 blocks, and with them the order in
    which blobs are numbered, are the whole map's), with 16-bit labels (most of the
    labelling's cost is writing them)."""
    # (The level as numpy compares a float32 map with it: rounded to float32.)
    above = cv2.compare(ev, float(np.float32(level)), cv2.CMP_GT)
    x, y, w, h = cv2.boundingRect(above)
    if w == 0 or h == 0:
        return np.zeros((0, 5), np.int32)
    H, W = ev.shape
    x0, y0 = max(x - 2, 0) & ~1, max(y - 2, 0) & ~1
    x1, y1 = min(x + w + 2, W), min(y + h + 2, H)
    blobs = cv2.dilate(np.ascontiguousarray(above[y0:y1, x0:x1]), np.ones((5, 5), np.uint8))
    # A blob holds a 5x5 square at least and touches no other: 16 bits always suffice.
    ltype = cv2.CV_16U if blobs.size < 25 * 65000 else cv2.CV_32S
    stats = cv2.connectedComponentsWithStats(blobs, ltype=ltype)[2][1:].copy()
    stats[:, 0] += x0
    stats[:, 1] += y0
    return stats
