"""Train the learned shape reader (``tracker/vision/shape_reader.py``) on the tuning split.

    python scripts/train_shape_reader.py build [--first N] [--more M] [--detections run.json ...]
    python scripts/train_shape_reader.py train [--epochs E]  # needs torch and onnx: pip install -e '.[train]'
    python scripts/train_shape_reader.py all                 # both, then writes the model

Only the tuning split's mixed Warcry tables are read (``benchmarks/corpus.py``: the first
``--first`` of them, 34 unless said; the rest stay to compare the tracker with and without
it on), and the training split's first ``--more`` mixed tables (64 unless said; a split
kept for training alone); the reporting split never is. Each fighter at least 40 % in sight gives crops
(``vision.shape_reader.shape_crop``) centred a random step off its centre (within 0.12 in,
within 0.45 in) and, for an oval or rectangle, at one of its ends (where a round rim fits
it), for a round base within 0.3 in; and, given runs of ``benchmarks/heldout.py --json``,
one where the detector put each base it found near it. The targets: the step back, the
base's shape, its long and short size, and its turn (as cos and sin of twice the angle: a
base turned half round is the same). The camera is the one the tracker calibrated itself
(as at use). Tables are split by order into training and validation (every tenth), and
the validation figures are printed per epoch. The model is written as ONNX to
``tracker/vision/models/shape_reader.onnx`` and run with OpenCV's DNN module.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.corpus import cache_dir, ensure, select  # noqa: E402
from tracker.vision.base_crops import crop_axes  # noqa: E402
from tracker.vision.shape_reader import CROP_PX, MODEL_PATH, SHAPES, crop_turn, shape_crop  # noqa: E402
from train_base_refiner import conv_block, detector_runs, save_and_export, table_frames  # noqa: E402  (beside this script)

DATA = cache_dir().parent / "shape-reader"
MM_PER_IN = 25.4
MATCH_IN = 0.75  # a detection this near a true base is that base's (score.py's gate)
MIN_SEEN = 0.4


def _disc(rng: np.random.Generator, r: float) -> np.ndarray:
    """A random step uniform over a disc of radius ``r``."""
    a, d = rng.random() * 2 * np.pi, r * np.sqrt(rng.random())
    return d * np.array([np.cos(a), np.sin(a)])


def _guesses(f: dict, rng: np.random.Generator) -> list[np.ndarray]:
    """Crop centres round a true fighter: near, farther, and at one end of a shaped base."""
    xy = np.array([f["x"], f["y"]])
    out = [xy + _disc(rng, 0.12), xy + _disc(rng, 0.45), xy + _disc(rng, 0.45)]
    if f.get("shape", "round") != "round":
        long_in, short_in = (v / MM_PER_IN for v in f["size_mm"])
        a = np.radians(f["angle_deg"])
        along = np.array([np.cos(a), np.sin(a)])
        out.append(xy + rng.choice([-1, 1]) * along * (long_in - short_in) / 2 * rng.uniform(0.5, 1.2) + _disc(rng, 0.1))
    else:
        out.append(xy + _disc(rng, 0.3))
    return out


def _target(f: dict, c: np.ndarray, nadir: np.ndarray) -> tuple:
    """(step back across and away, shape index, long and short size in inches, cos and
    sin of twice the turn in the crop) for a crop centred on ``c``."""
    across, away = crop_axes(c, nadir)
    d = np.array([f["x"], f["y"]]) - c
    shape = f.get("shape", "round")
    size = f.get("size_mm") or [f["base_mm"], f["base_mm"]]
    t = 2 * crop_turn(float(f.get("angle_deg", 0.0)), across, away)
    return ((float(d @ across), float(d @ away)), SHAPES.index(shape),
            (max(size) / MM_PER_IN, min(size) / MM_PER_IN), (np.cos(t), np.sin(t)))


def build(first: int, more: int, detections: list[Path], seed: int = 0) -> None:
    es = select("tuning", first, ["warcry-mixed"]) + select("training", more, ["warcry-mixed"])
    failed = ensure(es, jobs=2)
    es = [e for e in es if e not in failed and e.cached()]
    runs = detector_runs(detections)
    rng = np.random.default_rng(seed)
    X, OFF, SH, SZ, TU, T, DET = [], [], [], [], [], [], []
    t0 = time.time()
    for ti, e in enumerate(es):
        cam, nadir, empty, colour, lift, frames = table_frames(e.path)
        n0 = len(X)
        for frame, fr in frames:
            seen = [f for f in fr["fighters"] if f["visible_fraction"] >= MIN_SEEN]
            items = [(f, c, f["z"], 0) for f in seen for c in _guesses(f, rng)]
            for p in (runs[e.name][int(fr["frame"])]["fighters"] if e.name in runs else []):
                d = [np.hypot(f["x"] - p["x"], f["y"] - p["y"]) for f in seen]
                if d and min(d) < MATCH_IN:
                    items.append((seen[int(np.argmin(d))], np.array([p["x"], p["y"]]), float(p.get("z", 0.0)), 1))
            for f, c, z, from_det in items:
                crop = shape_crop(cam, frame, empty, c, z + lift, nadir, colour[f["team"]])
                off, sh, sz, tu = _target(f, c, nadir)
                X.append((crop * 255).round().astype(np.uint8))
                OFF.append(off), SH.append(sh), SZ.append(sz), TU.append(tu), T.append(ti), DET.append(from_det)
        print(f"{ti + 1}/{len(es)} {e.name}: {len(X) - n0} crops ({time.time() - t0:.0f} s)", flush=True)
    DATA.mkdir(parents=True, exist_ok=True)
    np.save(DATA / "x.npy", np.array(X))
    np.savez(DATA / "labels.npz", off=np.array(OFF, np.float32), shape=np.array(SH), size=np.array(SZ, np.float32),
             turn=np.array(TU, np.float32), table=np.array(T), detected=np.array(DET))
    print(f"{len(X)} crops from {len(es)} tables -> {DATA}")


def train(epochs: int, seed: int = 0) -> None:
    import torch
    from torch import nn

    torch.manual_seed(seed)
    x = np.load(DATA / "x.npy", mmap_mode="r")
    lab = np.load(DATA / "labels.npz")
    table = lab["table"]
    val = table % 10 == 9
    print(f"{len(x)} crops; training {int((~val).sum())}, validation {int(val.sum())} (tables {sorted(set(table[val]))}); "
          f"shapes {np.bincount(lab['shape'], minlength=len(SHAPES)).tolist()}")
    ys = {k: torch.from_numpy(lab[k]) for k in ("off", "shape", "size", "turn", "detected")}
    net = Net()
    opt = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=1e-4)
    steps = epochs * int(np.ceil((~val).sum() / 128))
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=steps)
    tr, va = torch.from_numpy(np.flatnonzero(~val)), torch.from_numpy(np.flatnonzero(val))
    xt = torch.from_numpy(np.ascontiguousarray(x[~val]))
    xv = torch.from_numpy(np.ascontiguousarray(x[val]))
    gen = torch.Generator().manual_seed(seed)
    # Rounds outnumber ovals three to one and rectangles ten to one: each shape weighed alike.
    counts = np.bincount(lab["shape"][~val], minlength=len(SHAPES)).astype(float)
    cls_w = torch.tensor(counts.sum() / (len(SHAPES) * np.maximum(counts, 1)), dtype=torch.float32)
    for ep in range(epochs):
        net.train()
        t0, tot = time.time(), 0.0
        for b in torch.randperm(len(tr), generator=gen).split(128):
            idx = tr[b]
            xb = xt[b].permute(0, 3, 1, 2).float() / 255
            off, shape, size, turn = (ys[k][idx].clone() for k in ("off", "shape", "size", "turn"))
            # The same light on frame, empty table and rim colour (a table lit otherwise,
            # brighter or dimmer and a little tinted), and the camera's noise.
            gain = (0.8 + 0.4 * torch.rand(len(xb), 1, 1, 1, generator=gen)) \
                * (0.93 + 0.14 * torch.rand(len(xb), 3, 1, 1, generator=gen)).repeat(1, 3, 1, 1)
            xb = xb * gain + 0.015 * torch.randn(xb.shape, generator=gen)
            # A table mirrored across the camera's line of sight is a table: columns
            # flipped, the step across and the turn's sine change sign.
            flip = torch.rand(len(xb), generator=gen) < 0.5
            xb[flip] = xb[flip].flip(3)
            off[flip, 0] = -off[flip, 0]
            turn[flip, 1] = -turn[flip, 1]
            o, lg, sz, tu = net(xb)
            shaped = (shape > 0).float()
            loss = (nn.functional.cross_entropy(lg, shape, weight=cls_w)
                    + nn.functional.smooth_l1_loss(o * 10, off * 10)
                    + 0.5 * nn.functional.smooth_l1_loss(sz * 10, size * 10)
                    + (shaped[:, None] * nn.functional.smooth_l1_loss(tu * 3, turn * 3, reduction="none")).mean())
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            tot += float(loss.detach()) * len(idx)
        net.eval()
        with torch.no_grad():
            outs = [net(xs.permute(0, 3, 1, 2).float() / 255) for xs in xv.split(256)]
        o, lg, sz, tu = (torch.cat([r[k] for r in outs]) for k in range(4))
        yo, ysh, ysz, ytu, ydet = (ys[k][va] for k in ("off", "shape", "size", "turn", "detected"))
        right = lg.argmax(1) == ysh
        err = (o - yo).norm(dim=1)
        shaped = ysh > 0
        dt = torch.rad2deg(torch.atan2(tu[:, 1], tu[:, 0]) / 2 - torch.atan2(ytu[:, 1], ytu[:, 0]) / 2)
        dt = (dt + 90) % 180 - 90
        det = ydet == 1
        print(f"epoch {ep + 1}/{epochs}: loss {tot / len(tr):.4f}; validation shape right {float(right.float().mean()):.4f} "
              f"(round {float(right[ysh == 0].float().mean()):.4f}, shaped {float(right[shaped].float().mean()):.4f}; "
              f"detector's guesses {float(right[det].float().mean()):.4f}), step RMS {float(err.pow(2).mean().sqrt()):.4f} in "
              f"(guesses {float(yo.norm(dim=1).pow(2).mean().sqrt()):.4f}; detector's {float(err[det].pow(2).mean().sqrt()):.4f} "
              f"from {float(yo[det].norm(dim=1).pow(2).mean().sqrt()):.4f}), size RMS "
              f"{float((sz - ysz).pow(2).mean().sqrt()):.4f} in, shaped turn RMS "
              f"{float(dt[shaped].pow(2).mean().sqrt()):.2f} deg ({time.time() - t0:.0f} s)", flush=True)
    save_and_export(net, DATA / "net.pt", MODEL_PATH, 9, ["offset", "shape_logits", "size", "turn"], CROP_PX)


def Net():  # noqa: N802 (a torch module, made where torch is imported)
    from torch import nn

    class _Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()

            block = conv_block
            self.body = nn.Sequential(nn.Conv2d(9, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16),
                                      nn.ReLU(inplace=True),                                  # 48
                                      *block(16, 32), *block(32, 32), nn.MaxPool2d(2),        # 24
                                      *block(32, 64), nn.MaxPool2d(2),                        # 12
                                      *block(64, 96), nn.MaxPool2d(2),                        # 6
                                      *block(96, 96), nn.MaxPool2d(2))                        # 3
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(96 * 9, 192), nn.ReLU(inplace=True), nn.Dropout(0.3),
                                      nn.Linear(192, 2 + len(SHAPES) + 2 + 2))

        def forward(self, x):
            h = self.head(self.body(x))
            n = len(SHAPES)
            return h[:, :2], h[:, 2:2 + n], h[:, 2 + n:4 + n], h[:, 4 + n:]

    return _Net()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=("build", "train", "all"))
    ap.add_argument("--first", type=int, default=34,
                    help="the tuning split's first N mixed Warcry tables (the rest stay to measure it on)")
    ap.add_argument("--more", type=int, default=64, help="the training split's first N mixed Warcry tables besides")
    ap.add_argument("--detections", type=Path, nargs="*", default=[],
                    help="benchmarks/heldout.py --json runs: the detector's own bases too")
    ap.add_argument("--epochs", type=int, default=8, help="8 trained the shipped model")
    a = ap.parse_args(argv)
    if a.step in ("build", "all"):
        build(a.first, a.more, a.detections)
    if a.step in ("train", "all"):
        train(a.epochs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
