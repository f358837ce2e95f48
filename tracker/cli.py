"""The ``tabletracker`` command.

User mistakes (a missing file, a corrupt video, a config with a typo, a camera that
does not open) end with one line ``error: ...`` naming the problem and the fix, and
exit status 2; never a traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from .errors import UserError
from .outputs import check_output, write_output


class _Group(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except UserError as e:
            click.echo(f"error: {e}", err=True)
            ctx.exit(e.exit_code)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tabletop-tracker")
def main() -> None:
    """Tabletop tracker: calibrate an overhead camera, track a miniature game, referee it."""


@main.command("track")
@click.argument("source", type=click.Path())
@click.option("--game", type=click.Path(), default=None, help="game.yaml (default: the one in SOURCE's folder)")
@click.option("--camera", "camera_json", type=click.Path(dir_okay=False), default=None,
              help="camera.json from calibrate-camera (default: calibrate from SOURCE/calib)")
@click.option("--table", "table_json", type=click.Path(dir_okay=False), default=None,
              help="table.json from calibrate-table (default: from SOURCE/table.jpg)")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="track.json: world state per frame and events")
@click.option("--eval-output", type=click.Path(dir_okay=False), default=None,
              help="predictions in the format of shared/eval (score with its score.py)")
@click.option("--max-frames", type=click.IntRange(min=1), default=None, help="stop after this many frames")
@click.option("--stills/--clip", default=None,
              help="judge each picture on its own (default for a folder of images: a judge's photos) "
                   "or track the pictures as one clip's consecutive frames (default for a video)")
@click.option("--progress/--no-progress", default=True, show_default=True)
def track(source, game, camera_json, table_json, out, eval_output, max_frames, stills, progress):
    """Track SOURCE: a footage folder (game.yaml, calib/, table.jpg and clip.mp4 or
    frames/), a video file or an image folder (then give --game, --camera, --table).
    Photographs (an image folder) are judged one by one, each state complete on its own."""
    from tqdm import tqdm

    from .pipeline import Pipeline
    from .sources import open_source

    src_path = Path(source)
    # Where the results go is checked first: a run of minutes is not lost to a bad --out.
    if out:
        check_output(out, "--out")
    if eval_output:
        check_output(eval_output, "--eval-output")
    if camera_json or table_json:
        if not (camera_json and table_json and game):
            raise UserError("give --game, --camera and --table together (or a footage folder alone)")
        pipe = Pipeline.from_files(game, camera_json, table_json)
    else:
        if not src_path.is_dir():
            raise UserError(f"{source}: for a single video give --game, --camera and --table, "
                            f"or point at a footage folder with game.yaml, calib/ and table.jpg")
        from .config import CONFIG_FILES

        if not any((src_path / n).exists() for n in CONFIG_FILES):  # (GameConfig's own message: --game alone)
            raise UserError(f"{source}: no game.yaml or setup.json in this folder; point at a footage folder "
                            f"(game.yaml, calib/, table.jpg) or give --game, --camera and --table")
        pipe = Pipeline.from_footage(src_path, progress=progress)
    for w in pipe.setup.warnings:
        click.echo(f"warning: {w}", err=True)
    src = open_source(source)
    src.on_skip = lambda msg: tqdm.write(f"warning: {msg}", file=sys.stderr)  # a cut-short JPEG...
    if stills is None:
        stills = src.frame_files is not None
    if eval_output and not stills:
        # Evaluation measures what each frame shows: look at the whole table in every frame.
        pipe.full_every = 1
    judge = pipe.judge_still if stills else pipe.process
    states, preds = [], []
    error: UserError | None = None
    total = src.frame_count if max_frames is None else min(max_frames, src.frame_count or max_frames)
    try:
        for index, t, frame in tqdm(src, total=total, unit="frame", disable=not progress, desc="tracking"):
            if max_frames is not None and index >= max_frames:
                break
            r = judge(frame, index, t)
            states.append(r.state.to_dict())
            preds.append(_eval_frame(r))
    except UserError as e:  # a truncated video: keep and write what was tracked
        error = e
    finally:
        src.close()
    if out:
        write_output(out, json.dumps({"frames": states, "events": [] if stills else pipe.tracker.events_as_dicts(),
                                      "skipped_frames": src.skipped,
                                      "skipped_files": {str(k): v for k, v in src.skipped_files.items()}},
                                     indent=1), "--out")
    if eval_output:
        write_output(eval_output, json.dumps({"frames": preds}), "--eval-output")
    click.echo(f"tracked {len(states)} frames" + (f", skipped {src.skipped} unreadable" if src.skipped else "")
               + (f"; wrote {out}" if out else "") + (f"; wrote {eval_output}" if eval_output else ""), err=True)
    if error is not None:
        raise error


def _eval_frame(r) -> dict:
    """One frame in the shared/eval prediction format: what this frame shows (the
    detections), not the tracker's memory, so the score measures seeing."""
    from .detection import KIND_BASE, KIND_NAMES

    d = r.detections
    return {"frame": r.index,
            "fighters": [{"x": float(x), "y": float(y), "z": float(z), "team": int(s)}
                         for (x, y, z), s, k in zip(d.xyz, d.side, d.kind) if k == KIND_BASE],
            "tokens": [{"kind": KIND_NAMES[int(k)], "x": float(x), "y": float(y)}
                       for (x, y, _), k in zip(d.xyz, d.kind) if k != KIND_BASE]}


@main.command("make-sample")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="folder (default: sample_footage/warcry-demo, or epic-demo with --epic)")
@click.option("--epic", is_flag=True, help="the Epic-scale sample (180 x 120 cm, 40 x 20 mm stands)")
def make_sample(out, epic):
    """Regenerate the bundled sample footage (deterministic)."""
    from .synthetic.make_sample import main as make

    make.callback(Path(out) if out else None, epic)


def _register() -> None:
    from calibration.cli import calibrate_camera, calibrate_table
    from webui.cli import serve

    from .rules.cli import rule

    for cmd in (serve, calibrate_camera, calibrate_table, rule):
        main.add_command(cmd)


_register()

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
