"""Procedural textures: the battle mat, stone/wood for terrain, printed ArUco tags, tokens
and the ChArUco board. All are images sampled with ``cv2.remap`` at exact texel
coordinates (texel j covers [j, j+1) so a continuous coordinate q samples at q - 0.5):
printed edges land where the geometry says, to a small fraction of a pixel.
"""

from __future__ import annotations

from functools import lru_cache

import cv2
import numpy as np

DICT_TAGS = cv2.aruco.DICT_4X4_100
DICT_BOARD = cv2.aruco.DICT_5X5_100
PAPER = 236.0  # printed white is paper, not 255


def sample(tex: np.ndarray, col: np.ndarray, row: np.ndarray, border: int = cv2.BORDER_REPLICATE) -> np.ndarray:
    """Bilinear lookup of ``tex`` at continuous texel coordinates (0 = left/top edge)."""
    mx = (np.asarray(col, np.float32) - 0.5).astype(np.float32)
    my = (np.asarray(row, np.float32) - 0.5).astype(np.float32)
    if mx.ndim == 1:
        mx, my = mx[None], my[None]
        out = cv2.remap(tex, mx, my, cv2.INTER_LINEAR, borderMode=border)
        return out[0]
    return cv2.remap(tex, mx, my, cv2.INTER_LINEAR, borderMode=border)


def fractal_noise(rng: np.random.Generator, h: int, w: int, octaves=((4, 1.0), (12, 0.5), (40, 0.25), (120, 0.12))) -> np.ndarray:
    """Smooth value noise in [0, 1]: a few octaves of upscaled random grids."""
    acc = np.zeros((h, w), np.float32)
    tot = 0.0
    for cells, amp in octaves:
        gh, gw = max(2, int(cells * h / max(h, w)) + 2), max(2, int(cells * w / max(h, w)) + 2)
        g = rng.random((gh, gw)).astype(np.float32)
        acc += amp * cv2.resize(g, (w, h), interpolation=cv2.INTER_CUBIC)
        tot += amp
    acc /= tot
    acc -= acc.min()
    return acc / max(float(acc.max()), 1e-6)


def tag_image(tag_id: int, cells_px: int = 32, quiet_cells: float = 0.0, dictionary: int = DICT_TAGS) -> np.ndarray:
    """A 4x4 ArUco tag (6x6 cells with its black border), ``cells_px`` texels per cell,
    optionally with a white quiet zone, as float32 BGR (paper white, ink black)."""
    d = cv2.aruco.getPredefinedDictionary(dictionary)
    side = 6 * cells_px
    img = cv2.aruco.generateImageMarker(d, tag_id, side, borderBits=1)
    q = int(round(quiet_cells * cells_px))
    if q:
        img = cv2.copyMakeBorder(img, q, q, q, q, cv2.BORDER_CONSTANT, value=255)
    return _ink(img)


def _ink(gray: np.ndarray) -> np.ndarray:
    g = gray.astype(np.float32) / 255.0
    v = 22.0 + g * (PAPER - 22.0)  # matte ink is not 0
    return np.repeat(v[..., None], 3, axis=2)


def tileable_noise(rng: np.random.Generator, size: int = 512, scales=((24.0, 1.0), (6.0, 0.5), (1.5, 0.35))) -> np.ndarray:
    """Smooth noise in [0, 1] that wraps around seamlessly (band-limited in Fourier
    space), for surfaces that extend past any finite texture, like the table cloth."""
    f = np.fft.fftfreq(size)
    r2 = f[:, None] ** 2 + f[None, :] ** 2
    acc = np.zeros((size, size))
    for sigma_px, amp in scales:
        white = np.fft.fft2(rng.standard_normal((size, size)))
        acc += amp * np.real(np.fft.ifft2(white * np.exp(-2 * (np.pi * sigma_px) ** 2 * r2)))
    acc -= acc.min()
    return (acc / max(acc.max(), 1e-9)).astype(np.float32)


def cloth_texture(rng: np.random.Generator, size: int = 512) -> np.ndarray:
    """The dark table cloth around the mat (tileable; sample with BORDER_WRAP)."""
    n = tileable_noise(rng, size)
    return (np.array([48, 46, 44], np.float32) * (0.75 + 0.5 * n[..., None])).astype(np.float32)


