"""Train the learned base refiner (``tracker/vision/refiner.py``) on the tuning split.

    python scripts/train_base_refiner.py build [--first N]   # crops of true bases -> cache
    python scripts/train_base_refiner.py train [--epochs E]  # needs torch and onnx: pip install -e '.[train]'
    python scripts/train_base_refiner.py all                 # both, then writes the model

Only the tuning split's tables (``benchmarks/corpus.py``: its first 52 Warcry and mixed
Warcry tables at 720p and 1080p, seeds 100000-100085; the next 53, to 100173, are where
the tracker with and without it is compared) and our own renderer's (``tracker.synthetic``,
seeds 500000 on) are read; the reporting split never is. Each round base at least half in
sight gives crops (``vision.base_crops``) centred a random step off its true centre (half
within 0.15 in, half within 0.5 in), and one where the detector put it; the target is the
step back and the base's size, and that a base of the crop's rim colour is there. Crops
with none teach the last: each base under another side's colour, a step of 0.9-1.6 in off
it, random places of the floor, the detector's round bases that are none and the patches
it could not name (under each side's colour), all labelled by the truth (``_label``). The camera is the one the tracker calibrated itself (as at use), not the
renderer's. Tables are split by seed into training and validation (every tenth table),
and the validation error is printed per epoch. The model is written as ONNX to
``tracker/vision/models/base_refiner.onnx`` and run with OpenCV's DNN module, so using it
needs no torch.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.corpus import cache_dir, ensure, select  # noqa: E402
from tracker.vision.base_crops import CROP_PX, base_crop, camera_nadir, crop_axes  # noqa: E402
from tracker.vision.refiner import MODEL_PATH, SIZES_MM  # noqa: E402

DATA = cache_dir().parent / "refiner" / "crops.npz"
PER_BASE = 4
PRESENT_IN = 0.6  # a crop this near a base's centre holds it (its refiner reads the rest)
ABSENT_IN = 0.9  # ... and one this far from every base of its side holds none
RANDOM_PER_FRAME = 6


def _taught(f: dict) -> bool:
    """Whether a true fighter is a base the refiner is taught: round, of one of its sizes,
    at least half in sight."""
    return f["visible_fraction"] >= 0.5 and f.get("shape", "round") == "round" and float(f["base_mm"]) in SIZES_MM


def _round_bases(frame_truth: dict) -> list[dict]:
    """A truth frame's bases the refiner is taught (``_taught``)."""
    return [f for f in frame_truth["fighters"] if _taught(f)]


def _random_centres(bases: list[dict], rng: np.random.Generator) -> list[tuple[dict, np.ndarray]]:
    """(base, crop centre) ``PER_BASE`` times a base: a random step off its centre, every
    other one within 0.5 in, the rest within 0.15 in (uniform over the disc)."""
    out = []
    for f in bases:
        xy = np.array([f["x"], f["y"]])
        for k in range(PER_BASE):
            r = (0.15 if k % 2 else 0.5) * np.sqrt(rng.random())
            a = rng.random() * 2 * np.pi
            out.append((f, xy - r * np.array([np.cos(a), np.sin(a)])))
    return out


def _label(fighters: list[dict], side: int, c: np.ndarray) -> tuple[int, dict | None]:
    """Whether a crop of ``side``'s rim colour centred on ``c`` holds a base of that side:
    (1, the base) for a round base of the refiner's sizes, at least half in sight, within
    ``PRESENT_IN``; (-1, None), not taught, for any base of that side nearer than
    ``ABSENT_IN`` (or within its own length: an oval's end) or one mostly hidden; (0, None)
    otherwise: the crop shows no base of that side (bare table, terrain, a token, a
    miniature's shadow, another side's base)."""
    best = None
    for f in fighters:
        if f["team"] != side:
            continue
        d = float(np.hypot(f["x"] - c[0], f["y"] - c[1]))
        reach = max(ABSENT_IN, float(max(f.get("size_mm") or [f["base_mm"]])) / 25.4 / 2 + 0.3)
        if _taught(f) and d <= PRESENT_IN:
            return 1, f
        if d < reach:
            best = -1
    return (best, None) if best is not None else (0, None)


def _labelled(fighters: list[dict], side: int, c: np.ndarray, z: float) -> dict | None:
    """A crop to be taught (``_label``), or None for one not taught."""
    p, f = _label(fighters, side, c)
    return None if p < 0 else {"c": np.asarray(c, float), "z": z, "side": side, "f": f, "p": p}


