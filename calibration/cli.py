"""Command-line calibration: ``calibrate-camera`` and ``calibrate-table`` (click commands;
the lead registers them on the ``tabletracker`` group)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import click
import cv2
import numpy as np

from tracker.errors import SourceError
from tracker.outputs import check_image_output, check_output, write_output

from .boards import parse_board
from .camera import Intrinsics
from .intrinsics import VIDEO_EXTS, _flags
from .intrinsics import calibrate_camera as _calibrate
from .lens_model import LensModel
from .table import estimate_table_pose

__all__ = ["calibrate_camera", "calibrate_table", "read_still"]


def read_still(path: str | Path, frames: int = 15) -> np.ndarray:
    """An image, or the per-pixel median of up to ``frames`` frames of a video (hands and
    noise averaged out)."""
    p = Path(path)
    if not p.exists():
        raise SourceError(f"{p}: no such file")
    if p.suffix.lower() in VIDEO_EXTS:
        cap = cv2.VideoCapture(str(p))
        if not cap.isOpened():
            raise SourceError(f"{p}: cannot open this video")
        n = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
        want = set(np.linspace(0, max(n - 1, 0), frames).round().astype(int).tolist()) if n > 0 else None
        imgs, i = [], 0
        while True:
            ok, f = cap.read()
            if not ok:
                break
            if want is None or i in want:
                imgs.append(f)
            i += 1
            if want is None and len(imgs) >= frames:
                break
        cap.release()
        if not imgs:
            raise SourceError(f"{p}: no frames could be read from this video")
        return np.median(np.stack(imgs), axis=0).astype(np.uint8)
    from tracker.sources import read_picture

    img, why = read_picture(p)  # a JPEG cut short is refused too (its missing part would be grey)
    if img is None:
        raise SourceError(f"{p}: {why}; give a whole picture (copy or take it again)")
    return img


@click.command("calibrate-camera")
@click.argument("images_or_video", nargs=-1, required=True, type=click.Path())
@click.option("--board", "board_spec", default="charuco", show_default=True,
              help="charuco | chessboard:COLSxROWS:SIZE (inner corners) | circles:COLSxROWS:SPACING")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False), help="camera.json to write")
@click.option("--fix-principal-point", is_flag=True,
              help="keep the principal point at the image centre (any of these four flags: your lens model, "
                   "not one chosen by held-out views)")
@click.option("--fix-aspect-ratio", is_flag=True, help="keep fx = fy")
@click.option("--zero-tangent", is_flag=True, help="no tangential distortion (p1 = p2 = 0)")
@click.option("--fix-k3", is_flag=True, help="no k3 term")
@click.option("--coverage", type=click.Path(dir_okay=False), default=None, help="write a picture of where the corners fell")
@click.option("--game", type=click.Path(), default=None, help="game config whose calibration_board to use for 'charuco'")
def calibrate_camera(images_or_video, board_spec, out, fix_principal_point, fix_aspect_ratio, zero_tangent, fix_k3,
                     coverage, game):
    """Calibrate the camera from IMAGES_OR_VIDEO (files, a folder, or a video) of a board."""
    # Where the results go is checked first: the calibration is not lost to a bad path.
    check_output(out, "--out")
    if coverage:
        check_image_output(coverage, "--coverage")
    cfg_board = None
    if game:
        from tracker.config import GameConfig
        cfg_board = GameConfig.load(game).calibration_board
    board = parse_board(board_spec, cfg_board)
    sources = list(images_or_video) if len(images_or_video) > 1 else images_or_video[0]
    # Without flags the lens model is chosen by held-out views; with any, it is the user's.
    given = {"--fix-principal-point": fix_principal_point, "--fix-aspect-ratio": fix_aspect_ratio,
             "--zero-tangent": zero_tangent, "--fix-k3": fix_k3}
    asked = [k for k, v in given.items() if v]
    model = "auto" if not asked else LensModel(
        "given", _flags(fix_principal_point, fix_aspect_ratio, zero_tangent, fix_k3), " ".join(asked))
    res = _calibrate(sources, board, fix_principal_point=fix_principal_point, fix_aspect_ratio=fix_aspect_ratio,
                     zero_tangent=zero_tangent, fix_k3=fix_k3, progress=True, echo=click.echo, lens_model=model)
    write_output(out, json.dumps(res.intrinsics.to_dict(), indent=1), "--out")
    click.echo(res.summary())
    for line in res.model_lines():
        click.echo(line)
    for w in res.warnings:
        click.echo(f"warning: {w}")
    if res.coverage_fraction < 0.5:
        click.echo("warning: the corners cover less than half of the image; add views near the edges and corners")
    if coverage:
        if not cv2.imwrite(str(coverage), res.coverage):
            raise SourceError(f"--coverage {coverage}: cannot write the coverage picture; give another path "
                              f"(camera calibration written to {out})")
    click.echo(f"wrote {out}")


@click.command("calibrate-table")
@click.argument("image_or_video", type=click.Path())
@click.option("--camera", "camera", type=click.Path(dir_okay=False), default=None,
              help="camera.json from calibrate-camera (without it: homography, no lens, no heights)")
@click.option("--game", "game", required=True, type=click.Path(), help="game.yaml (table markers, terrain)")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False), help="table.json to write")
def calibrate_table(image_or_video, camera, game, out):
    """Find the table pose from the table markers in IMAGE_OR_VIDEO."""
    check_output(out, "--out")  # first: the pose is not lost to a bad path
    from tracker.config import GameConfig
    cfg = GameConfig.load(game)
    img = read_still(image_or_video)
    intr = None
    if camera:
        intr = Intrinsics.from_json(camera)
        intr.check_image_size((img.shape[1], img.shape[0]))
    # Found once, full resolution (as estimate_table_pose would): the pose and the
    # picture's sharpness below both read them.
    from calibration.markers import detect_markers
    markers = detect_markers(img, cfg.table.dictionary, refine=True, downscale=1.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pose = estimate_table_pose(img, intr, cfg.table, terrain=None, detections=markers)
    for w in caught:
        click.echo(f"warning: {w.message}")
    write_output(out, json.dumps(pose.to_dict(), indent=1), "--out")
    if pose.markers_missing:
        click.echo(f"warning: table markers {list(pose.markers_missing)} not used (not seen or disagreeing)")
    msg = f"table pose from markers {list(pose.markers_used)}: reprojection error {pose.reprojection_error_px:.3f} px"
    if intr is not None:
        msg += f", camera at {np.round(pose.camera_position, 2).tolist()} in"
    click.echo(msg)
    # How sharp the photo is (the rims want a focused camera): read off the same markers.
    from tracker.calibrate import picture_blur, picture_warnings

    blur = picture_blur(cfg, img, markers)
    if blur is not None:
        click.echo(f"picture sharpness: edges blur over sigma {blur[1]:.2f} px ({blur[0]:.3f} in on the table)")
    for w in picture_warnings(blur):
        click.echo(f"warning: {w}")
    click.echo(f"wrote {out}")
