"""Ray-primitive intersections, vectorised over pixels (numpy, float32).

Every function takes ray origins ``o = (ox, oy, oz)`` and directions ``d = (dx, dy, dz)``
that broadcast against each other (scalars or arrays of one image region) and returns
the ray parameter ``t`` (``inf`` where missed) plus the world normal at the hit.
Exact analytic intersections, so outlines land where OpenCV projects them.
"""

from __future__ import annotations

import numpy as np

INF = np.float32(np.inf)
EPS = 1e-4


def _safe_inv(a: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(a == 0, np.float32(1e30), 1.0 / np.where(a == 0, 1, a)).astype(np.float32)


def hit_plane_z(o, d, z: float):
    """Horizontal plane at height ``z`` (hit from above or below)."""
    ox, oy, oz = o
    dx, dy, dz = d
    t = (z - oz) * _safe_inv(dz)
    return np.where(t > EPS, t, INF).astype(np.float32)


def hit_box(o, d, cx: float, cy: float, theta: float, hx: float, hy: float, z0: float, z1: float):
    """A box turned ``theta`` (rad) about z: |local x| <= hx, |local y| <= hy, z0 <= z <= z1.
    Returns t, (nx, ny, nz) and the face index (0/1: +-x, 2/3: +-y, 4: top, 5: bottom)."""
    ox, oy, oz = o
    dx, dy, dz = d
    c, s = np.float32(np.cos(theta)), np.float32(np.sin(theta))
    lx = (ox - cx) * c + (oy - cy) * s
    ly = -(ox - cx) * s + (oy - cy) * c
    lz = oz - (z0 + z1) / 2
    hz = (z1 - z0) / 2
    ldx = dx * c + dy * s
    ldy = -dx * s + dy * c
    ts = []
    for lo, ld, h in ((lx, ldx, hx), (ly, ldy, hy), (lz, dz, hz)):
        inv = _safe_inv(ld)
        a = (-h - lo) * inv
        b = (h - lo) * inv
        ts.append((np.minimum(a, b), np.maximum(a, b)))
    tn = np.maximum(np.maximum(ts[0][0], ts[1][0]), ts[2][0])
    tf = np.minimum(np.minimum(ts[0][1], ts[1][1]), ts[2][1])
    hit = (tn <= tf) & (tf > EPS) & (tn > EPS)
    t = np.where(hit, tn, INF).astype(np.float32)
    # Which slab the entry point belongs to gives the face.
    axis = np.where(tn == ts[0][0], 0, np.where(tn == ts[1][0], 1, 2))
    lsign = np.where(axis == 0, -np.sign(ldx), np.where(axis == 1, -np.sign(ldy), -np.sign(dz)))
    lnx = np.where(axis == 0, lsign, 0).astype(np.float32)
    lny = np.where(axis == 1, lsign, 0).astype(np.float32)
    nz = np.where(axis == 2, lsign, 0).astype(np.float32)
    nx = lnx * c - lny * s
    ny = lnx * s + lny * c
    face = np.where(axis == 2, np.where(lsign > 0, 4, 5), axis * 2 + (lsign < 0))
    return t, (nx, ny, nz), face


def hit_cylinder(o, d, cx: float, cy: float, r: float, z0: float, z1: float):
    """Upright cylinder (a base or a token): side wall and top cap. Returns t, normal and
    a mask of hits on the top cap."""
    ox, oy, oz = o
    dx, dy, dz = d
    # Top cap.
    tc = (z1 - oz) * _safe_inv(dz)
    hx = ox + tc * dx - cx
    hy = oy + tc * dy - cy
    cap = (tc > EPS) & (hx * hx + hy * hy <= r * r)
    tcap = np.where(cap, tc, INF)
    # Side wall: entry root of |(o + t d - c)_xy| = r.
    px, py = ox - cx, oy - cy
    a = dx * dx + dy * dy
    b = 2 * (px * dx + py * dy)
    cc = px * px + py * py - r * r
    disc = b * b - 4 * a * cc
    with np.errstate(invalid="ignore", divide="ignore"):
        ts = (-b - np.sqrt(np.maximum(disc, 0))) / (2 * np.where(a == 0, 1e-30, a))
    zs = oz + ts * dz
    side = (disc >= 0) & (ts > EPS) & (zs >= z0) & (zs <= z1)
    tside = np.where(side, ts, INF)
    top = tcap <= tside
    t = np.minimum(tcap, tside).astype(np.float32)
    sx = (ox + ts * dx - cx) / r
    sy = (oy + ts * dy - cy) / r
    nx = np.where(top, 0, sx).astype(np.float32)
    ny = np.where(top, 0, sy).astype(np.float32)
    nz = np.where(top, 1, 0).astype(np.float32)
    return t, (nx, ny, nz), top & np.isfinite(t)


def hit_ellipsoid(o, d, centre, Minv: np.ndarray, zmin: float = -np.inf):
    """Ellipsoid {c + M u : |u| <= 1}, given M^-1. Hits below ``zmin`` are dropped (a
    miniature never reaches into its base)."""
    ox, oy, oz = o
    dx, dy, dz = d
    Mi = Minv.astype(np.float32)
    px, py, pz = ox - centre[0], oy - centre[1], oz - centre[2]
    qo = [Mi[i, 0] * px + Mi[i, 1] * py + Mi[i, 2] * pz for i in range(3)]
    qd = [Mi[i, 0] * dx + Mi[i, 1] * dy + Mi[i, 2] * dz for i in range(3)]
    a = qd[0] * qd[0] + qd[1] * qd[1] + qd[2] * qd[2]
    b = 2 * (qo[0] * qd[0] + qo[1] * qd[1] + qo[2] * qd[2])
    c = qo[0] * qo[0] + qo[1] * qo[1] + qo[2] * qo[2] - 1
    disc = b * b - 4 * a * c
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (-b - np.sqrt(np.maximum(disc, 0))) / (2 * a)
    ok = (disc >= 0) & (t > EPS)
    if np.isfinite(zmin):
        ok &= (oz + t * dz) >= zmin
    t = np.where(ok, t, INF).astype(np.float32)
    tu = np.where(ok, t, 0)
    u = [qo[i] + tu * qd[i] for i in range(3)]
    # Normal of the unit sphere mapped back: M^-T u.
    n = [Mi[0, i] * u[0] + Mi[1, i] * u[1] + Mi[2, i] * u[2] for i in range(3)]
    ln = np.sqrt(n[0] ** 2 + n[1] ** 2 + n[2] ** 2) + 1e-12
    return t, (n[0] / ln, n[1] / ln, n[2] / ln)


def hit_rect(o, d, origin, ex, ey, w: float, h: float):
    """Flat rectangle {origin + a ex + b ey : 0<=a<=w, 0<=b<=h} (ex, ey orthonormal).
    Returns t and the in-plane coordinates (a, b)."""
    ox, oy, oz = o
    dx, dy, dz = d
    n = np.cross(ex, ey)
    denom = dx * n[0] + dy * n[1] + dz * n[2]
    px, py, pz = ox - origin[0], oy - origin[1], oz - origin[2]
    t = -(px * n[0] + py * n[1] + pz * n[2]) * _safe_inv(denom)
    qx, qy, qz = px + t * dx, py + t * dy, pz + t * dz
    a = qx * ex[0] + qy * ex[1] + qz * ex[2]
    b = qx * ey[0] + qy * ey[1] + qz * ey[2]
    ok = (t > EPS) & (a >= 0) & (a <= w) & (b >= 0) & (b <= h)
    return np.where(ok, t, INF).astype(np.float32), a, b