def _negatives(fighters: list[dict], sides: list[int], area: tuple[float, float], rng: np.random.Generator) -> list[dict]:
    """Crops with no base of their side to find (labelled by ``_label``, so a base that
    happens to be there is taught as one): each base at least half in sight under another
    side's rim colour (the side is read from the rim, not the miniature's paint), a step
    of 0.9-1.6 in off it under its own, and ``RANDOM_PER_FRAME`` places of the floor."""
    out = []
    for f in filter(_taught, fighters):
        xy = np.array([f["x"], f["y"]])
        others = [s for s in sides if s != f["team"]]
        if others:
            r, a = 0.3 * np.sqrt(rng.random()), rng.random() * 2 * np.pi
            out.append(_labelled(fighters, int(rng.choice(others)), xy + r * np.array([np.cos(a), np.sin(a)]), f["z"]))
        r, a = 0.9 + 0.7 * rng.random(), rng.random() * 2 * np.pi
        out.append(_labelled(fighters, f["team"], xy + r * np.array([np.cos(a), np.sin(a)]), f["z"]))
    for _ in range(RANDOM_PER_FRAME):
        c = rng.random(2) * np.asarray(area, float)
        out.append(_labelled(fighters, int(rng.choice(sides)), c, 0.0))
    return [o for o in out if o is not None]


def _positives(bases: list[dict], rng: np.random.Generator) -> list[dict]:
    """``_random_centres`` as crops to be taught: each a base of its own side."""
    return [{"c": c, "z": f["z"], "side": f["team"], "f": f, "p": 1} for f, c in _random_centres(bases, rng)]


def _add_crops(into: tuple[list, list, list, list, list], items: list[dict], table: int, cam,
               frame: np.ndarray, empty: np.ndarray, lift: float, nadir: np.ndarray, colour: dict) -> None:
    """Each crop's pixels (uint8), its target (the step back to its base's centre along the
    crop's columns and rows, inches; 0 with no base), its base's size index (-1 with
    none), whether a base of its side is there (1 / 0) and its table, appended."""
    X, Y, S, P, T = into
    for it in items:
        c, f = it["c"], it["f"]
        across, away = crop_axes(c, nadir)
        d = np.array([f["x"], f["y"]]) - c if f is not None else np.zeros(2)
        X.append((base_crop(cam, frame, empty, c, it["z"] + lift, nadir, colour[it["side"]]) * 255).round().astype(np.uint8))
        Y.append((float(d @ across), float(d @ away)))
        S.append(SIZES_MM.index(float(f["base_mm"])) if f is not None else -1)
        P.append(it["p"])
        T.append(table)


def build(first: int, cached_only: bool = False, with_detections: bool = True, own_tables: int = 40,
          seed: int = 0) -> None:
    from tracker.pipeline import Pipeline

    es = select("tuning", first, ["warcry", "warcry-mixed"], ["720p", "1080p"])
    if not cached_only:
        failed = ensure(es, jobs=2)
        es = [e for e in es if e not in failed]
    es = [e for e in es if e.cached()]
    rng = np.random.default_rng(seed)
    X, Y, S, P, T = [], [], [], [], []
    t0 = time.time()
    for ti, e in enumerate(es):
        folder = e.path
        truth = json.loads((folder / "truth.json").read_text())
        pipe = Pipeline.from_footage(folder)
        det = pipe.detector
        cam = det.camera
        nadir = camera_nadir(cam)
        empty = cv2.imread(str(folder / "table.jpg"))
        colour = {s.index: np.asarray(det.light.as_seen(s.rim_bgr), np.float32) for s in det.config.sides}
        sides = sorted(colour)
        lift = det.config.base_thickness_in
        files = sorted((folder / "frames").iterdir())
        n0 = len(X)
        for fr in truth["frames"]:
            frame = cv2.imread(str(files[int(fr["frame"])]))
            fighters = fr["fighters"]
            items = _positives(_round_bases(fr), rng) + _negatives(fighters, sides, det.config.table.play_area_in, rng)
            if with_detections:
                # Where the detector itself put bases and the patches it could not name
                # (its errors, not only random ones), under each side's colour for a
                # patch; the refiner's own moves left out.
                det.refiner = None
                found = pipe.judge_still(frame, int(fr["frame"]), 0.0).detections
                for j in np.flatnonzero((found.kind == 0) & (found.shape == 0)):
                    items.append(_labelled(fighters, int(found.side[j]), found.xyz[j, :2].copy(), float(found.xyz[j, 2])))
                for dbt in found.doubts:
                    for si in sides:
                        items.append(_labelled(fighters, si, np.array([dbt.x, dbt.y]), float(dbt.z)))
            _add_crops((X, Y, S, P, T), [it for it in items if it is not None], ti, cam, frame, empty, lift, nadir, colour)
        print(f"{ti + 1}/{len(es)} {e.name}: {len(X) - n0} crops ({time.time() - t0:.0f} s)", flush=True)
    n0 = len(X)
    own(own_tables, X, Y, S, P, T, len(es), rng)
    print(f"{len(X) - n0} crops from {own_tables} tables of our own renderer ({time.time() - t0:.0f} s)")
    DATA.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(DATA, x=np.array(X), y=np.array(Y, np.float32), size=np.array(S), present=np.array(P, np.int8),
                        table=np.array(T))
    print(f"{len(X)} crops from {len(es)} tables -> {DATA}")


