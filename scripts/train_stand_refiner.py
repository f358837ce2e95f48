"""Train the learned stand refiner (``tracker/vision/stand_refiner.py``) on the tuning split.

    python scripts/train_stand_refiner.py build [--first N] [--detections run.json]
    python scripts/train_stand_refiner.py train [--epochs E]  # needs torch and onnx: pip install -e '.[train]'
    python scripts/train_stand_refiner.py all                 # both, then writes the model

Only the tuning split's Epic tables are read (``benchmarks/corpus.py``: the first
``--first`` of them, 34 unless said; the rest of the split's Epic tables stay to compare
the tracker with and without it on); the reporting split never is. Each stand at least
half in sight gives crops (``vision.stand_refiner.stand_crop``) laid along a guess a
random step and turn off it (half within 0.08 in and 4 degrees, half within 0.35 in along,
0.2 in across and 12 degrees), and, given a run of ``benchmarks/heldout.py --json``, one
where the detector put it; the target is the step back (along and across the guess) and
the turn back. The camera is the one the tracker calibrated itself (as at use). Tables are
split by order into training and validation (every tenth), and the validation error is
printed per epoch. The model is written as ONNX to ``tracker/vision/models/stand_refiner.onnx``
and run with OpenCV's DNN module.
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
from tracker.vision.base_crops import CROP_PX  # noqa: E402
from tracker.vision.stand_refiner import CHANNELS, MODEL_PATH, stand_axes, stand_crop, wrap_turn  # noqa: E402
from train_base_refiner import conv_block, detector_runs, save_and_export, table_frames  # noqa: E402  (beside this script)

DATA = cache_dir().parent / "stand-refiner"
PER_STAND = 4
MATCH_IN = 0.75  # a detection this near a true stand is that stand's (score.py's gate)


def _taught(f: dict) -> bool:
    """Whether a true fighter is a stand the refiner is taught: rectangular, at least half
    in sight."""
    return f.get("shape") == "rect" and f["visible_fraction"] >= 0.5


def _guesses(stand: dict, rng: np.random.Generator) -> list[tuple[np.ndarray, float]]:
    """``PER_STAND`` (centre, angle) guesses a random step and turn off a true stand."""
    out = []
    along, across = stand_axes(stand["angle_deg"])
    for k in range(PER_STAND):
        if k % 2:
            a, c, t = rng.uniform(-0.08, 0.08), rng.uniform(-0.08, 0.08), rng.uniform(-4, 4)
        else:
            a, c, t = rng.uniform(-0.35, 0.35), rng.uniform(-0.2, 0.2), rng.uniform(-12, 12)
        out.append((np.array([stand["x"], stand["y"]]) + a * along + c * across, stand["angle_deg"] + t))
    return out


def _detected(preds: list[dict], stands: list[dict]) -> list[tuple[dict, np.ndarray, float]]:
    """(true stand, centre, angle) for each of the detector's stands nearest a true one."""
    out = []
    for p in preds:
        if p.get("shape") != "rect":
            continue
        d = [np.hypot(s["x"] - p["x"], s["y"] - p["y"]) for s in stands]
        if d and min(d) < MATCH_IN:
            out.append((stands[int(np.argmin(d))], np.array([p["x"], p["y"]]), float(p.get("angle_deg", 0.0))))
    return out


def build(first: int, detections: Path | None, seed: int = 0) -> None:
    es = select("tuning", first, ["epic"])
    failed = ensure(es, jobs=2)
    es = [e for e in es if e not in failed and e.cached()]
    runs = detector_runs([detections] if detections is not None else [])
    rng = np.random.default_rng(seed)
    X, A, Y, T = [], [], [], []
    t0 = time.time()
    for ti, e in enumerate(es):
        cam, nadir, empty, colour, lift, frames = table_frames(e.path)
        n0 = len(X)
        for frame, fr in frames:
            stands = [f for f in fr["fighters"] if _taught(f)]
            items = [(s, c, a) for s in stands for c, a in _guesses(s, rng)]
            if e.name in runs:
                items += _detected(runs[e.name][int(fr["frame"])]["fighters"], stands)
            for s, c, a in items:
                crop = stand_crop(cam, frame, empty, c, s["z"] + lift, a, nadir, colour[s["team"]])
                along, across = stand_axes(a)
                d = np.array([s["x"], s["y"]]) - c
                X.append((crop[..., :9] * 255).round().astype(np.uint8))
                A.append(crop[0, 0, 9:])
                Y.append((float(d @ along), float(d @ across), float(np.radians(wrap_turn(s["angle_deg"] - a)))))
                T.append(ti)
        print(f"{ti + 1}/{len(es)} {e.name}: {len(X) - n0} crops ({time.time() - t0:.0f} s)", flush=True)
    DATA.mkdir(parents=True, exist_ok=True)
    np.save(DATA / "x.npy", np.array(X))
    np.savez(DATA / "labels.npz", away=np.array(A, np.float32), y=np.array(Y, np.float32), table=np.array(T))
    print(f"{len(X)} crops from {len(es)} tables -> {DATA}")


def _inputs(x9, away):
    """The network's input: the nine crop channels (0-1) and the two of the camera's way."""
    import torch

    xb = x9.permute(0, 3, 1, 2).float() / 255
    a = away[:, :, None, None].expand(-1, -1, CROP_PX, CROP_PX)
    return torch.cat([xb, a], 1)


