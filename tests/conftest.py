"""Shared fixtures: the bundled footage, the real pipeline calibrated on it (built once),
and a real HTTP server on 127.0.0.1 for a Flask app."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    """The tracker's caches (camera intrinsics, rendered corpus sets) go under this test
    run's own ``.pytest_cache``, never the user's ``~/.cache`` (xdist's workers inherit
    it, and so do the commands tests run)."""
    cache = getattr(config, "cache", None)
    if cache is not None:
        os.environ["XDG_CACHE_HOME"] = str(cache.mkdir("xdg-cache"))


def _footage_signature(folder: Path) -> tuple:
    """What a footage folder's table set-up is computed from, as file names, sizes and
    modification times (its top level and calib/): a folder changed in place is another
    key."""
    files = [p for d in (folder, folder / "calib") if d.is_dir() for p in d.iterdir() if p.is_file()]
    return tuple(sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files))


@pytest.fixture(scope="session", autouse=True)
def _table_setup_once_per_footage():
    """Each footage folder's table set-up (``calibrate_folder``: intrinsics, pose,
    terrain, background) is computed for real the first time a test worker asks, then
    handed out again (a shallow copy) to every pipeline built on the same unchanged
    folder under the same calibration cache: a hundred test pipelines are built on about
    fifty rendered tables, and each set-up costs 6-15 s. Errors are never kept."""
    import dataclasses

    from tracker import calibrate

    real = calibrate.calibrate_folder
    kept: dict[tuple, object] = {}

    def once(folder, config, *, progress: bool = False):
        folder = Path(folder)
        if not folder.is_dir():
            return real(folder, config, progress=progress)
        key = (str(folder.resolve()), os.environ.get("XDG_CACHE_HOME"), repr(config), _footage_signature(folder))
        if key not in kept:
            kept[key] = real(folder, config, progress=progress)
        return dataclasses.replace(kept[key])

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(calibrate, "calibrate_folder", once)
        yield


@pytest.fixture(scope="session")
def footage() -> Path:
    """The bundled sample footage folder (game.yaml, calib/, clip)."""
    from tracker.sources import default_footage, footage_video

    folder = default_footage()
    if not (folder / "game.yaml").exists() or footage_video(folder) is None:
        pytest.fail(f"{folder}: the bundled sample footage (game.yaml + clip) is missing; render it first")
    return folder


@pytest.fixture(scope="session")
def calibrated(footage):
    """The real pipeline, calibrated once on the bundled footage."""
    from tracker.pipeline import Pipeline

    return Pipeline.from_footage(footage)


@pytest.fixture(scope="session")
def epic_pipeline():
    """The real pipeline, calibrated once on the bundled Epic-scale footage."""
    from tracker.pipeline import Pipeline

    folder = Path(__file__).resolve().parents[1] / "sample_footage" / "epic-demo"
    if not (folder / "game.yaml").exists():
        pytest.fail(f"{folder}: the bundled Epic footage is missing; run `tabletracker make-sample --epic`")
    return Pipeline.from_footage(folder)


EPIC_720P_SEED = 100047  # a tuning-split Epic table (benchmarks/corpus.py)
EPIC_UNSEEN_720P_SEED = 100147  # a tuning-split Epic table past those the stand refiner trained on
WHITE_RIMS_720P_SEED = 100002  # a tuning-split Warcry table: white rims on a pale mat
SKIN_UNIT_720P_SEED = 100007  # a tuning-split Epic table: a yellow unit the colour of skin
OVALS_720P_SEED = 100057  # a tuning-split mixed Warcry table: ovals whose rims read as round bases
PALE_MINI_1080P_SEED = 100078  # a tuning-split Warcry table: a white-rimmed 25 mm base like a white token
BLUE_DISC_720P_SEED = 100080  # a tuning-split Warcry table: a blue plain objective beside an unread tag
WHITE_EDGE_720P_SEED = 100092  # a tuning-split Warcry table: white rims on a pale mat, one by the edge
UNSURE_SIDES_720P_SEED = 100062  # a tuning-split Warcry table: purple and blue rims read as each other
MIXED_UNSEEN_720P_SEED = 100177  # a tuning-split mixed Warcry table past those the shape reader trained on
LIFTED_BASE_1080P_SEED = 100153  # a tuning-split mixed Warcry table: a white base on a platform over the floor's search
SAND_MAT_720P_SEED = 100000  # a tuning-split Warcry table: a sand mat, a hand's shadow, white rims and tags
HIDDEN_OVAL_1080P_SEED = 100001  # a tuning-split mixed Warcry table: an oval under its miniature by a tag


TABLE_CAMERAS = Path(__file__).resolve().parent / "table_cameras"


def _tuning_table(request, seed: int, kind: str, name: str, size: tuple[int, int] = (1280, 720),
                  frames: int = 1, boards: bool = False) -> Path:
    """The first ``frames`` frames (one unless said) of a tuning-split table at ``size``
    (1280x720 unless said), rendered once into pytest's cache (keyed by the shared
    renderer's code). A set's first frames depend on its length (a hand's path does), its
    empty table and camera do not. ``name`` says what the table shows, for the reader:
    tables are kept by seed, kind, size and frames, so fixtures naming one table share its
    render.

    Without ``boards``, a table whose camera is stored (``tests/table_cameras``, the
    intrinsics its board views give, by ``scripts/table_cameras.py``) is rendered without
    its board views and calibrated from the stored camera: the same camera, at a third of
    the cost. With ``boards`` (tests of calibrating from them), or with no stored camera,
    the whole set is rendered and its camera calibrated from its views."""
    import hashlib
    import sys
    import warnings

    from evalsets import SHARED

    repo = str(Path(__file__).resolve().parents[1])
    if repo not in sys.path:
        sys.path.insert(0, repo)  # benchmarks/ is not installed
    if not (SHARED / "eval" / "make_set.py").is_file():
        pytest.fail(f"{SHARED / 'eval'} is missing: the shared renderer must sit beside the repository")
    from benchmarks import corpus

    key = hashlib.sha1(b"".join((SHARED / "eval" / n).read_bytes() for n in ("render.py", "make_set.py")))
    root = request.config.cache.mkdir("tuning-tables") / key.hexdigest()[:12]
    camera = TABLE_CAMERAS / f"{kind}-{seed}-{size[0]}x{size[1]}.json"
    if not boards and camera.is_file():
        entry = corpus.Entry("tuning", seed, kind, *size, frames=frames, root=str(root / "stored-camera"))
        return corpus.render_with_camera(entry, camera)
    if not boards:
        warnings.warn(f"{camera.relative_to(repo)} is missing: rendering the table's board views and calibrating "
                      f"from them (slow); store its camera with python scripts/table_cameras.py {camera.stem}")
    entry = corpus.Entry("tuning", seed, kind, *size, frames=frames, root=str(root))
    assert not corpus.ensure([entry], jobs=1, progress=False)
    return entry.path


def _tuning_table_cached(request, tmp_path_factory, seed: int, kind: str, name: str, *args, **kw) -> tuple[Path, dict]:
    """``_tuning_table``'s folder and this test run's own calibration cache:
    ``(folder, {"XDG_CACHE_HOME": ...})``."""
    folder = _tuning_table(request, seed, kind, name, *args, **kw)
    return folder, {"XDG_CACHE_HOME": str(_run_calibration_cache(tmp_path_factory))}


def _run_calibration_cache(tmp_path_factory) -> Path:
    """A calibration cache (camera intrinsics, kept by the content of a folder's board
    views) fresh for this test run and shared by its workers: each rendered table's camera
    is computed once a run, never taken from an earlier run or from ~/.cache."""
    base = tmp_path_factory.getbasetemp()
    run = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # xdist: .../pytest-N/popen-gwK
    folder = run / "xdg-cache-tables"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def white_rims_720p_table(request, tmp_path_factory):
    """A Warcry table of the shared renderer at 1280x720 whose white side's rims are
    near its pale mat's colour (tuning seed 100002, two frames: tests of the second share
    the render), and a calibration cache: ``(folder, {"XDG_CACHE_HOME": ...})``."""
    return _tuning_table_cached(request, tmp_path_factory, WHITE_RIMS_720P_SEED, "warcry", "white-rims", frames=2)


@pytest.fixture(scope="session")
def sand_mat_720p_table(request, tmp_path_factory):
    """A Warcry table at 1280x720 on a sand mat (tuning seed 100000, all eight frames: the
    frames a hand reaches in depend on the set's length), and a calibration cache."""
    return _tuning_table_cached(request, tmp_path_factory, SAND_MAT_720P_SEED, "warcry", "sand-mat", frames=8)


@pytest.fixture(scope="session")
def epic_720p_table(request, tmp_path_factory):
    """An Epic table of the shared renderer at 1280x720 (four frames of tuning seed
    100047, rendered once into pytest's cache), and this run's calibration cache:
    ``(folder, {"XDG_CACHE_HOME": ...})``. Build the pipeline under that environment
    (``epic_720p``) so its camera is this run's, never from ~/.cache. With its board views:
    tests of the straight-edge calibration read them."""
    return _tuning_table_cached(request, tmp_path_factory, EPIC_720P_SEED, "epic", "stands-epic", frames=4,
                                boards=True)


def _first_frame(table: tuple[Path, dict], index: int = 0) -> tuple:
    """A rendered table's pipeline (calibrated under its own cache), its first frame (or
    frame ``index``) and that frame's truth."""
    import json

    import cv2

    from tracker.pipeline import Pipeline

    folder, env = table
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        pipe = Pipeline.from_footage(folder)
    truth = json.loads((folder / "truth.json").read_text())
    frame = cv2.imread(str(sorted((folder / "frames").iterdir())[index]))
    return pipe, frame, truth["frames"][index]


def _judged_with(pipe, frame, index: int = 0, **tunables):
    """One frame judged alone (``judge_still``) with the detector's ``tunables`` set as
    given, each put back after: its Detections."""
    det = pipe.detector
    before = {k: getattr(det, k) for k in tunables}
    for k, v in tunables.items():
        setattr(det, k, v)
    try:
        return pipe.judge_still(frame, index, 0.0).detections
    finally:
        for k, v in before.items():
            setattr(det, k, v)


@pytest.fixture(scope="module")
def epic_720p(epic_720p_table):
    """``epic_720p_table``'s pipeline (this module's own), first frame and its truth."""
    return _first_frame(epic_720p_table)


@pytest.fixture(scope="session")
def epic_unseen_720p_table(request, tmp_path_factory):
    """An Epic table of the shared renderer at 1280x720 that the learned stand refiner
    never saw (tuning seed 100147, past ``scripts/train_stand_refiner.py``'s first 34 Epic
    tables; its first five frames), and a calibration cache."""
    return _tuning_table_cached(request, tmp_path_factory, EPIC_UNSEEN_720P_SEED, "epic", "stands-unseen", frames=5)


@pytest.fixture(scope="session")
def mixed_unseen_720p_table(request, tmp_path_factory):
    """A mixed Warcry table of the shared renderer at 1280x720 that the learned shape
    reader never saw (tuning seed 100177, past ``scripts/train_shape_reader.py``'s first
    34 mixed tables; one frame), and a calibration cache."""
    return _tuning_table_cached(request, tmp_path_factory, MIXED_UNSEEN_720P_SEED, "warcry-mixed", "shapes-unseen")


@pytest.fixture(scope="session")
def skin_unit_720p_table(request, tmp_path_factory):
    """An Epic table of the shared renderer at 1280x720 whose yellow units, blurred with
    their miniatures, are skin-coloured patches of a hand's size (tuning seed 100007, one
    frame, no hand in it), and a calibration cache."""
    return _tuning_table_cached(request, tmp_path_factory, SKIN_UNIT_720P_SEED, "epic", "skin-unit")


@pytest.fixture(scope="session")
def ovals_720p_table(request, tmp_path_factory):
    """A mixed Warcry table of the shared renderer at 1280x720 whose ovals, their
    miniatures over a long side and an end, show rims that round bases fit (tuning seed
    100057, one frame: the first of its eight-frame set differs, a hand reaching in), and
    a calibration cache."""
    return _tuning_table_cached(request, tmp_path_factory, OVALS_720P_SEED, "warcry-mixed", "ovals-as-rounds")


@pytest.fixture(scope="session")
def pale_mini_1080p_table(request, tmp_path_factory):
    """A Warcry table of the shared renderer at 1920x1080 whose white side has 25 mm
    bases and whose one plain objective is white: a pale miniature on such a base shows
    a white token's face (tuning seed 100078, one frame), and a calibration cache."""
    return _tuning_table_cached(request, tmp_path_factory, PALE_MINI_1080P_SEED, "warcry", "pale-mini", (1920, 1080))


@pytest.fixture(scope="session")
def blue_disc_720p_table(request, tmp_path_factory):
    """A Warcry table of the shared renderer at 1280x720 with a blue plain objective and
    a tagged treasure whose tag is not read (tuning seed 100080, one frame), and a
    calibration cache."""
    return _tuning_table_cached(request, tmp_path_factory, BLUE_DISC_720P_SEED, "warcry", "blue-disc")


@pytest.fixture(scope="session")
def white_edge_720p_table(request, tmp_path_factory):
    """A Warcry table of the shared renderer at 1280x720, white rims on a pale mat (tuning
    seed 100092, two frames: in the second a white 32 mm base by the table's edge, 2 in
    from an objective, whose patch a token's disc fits as well as its own outline), and a
    calibration cache."""
    return _tuning_table_cached(request, tmp_path_factory, WHITE_EDGE_720P_SEED, "warcry", "white-edge", frames=2)


@pytest.fixture(scope="session")
def unsure_sides_720p_table(request, tmp_path_factory):
    """A Warcry table of the shared renderer at 1280x720 whose purple, blue and red rims,
    seen in part under their miniatures, are read as each other's (tuning seed 100062,
    one frame), and a calibration cache."""
    return _tuning_table_cached(request, tmp_path_factory, UNSURE_SIDES_720P_SEED, "warcry", "unsure-sides")


@pytest.fixture(scope="session")
def lifted_base_1080p_table(request, tmp_path_factory):
    """A mixed Warcry table of the shared renderer at 1920x1080 whose white 32 mm base on a
    platform shows, met with the floor's plane, as a white disc an inch off it, the colour
    of the table's one untagged objective (tuning seed 100153, one frame), and a
    calibration cache."""
    return _tuning_table_cached(request, tmp_path_factory, LIFTED_BASE_1080P_SEED, "warcry-mixed", "lifted-base",
                                (1920, 1080))


@pytest.fixture(scope="session")
def hidden_oval_1080p_table(request, tmp_path_factory):
    """A mixed Warcry table of the shared renderer at 1920x1080 whose red 75 x 42 mm oval
    shows only a thin crescent of rim under its miniature, a tagged objective touching it
    (tuning seed 100001, one frame), and a calibration cache."""
    return _tuning_table_cached(request, tmp_path_factory, HIDDEN_OVAL_1080P_SEED, "warcry-mixed", "hidden-oval",
                                (1920, 1080))


@pytest.fixture(scope="module")
def white_rims(white_rims_720p_table):
    """``white_rims_720p_table``'s pipeline (this module's own), first frame and its truth."""
    return _first_frame(white_rims_720p_table)


@pytest.fixture
def live_app(calibrated, footage, tmp_path):
    """``live_app(**config) -> app``: the web app playing the bundled footage through a
    fresh real pipeline, rulings in a SQLite file under tmp_path, once a frame with
    fighters has been processed. Its player is stopped when the test ends."""
    from webui import create_app, get_player, stop_player

    apps = []

    def make(**config):
        cfg = {"SOURCE": str(footage), "FOOTAGE": str(footage), "JUDGE_TOKEN": None,
               "PIPELINE": calibrated.fresh(),
               "DATABASE": str(tmp_path / f"webui{len(apps)}.sqlite")}
        cfg.update(config)
        app = create_app(cfg)
        apps.append(app)
        player = get_player(app)
        if player is not None and player.wait_until(lambda x: x.result.state.fighters, 90) is None:
            pytest.fail(f"the live player saw no fighters in 90 s ({player.last_error or 'no error'})")
        return app

    yield make
    for app in apps:
        stop_player(app)


@pytest.fixture
def serve_app():
    """``serve_app(app) -> base URL``: runs ``app`` on a real threaded HTTP server on
    127.0.0.1 (a free port) until the test ends."""
    from werkzeug.serving import make_server

    servers = []

    def start(app) -> str:
        server = make_server("127.0.0.1", 0, app, threaded=True)
        thread = threading.Thread(target=server.serve_forever, name="test-server", daemon=True)
        thread.start()
        servers.append((server, thread))
        return f"http://127.0.0.1:{server.server_port}"

    yield start
    for server, thread in servers:
        server.shutdown()
        thread.join(5)
        server.server_close()


CHROMIUM = os.environ.get("TABLETRACKER_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run"]


@pytest.fixture
def browser():
    """Debian's Chromium, headless, driven by the ``playwright`` package (its own browser
    download is not used). Missing, the browser tests fail with the fix, never skip."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} not found: the browser test needs Debian's Chromium "
                    f"(apt-get install -y chromium) or TABLETRACKER_CHROMIUM=/path/to/chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the browser test needs the Python package 'playwright' (pip install playwright; "
                    "no 'playwright install' needed: it drives /usr/bin/chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def open_page(browser, live_app, serve_app):
    """``open_page(path, **new_page_options)``: the live app (bundled footage, real
    pipeline) served on 127.0.0.1 and a Chromium page opened on ``path``, collecting page
    errors. Returns (app, url, page, errors); the player stops when the test ends."""

    def open_(path: str = "/", **options):
        app = live_app()
        url = serve_app(app)
        page = browser.new_page(**options)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url + path, wait_until="domcontentloaded")
        return app, url, page, errors

    return open_