def own(n_tables: int, X: list, Y: list, S: list, P: list, T: list, t0: int, rng: np.random.Generator) -> None:
    """Crops from our own renderer (``tracker.synthetic``; seeds 500000 on, which no test
    or sample uses), as ``build`` makes them, through the renderer's true camera: another
    look at mats, rims, miniatures and light, so that the refiner learns rims, not one
    renderer's drawing of them."""
    from tracker.synthetic import overhead_camera, plan_game, render_still
    from tracker.synthetic.game import BASE_THICKNESS_IN, Sensor
    from tracker.synthetic.scene import Renderer

    for k in range(n_tables):
        r = np.random.default_rng(500000 + k)
        w, h = ((1280, 720), (1920, 1080))[k % 2]
        game = plan_game(r, seconds=6.0, n_fighters=int(r.integers(8, 17)), hands=False)
        cam = overhead_camera(r, w, h)
        renderer = Renderer(game.table, cam, 2)
        sensor = Sensor.random(r)
        empty = sensor.apply(renderer.render([])[0].astype(np.float32), r)
        nadir = cam.position[:2]
        colour = {s["index"]: np.asarray(s["rim_bgr"], np.float32) for s in game.sides}
        for t in (0.0, 3.0, 6.0):
            frame, truth = render_still(game, cam, t, sensor=sensor, seed=int(r.integers(1 << 30)), renderer=renderer)
            items = _positives(_round_bases(truth), rng) + _negatives(
                truth["fighters"], sorted(colour), game.table.play_area_in, rng)
            _add_crops((X, Y, S, P, T), items, t0 + k, cam, frame, empty, BASE_THICKNESS_IN, nadir, colour)


def train(epochs: int, seed: int = 0) -> None:
    import torch
    from torch import nn

    torch.manual_seed(seed)
    d = np.load(DATA)
    x, y, size, present, table = d["x"], d["y"], d["size"], d["present"], d["table"]
    val = table % 10 == 9
    print(f"{len(x)} crops ({int(present.sum())} of a base); training {int((~val).sum())}, validation {int(val.sum())} "
          f"(tables {sorted(set(table[val]))})")

    net = Net()
    opt = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=1e-4)
    steps = epochs * int(np.ceil((~val).sum() / 128))
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=steps)
    xt = torch.from_numpy(x[~val]).permute(0, 3, 1, 2).contiguous()
    yt, st, pt = torch.from_numpy(y[~val]), torch.from_numpy(size[~val]).long(), torch.from_numpy(present[~val]).float()
    xv = torch.from_numpy(x[val]).permute(0, 3, 1, 2).float() / 255
    yv, sv, pv = torch.from_numpy(y[val]), torch.from_numpy(size[val]).long(), torch.from_numpy(present[val]).bool()
    gen = torch.Generator().manual_seed(seed)
    for ep in range(epochs):
        net.train()
        t0, tot = time.time(), 0.0
        for idx in torch.randperm(len(xt), generator=gen).split(128):
            xb = xt[idx].float() / 255
            yb, sb, pb = yt[idx].clone(), st[idx], pt[idx]
            # The same light on frame, empty table and rim colour (a table lit otherwise),
            # and the crop mirrored across (a mirror table is a table).
            xb = xb * (0.8 + 0.4 * torch.rand(len(xb), 1, 1, 1, generator=gen))
            flip = torch.rand(len(xb), generator=gen) < 0.5
            xb[flip] = xb[flip].flip(3)
            yb[flip, 0] = -yb[flip, 0]
            off, logits, there = net(xb)
            has = pb > 0.5  # (where a base is: its place and size are taught)
            loss = nn.functional.binary_cross_entropy_with_logits(there[:, 0], pb)
            if has.any():
                loss = loss + nn.functional.smooth_l1_loss(off[has] * 10, yb[has] * 10) \
                    + 0.3 * nn.functional.cross_entropy(logits[has], sb[has])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            tot += float(loss.detach()) * len(idx)
        net.eval()
        with torch.no_grad():
            off, logits, there = [], [], []
            for xs in xv.split(512):
                o, lg, th = net(xs)
                off.append(o), logits.append(lg), there.append(th[:, 0])
            off, logits, there = torch.cat(off)[pv], torch.cat(logits)[pv], torch.cat(there)
            err = (off - yv[pv]).norm(dim=1)
            acc = (logits.argmax(1) == sv[pv]).float().mean()
            said = there > 0
            missed, false = float((~said[pv]).float().mean()), float(said[~pv].float().mean())
        print(f"epoch {ep + 1}/{epochs}: loss {tot / len(xt):.4f}; validation RMS {float(err.pow(2).mean().sqrt()):.4f} in, "
              f"median {float(err.median()):.4f}, size right {float(acc) * 100:.1f} %, bases called absent "
              f"{missed * 100:.2f} %, absent called bases {false * 100:.2f} % ({time.time() - t0:.0f} s)", flush=True)
    save_and_export(net, DATA.with_name("net.pt"), MODEL_PATH, 9, ["offset", "size_logits", "present"])