def split_crops(data: Path, seed: int):
    """The crops built into ``data``, split by table (every tenth for validation), as
    tensors ((x, away, y) for training, the same for validation), with the generator
    that shuffles and varies them."""
    import torch

    torch.manual_seed(seed)
    x = np.load(data / "x.npy", mmap_mode="r")
    lab = np.load(data / "labels.npz")
    val = lab["table"] % 10 == 9
    print(f"{len(x)} crops; training {int((~val).sum())}, validation {int(val.sum())} "
          f"(tables {sorted(set(lab['table'][val].tolist()))})")

    def part(m):
        return torch.from_numpy(np.ascontiguousarray(x[m])), torch.from_numpy(lab["away"][m]), torch.from_numpy(lab["y"][m])

    return part(~val), part(val), torch.Generator().manual_seed(seed)


def optimiser(net, epochs: int, n: int):
    """AdamW with a one-cycle schedule over ``epochs`` of ``n`` crops in batches of 128."""
    import torch

    opt = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=1e-4)
    return opt, torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=epochs * int(np.ceil(n / 128)))


def varied(x9, away, gen):
    """A batch as the network reads it, under another light (the same on frame, empty
    table and rim colour: a table lit otherwise) and half of it mirrored across the
    guess's long side (rows flipped, the camera's way across negated): (input, mirrored)."""
    import torch

    xb = _inputs(x9, away)
    xb[:, :9] = xb[:, :9] * (0.8 + 0.4 * torch.rand(len(xb), 1, 1, 1, generator=gen))
    flip = torch.rand(len(xb), generator=gen) < 0.5
    xb[flip] = xb[flip].flip(2)
    xb[flip, 10] = -xb[flip, 10]
    return xb, flip


def train(epochs: int, seed: int = 0) -> None:
    import torch
    from torch import nn

    (xt, at, yt), (xv, av, yv), gen = split_crops(DATA, seed)
    net = Net()
    opt, sched = optimiser(net, epochs, len(xt))
    # (Inches and radians: a step of 0.1 in weighs as a turn of 0.1 rad, 5.7 degrees.)
    for ep in range(epochs):
        net.train()
        t0, tot = time.time(), 0.0
        for idx in torch.randperm(len(xt), generator=gen).split(128):
            xb, flip = varied(xt[idx], at[idx], gen)
            yb = yt[idx].clone()
            yb[flip, 1:] = -yb[flip, 1:]  # (a stand mirrored is a stand: the step across and the turn change sign)
            off = net(xb)
            loss = nn.functional.smooth_l1_loss(off * 10, yb * 10)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            tot += float(loss.detach()) * len(idx)
        net.eval()
        with torch.no_grad():
            off = torch.cat([net(_inputs(xs, a_)) for xs, a_ in zip(xv.split(512), av.split(512))])
        err = (off[:, :2] - yv[:, :2]).norm(dim=1)
        before = yv[:, :2].norm(dim=1)
        turn = torch.rad2deg(off[:, 2] - yv[:, 2]).abs()
        print(f"epoch {ep + 1}/{epochs}: loss {tot / len(xt):.4f}; validation RMS {float(err.pow(2).mean().sqrt()):.4f} in "
              f"(guesses {float(before.pow(2).mean().sqrt()):.4f}), median {float(err.median()):.4f}, along "
              f"{float((off[:, 0] - yv[:, 0]).pow(2).mean().sqrt()):.4f}, across "
              f"{float((off[:, 1] - yv[:, 1]).pow(2).mean().sqrt()):.4f}; turn RMS "
              f"{float(turn.pow(2).mean().sqrt()):.2f} deg ({time.time() - t0:.0f} s)", flush=True)
    save_and_export(net, DATA / "net.pt", MODEL_PATH, CHANNELS, ["offset"])


def Net(outputs: int = 3):  # noqa: N802 (a torch module, made where torch is imported)
    """The stand refiner's network (its three outputs: the step along and across, the
    turn); the quarter-turn reader's is the same with its three classes."""
    from torch import nn

    class _Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()

            block = conv_block
            # (A first step of two: a quarter of the round refiner's work a crop, so that it
            # trains on two shared cores in minutes.)
            self.body = nn.Sequential(nn.Conv2d(CHANNELS, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16),
                                      nn.ReLU(inplace=True),                                  # 32
                                      *block(16, 32), *block(32, 32), nn.MaxPool2d(2),        # 16
                                      *block(32, 64), nn.MaxPool2d(2),                        # 8
                                      *block(64, 64), nn.MaxPool2d(2))                        # 4
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(64 * 16, 128), nn.ReLU(inplace=True), nn.Linear(128, outputs))

        def forward(self, x):
            return self.head(self.body(x))

    return _Net()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=("build", "train", "all"))
    ap.add_argument("--first", type=int, default=34,
                    help="the tuning split's first N Epic tables (the rest stay to measure it on)")
    ap.add_argument("--detections", type=Path, help="a benchmarks/heldout.py --json run: the detector's own stands too")
    ap.add_argument("--epochs", type=int, default=4, help="4 trained the shipped model")
    a = ap.parse_args(argv)
    if a.step in ("build", "all"):
        build(a.first, a.detections)
    if a.step in ("train", "all"):
        train(a.epochs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