def mat_texture(rng: np.random.Generator, play_area_in: tuple[float, float], ppi: float,
                extent: tuple[float, float, float, float]) -> np.ndarray:
    """The table seen from above, world-aligned: a printed grass-and-dirt battle mat over
    the play area on a dark table cloth. Row 0 is the +y edge of ``extent`` (x0, y0, x1, y1)."""
    x0, y0, x1, y1 = extent
    w, h = int(round((x1 - x0) * ppi)), int(round((y1 - y0) * ppi))
    n1, n2, n3 = fractal_noise(rng, h, w), fractal_noise(rng, h, w), fractal_noise(rng, h, w, ((60, 1.0), (200, 0.6)))
    grass = np.array([52, 118, 86], np.float32) * (0.75 + 0.5 * n2[..., None])
    grass[..., 1] += 25 * (n3 - 0.5)
    dirt = np.array([60, 88, 118], np.float32) * (0.8 + 0.4 * n3[..., None])
    m = np.clip((n1 - 0.55) * 6, 0, 1)[..., None]
    mat = grass * (1 - m) + dirt * m
    cloth = np.array([48, 46, 44], np.float32) * (0.85 + 0.3 * n3[..., None])
    xs = x0 + (np.arange(w) + 0.5) / ppi
    ys = y1 - (np.arange(h) + 0.5) / ppi
    W, D = play_area_in
    inside = ((xs[None, :] >= 0) & (xs[None, :] <= W) & (ys[:, None] >= 0) & (ys[:, None] <= D))[..., None]
    return np.where(inside, mat, cloth).astype(np.float32)


def stone_texture(rng: np.random.Generator, base_bgr, size: int = 256) -> np.ndarray:
    """Tileable-enough rough surface for terrain pieces."""
    n = fractal_noise(rng, size, size, ((6, 1.0), (24, 0.6), (80, 0.4)))
    return (np.asarray(base_bgr, np.float32) * (0.7 + 0.6 * n[..., None])).astype(np.float32)


def token_texture(kind: str, tag_id: int | None, tag_frac: float, size: int = 256) -> np.ndarray:
    """Top face of a 1 in token: white disc with a black ring (objective), gold disc
    (treasure) or a printed tag filling the disc (the tag spans ``tag_frac`` of the
    diameter, on white; treasure tags keep a thin gold edge)."""
    yy, xx = np.mgrid[0:size, 0:size]
    r = np.hypot(xx + 0.5 - size / 2, yy + 0.5 - size / 2) / (size / 2)
    if tag_id is not None:
        tex = np.full((size, size, 3), PAPER, np.float32)
        side = int(round(tag_frac * size / 6)) * 6
        t = cv2.resize(tag_image(tag_id, 32), (side, side), interpolation=cv2.INTER_AREA)
        o = (size - side) // 2
        tex[o:o + side, o:o + side] = t
        if kind == "treasure":
            tex[r > 0.9] = (40, 170, 215)
        return tex
    if kind == "treasure":
        gold = np.array([40, 165, 212], np.float32)
        shade = (1.05 - 0.25 * r ** 2)[..., None]
        tex = gold * shade
        tex[(r > 0.78) & (r < 0.86)] *= 0.75  # embossed edge
        return tex.astype(np.float32)
    tex = np.full((size, size, 3), PAPER, np.float32)
    tex[(r > 0.55) & (r < 0.8)] = 25.0
    return tex


@lru_cache(maxsize=4)
def charuco_board(squares: tuple[int, int] = (7, 5), square_in: float = 1.25, marker_in: float = 0.9,
                  margin_in: float = 0.5, ppi: int = 96):
    """The intrinsics board of the physical spec and its printed image (with a white
    margin). Returns (board, texture, margin_in, ppi)."""
    d = cv2.aruco.getPredefinedDictionary(DICT_BOARD)
    board = cv2.aruco.CharucoBoard(squares, square_in, marker_in, d)
    sq_px = int(round(square_in * ppi))
    m_px = int(round(margin_in * ppi))
    size = (squares[0] * sq_px + 2 * m_px, squares[1] * sq_px + 2 * m_px)
    img = board.generateImage(size, marginSize=m_px, borderBits=1)
    return board, _ink(img), margin_in, ppi