def save_and_export(net, weights: Path, model: Path, channels: int, outputs: list[str], px: int = CROP_PX) -> None:
    """The trained network's weights kept (an export that fails loses no training), then
    written as ONNX for OpenCV's DNN module, any number of ``px``-square crops at once."""
    import torch

    net.eval()
    torch.save(net.state_dict(), weights)
    model.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(net, torch.zeros(1, channels, px, px), str(model), input_names=["crop"],
                      output_names=outputs, opset_version=13, dynamo=False,
                      dynamic_axes={name: {0: "n"} for name in ["crop", *outputs]})
    print(f"wrote {model} ({model.stat().st_size} bytes)")


def detector_runs(paths: list[Path]) -> dict[str, list]:
    """Each table's frames of the tracker's predictions, by set name, from runs of
    ``benchmarks/heldout.py --json`` (the detector's own guesses to crop round)."""
    runs = {}
    for path in paths:
        runs.update({r["name"]: r["preds"]["tracker"]["frames"] for r in json.loads(Path(path).read_text())["sets"]
                     if "preds" in r})
    return runs


def table_frames(folder: Path):
    """A rendered table as the tracker sees it, for cropping: (camera, point under it, empty
    table, each side's rim colour as this light shows it, base thickness, and an iterator of
    (frame, truth frame)). The camera is the one the tracker calibrated itself (as at use)."""
    from tracker.pipeline import Pipeline

    truth = json.loads((folder / "truth.json").read_text())
    det = Pipeline.from_footage(folder).detector
    colour = {s.index: np.asarray(det.light.as_seen(s.rim_bgr), np.float32) for s in det.config.sides}
    files = sorted((folder / "frames").iterdir())
    frames = ((cv2.imread(str(files[int(fr["frame"])])), fr) for fr in truth["frames"])
    return (det.camera, camera_nadir(det.camera), cv2.imread(str(folder / "table.jpg")), colour,
            det.config.base_thickness_in, frames)


def conv_block(a: int, b: int) -> list:
    """3x3 convolution, batch norm, ReLU: a layer of the refiners' networks."""
    from torch import nn

    return [nn.Conv2d(a, b, 3, padding=1), nn.BatchNorm2d(b), nn.ReLU(inplace=True)]


def Net():  # noqa: N802 (a torch module, made where torch is imported)
    from torch import nn

    class _Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()

            block = conv_block
            self.body = nn.Sequential(*block(9, 24), *block(24, 24), nn.MaxPool2d(2),   # 32
                                      *block(24, 48), *block(48, 48), nn.MaxPool2d(2),  # 16
                                      *block(48, 64), *block(64, 64), nn.MaxPool2d(2),  # 8
                                      *block(64, 96), nn.MaxPool2d(2))                  # 4
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(96 * 16, 128), nn.ReLU(inplace=True),
                                      nn.Linear(128, 3 + len(SIZES_MM)))

        def forward(self, x):
            h = self.head(self.body(x))
            return h[:, :2], h[:, 2:-1], h[:, -1:]

    return _Net()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=("build", "train", "all"))
    ap.add_argument("--first", type=int, default=52,
                    help="the tuning split's first N Warcry 720p/1080p tables (the next ones stay to measure it on)")
    ap.add_argument("--own", type=int, default=24, help="tables of our own renderer")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--cached-only", action="store_true", help="build from the tables already rendered")
    a = ap.parse_args(argv)
    if a.step in ("build", "all"):
        build(a.first, a.cached_only, own_tables=a.own)
    if a.step in ("train", "all"):
        train(a.epochs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
