"""Calibrating a table from a footage folder: intrinsics, table pose, terrain (tagged
pieces from their tags, untagged ones from their footprints), background.

A footage folder holds ``game.yaml``, ``calib/`` (views of the calibration board) and
``table.jpg`` (the empty table; the clip's first frame stands in when it is missing).
Intrinsics take a few seconds to compute, so they are cached by the content of the
calibration views (``~/.cache/tabletracker``), never written into the footage folder.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from .config import GameConfig
from .errors import CalibrationError
from .sources import footage_video, open_source, read_picture
from .world import TerrainPiece


@dataclass
class TableSetup:
    """Everything fixed about one table and camera, ready for the per-frame pipeline."""

    camera: Any  # calibration.camera.CameraModel
    background: np.ndarray | None  # the empty table as this camera sees it
    terrain: tuple[TerrainPiece, ...]
    calibration_rms_px: float
    pose_error_px: float
    warnings: tuple[str, ...] = ()
    # Pieces with no tag, found by their footprint on the empty table (type "unknown"
    # until a judge types them; tracker.footprints). They are in ``terrain`` too.
    untagged: tuple[TerrainPiece, ...] = ()
    # The picture's blur on the table (Gaussian sigma, inches; picture_blur), None
    # when the markers' edges could not be read.
    blur_in: float | None = None


# Below this colour difference (CIE76, 8-bit Lab) between a side's rim paint and the mat,
# rims blend into the table once blur and light have dulled them.
RIM_CONTRAST_MIN = 60.0


def rim_contrasts(config: GameConfig, camera: Any, empty_table: np.ndarray) -> dict[str, float]:
    """Each side's rim colour difference (CIE76, 8-bit Lab) from the mat's median colour
    over the play area, by the side's colour name; empty when too little of the play
    area is in the picture to tell."""
    W, D = config.table.play_area_in
    xs, ys = np.meshgrid(np.linspace(0.5, W - 0.5, 40), np.linspace(0.5, D - 0.5, 30))
    uv = np.asarray(camera.project(np.column_stack([xs.ravel(), ys.ravel(), np.zeros(xs.size)])), np.float32)
    h, w = empty_table.shape[:2]
    ok = (uv[:, 0] >= 0) & (uv[:, 0] < w - 1) & (uv[:, 1] >= 0) & (uv[:, 1] < h - 1)
    if ok.sum() < 50:
        return {}
    samples = cv2.remap(empty_table, uv[ok, 0].reshape(-1, 1), uv[ok, 1].reshape(-1, 1), cv2.INTER_LINEAR)
    mat = np.median(cv2.cvtColor(samples, cv2.COLOR_BGR2LAB).reshape(-1, 3).astype(float), axis=0)
    out = {}
    for side in config.sides:
        rim = cv2.cvtColor(np.uint8([[side.rim_bgr]]), cv2.COLOR_BGR2LAB)[0, 0].astype(float)
        out[side.colour] = float(np.linalg.norm(rim - mat))
    return out


def rim_contrast_warnings(config: GameConfig, camera: Any, empty_table: np.ndarray) -> tuple[str, ...]:
    """One warning per side whose rim colour is close to the mat's own colour.

    >>> rim_contrast_warnings.__name__
    'rim_contrast_warnings'
    """
    return tuple(f"side '{colour}': rim colour is close to the mat's (colour difference {de:.0f}, "
                 f"want {RIM_CONTRAST_MIN:.0f}+); its fighters may be missed or placed less precisely "
                 f"- paint rims that stand out from the mat"
                 for colour, de in rim_contrasts(config, camera, empty_table).items() if de < RIM_CONTRAST_MIN)


# Softer than this (Gaussian sigma, pixels), the picture loses the rims it sees least of.
# The shared evaluation sets read 0.56-0.83 px and keep 99.7 % recall; 0.6 px more blur
# (0.77-1.00 px) takes it to 99.4 %, 1.2 px (1.18-1.37) to 98.6 % (benchmarks/robustness.py).
# Pixels, not inches: rims are found and fitted in pixels, and the Epic sample, 0.047 in
# at 15 px an inch (0.7 px), keeps 99.75 %.
SOFT_PICTURE_PX = 0.95


def picture_blur(config: GameConfig, image: np.ndarray, markers: Any) -> tuple[float, float] | None:
    """How soft ``image`` is: the blur across its ArUco markers' printed edges
    (calibration.sharpness.edge_blur_px), as (sigma on the table in inches, sigma in
    pixels). The table markers' sizes give the pixels an inch there. None when too few
    edges could be read."""
    from calibration.sharpness import edge_blur_px

    sizes = {m.id: m.size_in for m in config.table.markers}
    scale = [float(np.mean([np.hypot(*(c[k] - c[(k + 1) % 4])) for k in range(4)])) / sizes[int(i)]
             for i, c in zip(markers.ids, markers.corners) if int(i) in sizes]
    sigma = edge_blur_px(image, markers.corners) if len(markers) else None
    if sigma is None or not scale:
        return None
    return sigma / float(np.median(scale)), sigma


def picture_warnings(blur: tuple[float, float] | None, lead: str = "the picture is soft") -> tuple[str, ...]:
    """A warning if the picture (``picture_blur``) is softer than SOFT_PICTURE_PX,
    starting with ``lead`` (set-up's; the calibration page's and a round's say when).

    >>> picture_warnings((0.05, 1.4))[0][:30]
    'the picture is soft: its edges'
    >>> picture_warnings((0.02, 0.5))
    ()
    """
    if blur is None or blur[1] <= SOFT_PICTURE_PX:
        return ()
    return (f"{lead}: its edges blur over sigma {blur[1]:.2f} px ({blur[0]:.3f} in on the table; "
            f"want {SOFT_PICTURE_PX:.2f} px or less); rims half hidden by miniatures may be missed "
            f"- focus the camera",)


def _cache_dir() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tabletracker"
    root.mkdir(parents=True, exist_ok=True)
    return root


def intrinsics_for_folder(folder: Path, config: GameConfig, progress: bool = False):
    from calibration.boards import board_from_config
    from calibration.camera import Intrinsics
    from calibration.intrinsics import calibrate_camera

    calib = folder / "calib"
    if (folder / "camera.json").exists():
        return Intrinsics.from_json(folder / "camera.json")
    views = sorted(p for p in calib.glob("*") if p.suffix.lower() in (".jpg", ".jpeg", ".png")) if calib.is_dir() else []
    if not views:
        raise CalibrationError(f"{folder}: no calib/ views of the calibration board and no camera.json; "
                               f"add board photos to calib/ or run calibrate-camera")
    h = hashlib.sha256(b"v10")  # (v10: one line an edge, fitted always; v9: no edges along the picture's border; v8: straight edges, marker pictures of the table photo; v5: outlines)
    photo = empty_table_photo(folder)
    for p in views + ([photo] if photo is not None else []):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    cached = _cache_dir() / f"camera-{h.hexdigest()[:16]}.json"
    if cached.exists():
        try:
            return Intrinsics.from_json(cached)
        except Exception:  # a damaged cache file is recomputed, not fatal
            cached.unlink(missing_ok=True)
    # A folder of footage is what the user has: a focal length known only roughly is
    # taken, its uncertainty carried into every position's sigma and named in a warning
    # (focal_warnings), rather than the table refused; on the floor the table markers'
    # pose absorbs most of it, on terrain it shows.
    from calibration.intrinsics import MAX_FOCAL_SIGMA

    board = board_from_config(config.calibration_board)
    with_markers = False
    detected: dict = {}  # (each view's board, found once for every calibration below)
    try:
        result = calibrate_camera(views, board, progress=progress, max_focal_sigma=FOOTAGE_MAX_FOCAL_SIGMA,
                                  detected=detected)
    except CalibrationError:
        # Boards too few or too small to fix the focal length at all (nine views of a
        # board 150 px across at 720p: fx 529 +- 145): the table markers may still settle
        # it; if they do not, the boards' own error stands.
        extra = _table_marker_view(photo, config)
        if not extra:
            raise
        result = calibrate_camera(views, board, progress=progress, max_focal_sigma=FOOTAGE_MAX_FOCAL_SIGMA,
                                  extra_views=extra, detected=detected)
        with_markers = True
    intr = result.intrinsics
    if intr.std is not None and len(intr.std) and intr.std[0] > MAX_FOCAL_SIGMA * intr.fx and not with_markers:
        # Boards that leave the lens weakly known: the table markers (tags, placed less
        # finely than a board's corners, so not used when the boards suffice) add the
        # picture's edges, where small boards say least about the distortion.
        extra = _table_marker_view(photo, config)
        if extra:
            result = calibrate_camera(views, board, progress=progress, max_focal_sigma=FOOTAGE_MAX_FOCAL_SIGMA,
                                      extra_views=extra, detected=detected)
    intr = _straightened(result, photo, config)
    # Written whole or not at all: a second tracker on this machine may read it meanwhile.
    part = cached.with_name(f".{cached.name}.{os.getpid()}")
    intr.to_json(part)
    os.replace(part, cached)
    return intr


def _straightened(result, photo: Path | None, config: GameConfig):
    """The board calibration refined by the straight edges of the empty-table photo
    (``calibration.straight_edges``): the table's and the mat's edges span the picture,
    where small boards say least about the lens. The table markers join the fit as one
    more view: edges pin the distortion, not the focal length, and with a wide lens a
    focal length 8 % off puts the floor 0.3 in off once the distortion is right. Twice:
    the second look finds the edges in a picture the first fit straightened. Always fitted
    when there are edges, even ones the boards' lens already leaves straight: straight
    edges under a lens whose centre or decentring the boards got wrong (on 40 Epic tuning
    tables skipping those put the floor 0.065 in RMS off the true camera, against 0.041 in
    fitted). Unchanged without a photo, with fewer than MIN_EDGES long edges or with fewer
    than three table markers."""
    from calibration.straight_edges import MIN_EDGES, find_straight_edges, refine_with_straight_edges

    intr = result.intrinsics
    gray = None if photo is None else cv2.imread(str(photo), cv2.IMREAD_GRAYSCALE)
    if gray is None or (gray.shape[1], gray.shape[0]) != tuple(intr.image_size):
        return intr
    edges = find_straight_edges(gray, intr)
    if len(edges) < MIN_EDGES:
        return intr  # no edges to learn from
    names = [n for n in result.views_used if n in result.points and n in result.extrinsics]
    views = [result.points[n] for n in names]
    poses = [result.extrinsics[n] for n in names]
    if "table markers" not in names:
        extra = _table_marker_view(photo, config)
        if not extra:
            return intr
        _, obj, img = extra[0]
        ok, rvec, tvec = cv2.solvePnP(obj.astype(np.float64), img.astype(np.float64), intr.K, intr.dist)
        if not ok:
            return intr
        views.append((obj, img))
        poses.append((rvec.ravel(), tvec.ravel()))
    for look in range(2):
        if look:
            edges = find_straight_edges(gray, intr)
        fit = refine_with_straight_edges(intr, views, poses, edges)
        if fit is None:
            break
        intr = fit.intrinsics
    return intr


def _table_marker_view(photo: Path | None, config: GameConfig) -> list:
    """The table markers in the empty-table ``photo`` as one more planar view of known
    geometry: 16 corners at the picture's edges, where small boards say least about the
    lens's distortion. Empty without a photo or with fewer than 3 markers read."""
    from calibration.markers import detect_markers, fit_marker_pictures
    from calibration.table import table_object_points

    img = None if photo is None else cv2.imread(str(photo), cv2.IMREAD_GRAYSCALE)
    if img is None:
        return []
    det = fit_marker_pictures(img, detect_markers(img, config.table.dictionary, downscale=1.0), config.table.dictionary)
    known = {m.id for m in config.table.markers}
    keep = [k for k, i in enumerate(det.ids) if int(i) in known]
    if len(keep) < 3:
        return []
    obj = table_object_points(config.table, [int(det.ids[k]) for k in keep]).reshape(-1, 3)
    return [("table markers", obj, det.corners[keep].reshape(-1, 2))]


# calibrate_camera's refusal threshold for a footage folder's calib/ (the command
# calibrate-camera keeps calibration.intrinsics.MAX_FOCAL_SIGMA: there the user can re-shoot).
FOOTAGE_MAX_FOCAL_SIGMA = 0.25


def focal_warnings(intr) -> tuple[str, ...]:
    """A warning when the focal length is known to worse than MAX_FOCAL_SIGMA.

    >>> from calibration.camera import Intrinsics
    >>> import numpy as np
    >>> K = np.array([[500., 0, 640], [0, 500, 360], [0, 0, 1]])
    >>> focal_warnings(Intrinsics(K, np.zeros(5), (1280, 720), 0.1, np.r_[40, 40, 1, 1, 0, 0, 0, 0, 0]))[0][:44]
    'the focal length is known only to ± 8 % (fx '
    >>> focal_warnings(Intrinsics(K, np.zeros(5), (1280, 720), 0.1, np.r_[2, 2, 1, 1, 0, 0, 0, 0, 0]))
    ()
    """
    from calibration.intrinsics import MAX_FOCAL_SIGMA

    if intr.std is None or len(intr.std) == 0 or intr.fx <= 0:
        return ()
    rel = float(intr.std[0]) / intr.fx
    if rel <= MAX_FOCAL_SIGMA:
        return ()
    return (f"the focal length is known only to ± {100 * rel:.0f} % (fx {intr.fx:.0f} ± {intr.std[0]:.0f} px): "
            f"positions on terrain carry it in their margins; photograph the board closer to the camera, "
            f"tilted 20-40 degrees, for a better calibration",)


def empty_table_photo(folder: Path) -> Path | None:
    """The folder's photo of the empty table (table.jpg or table.png), if it has one."""
    return next((folder / n for n in ("table.jpg", "table.png") if (folder / n).exists()), None)


def empty_table_image(folder: Path) -> tuple[np.ndarray, bool]:
    """The empty-table picture, or the clip's first frame (second value False)."""
    photo = empty_table_photo(folder)
    if photo is not None:
        img, why = read_picture(photo)  # a JPEG cut short too: its missing part would be grey
        if img is None:
            raise CalibrationError(f"{photo}: {why}; re-take or copy again the empty-table photo")
        return img, True
    clip = footage_video(folder)
    if clip is None:
        raise CalibrationError(f"{folder}: no table.jpg and no clip to take the table from")
    with open_source(clip) as src:
        for _, _, frame in src:
            return frame, False
    raise CalibrationError(f"{clip}: no frames")


def calibrate_folder(folder: str | Path, config: GameConfig, *, progress: bool = False) -> TableSetup:
    from calibration.camera import CameraModel
    from calibration.markers import detect_markers
    from calibration.table import estimate_table_pose

    from .footprints import find_untagged
    from .terrain import terrain_from_markers

    folder = Path(folder)
    intr = intrinsics_for_folder(folder, config, progress=progress)
    table_img, is_empty = empty_table_image(folder)
    # Full resolution: done once per set-up, and tags seen from far up are small (a
    # half-size search read 3 of the Epic sample's 4 terrain tags and 3 of its 4 table markers).
    intr.check_image_size((table_img.shape[1], table_img.shape[0]))
    markers = detect_markers(table_img, config.table.dictionary, downscale=1.0)
    pose = estimate_table_pose(table_img, intr, config.table, terrain=config.terrain_library or None,
                               detections=markers)
    camera = CameraModel(intr, pose)
    terrain = terrain_from_markers(markers.ids, markers.corners, camera, config)
    # Untagged pieces: once per table set-up, from the empty table (or the clip's first
    # frame standing in for it).
    untagged = find_untagged(camera, table_img, config, terrain, list(markers.corners))
    blur = picture_blur(config, table_img, markers)
    return TableSetup(camera=camera, background=table_img if is_empty else None, terrain=terrain + untagged,
                      calibration_rms_px=float(intr.rms_px), pose_error_px=float(pose.reprojection_error_px),
                      warnings=(focal_warnings(intr) + rim_contrast_warnings(config, camera, table_img)
                                + picture_warnings(blur)),
                      untagged=untagged, blur_in=None if blur is None else blur[0])
