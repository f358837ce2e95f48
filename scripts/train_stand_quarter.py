"""Train the learned quarter-turn reader (``tracker/vision/stand_refiner.py``: ``QuarterReader``)
on the training split's Epic tables.

    python scripts/train_stand_quarter.py build [--first N]
    python scripts/train_stand_quarter.py train [--epochs E]  # needs torch and onnx: pip install -e '.[train]'
    python scripts/train_stand_quarter.py all                 # both, then writes the model

Two Epic stands side by side (a column, or the two rows of a block) make a square that
the same two stands turned a quarter tile as well; a stand fitted turned a quarter lies
across both, half on each. The rims' line between them tells the tilings apart at 1080p,
not at 720p (a stand is 28 x 14 camera pixels there); the miniatures, which stand in a row
along each stand and face across it, do. The reader looks at a crop laid along a guess
(``vision.stand_refiner.stand_crop``, as the stand refiner does) and says whether the
guess is a stand (class 0) or lies across two, turned a quarter, with the square's centre
on its left (1: +across) or its right (2: -across).

Crops come from the truth of the training split's first ``--first`` Epic tables
(``benchmarks/corpus.py``; never the tuning or reporting split, so that every tuning table
measures it): two guesses near each true stand at least half in sight (class 0: within
0.2 in and 12 degrees), and for each square pair (two stands of a side turned alike
within 10 degrees, side by side: their centres a stand's depth apart across, within 0.6
of a half depth along) two guesses at each of the two places a stand turned a quarter
across both would lie, each within 0.1 in and 8 degrees. Tables are split by order into
training and validation (every tenth); the validation figures per epoch are the share
read right, and of the quarter-turned guesses, how many are read so with 0.9 or more, and
of the stands how many are wrongly so read.
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
from tracker.vision.stand_refiner import CHANNELS, QUARTER_PATH, stand_axes, stand_crop  # noqa: E402
from train_base_refiner import save_and_export, table_frames  # noqa: E402  (beside this script)
from train_stand_refiner import Net, _inputs, _taught, optimiser, split_crops, varied  # noqa: E402

DATA = cache_dir().parent / "stand-quarter"
PAIR_TURN_DEG, PAIR_ALONG = 10.0, 0.6  # (the along tolerance in half depths, as vision.stands.retile's)
SURE = 0.9


def _pairs(stands: list[dict]) -> list[tuple[dict, dict]]:
    """Square pairs among ``stands`` (true stands, inches): same side, turned alike, side by
    side."""
    out = []
    for i, a in enumerate(stands):
        along, across = stand_axes(a["angle_deg"])
        hy = 0.5 * a["size_mm"][1] / 25.4 if "size_mm" in a else 10 / 25.4
        for b in stands[i + 1:]:
            turn = abs((a["angle_deg"] - b["angle_deg"] + 90.0) % 180.0 - 90.0)
            d = np.array([b["x"] - a["x"], b["y"] - a["y"]])
            if b["team"] == a["team"] and turn <= PAIR_TURN_DEG and abs(d @ along) <= PAIR_ALONG * hy \
                    and abs(abs(d @ across) - 2 * hy) <= PAIR_ALONG * hy:
                out.append((a, b))
    return out


def _guesses(stands: list[dict], rng: np.random.Generator) -> list[tuple[dict, np.ndarray, float, int]]:
    """(stand whose height it takes, centre, angle, class) for every guess of one frame."""
    out = []
    for s in stands:
        along, across = stand_axes(s["angle_deg"])
        for _ in range(2):
            c = np.array([s["x"], s["y"]]) + rng.uniform(-0.2, 0.2) * along + rng.uniform(-0.12, 0.12) * across
            out.append((s, c, s["angle_deg"] + rng.uniform(-12, 12), 0))
    for a, b in _pairs(stands):
        square = 0.5 * np.array([a["x"] + b["x"], a["y"] + b["y"]])
        along = stand_axes(a["angle_deg"])[0]
        hy = 0.5 * abs((np.array([b["x"] - a["x"], b["y"] - a["y"]])) @ stand_axes(a["angle_deg"])[1])
        for k in (1, -1):
            for _ in range(2):
                c = square + k * hy * along + rng.uniform(-0.1, 0.1, 2)
                turn = a["angle_deg"] + 90.0 + rng.uniform(-8, 8)
                label = 1 if (square - c) @ stand_axes(turn)[1] > 0 else 2
                out.append((a, c, turn, label))
    return out


def build(first: int, seed: int = 0) -> None:
    es = select("training", first, ["epic"])
    failed = ensure(es, jobs=2)
    es = [e for e in es if e not in failed and e.cached()]
    rng = np.random.default_rng(seed)
    X, A, Y, T = [], [], [], []
    t0 = time.time()
    for ti, e in enumerate(es):
        cam, nadir, empty, colour, lift, frames = table_frames(e.path)
        n0 = len(X)
        for frame, fr in frames:
            for s, c, a, label in _guesses([f for f in fr["fighters"] if _taught(f)], rng):
                crop = stand_crop(cam, frame, empty, c, s["z"] + lift, a, nadir, colour[s["team"]])
                X.append((crop[..., :9] * 255).round().astype(np.uint8))
                A.append(crop[0, 0, 9:])
                Y.append(label)
                T.append(ti)
        print(f"{ti + 1}/{len(es)} {e.name}: {len(X) - n0} crops, {sum(y > 0 for y in Y[n0:])} turned "
              f"({time.time() - t0:.0f} s)", flush=True)
    DATA.mkdir(parents=True, exist_ok=True)
    np.save(DATA / "x.npy", np.array(X))
    np.savez(DATA / "labels.npz", away=np.array(A, np.float32), y=np.array(Y, np.int64), table=np.array(T))
    print(f"{len(X)} crops from {len(es)} tables -> {DATA}")


def train(epochs: int, seed: int = 0) -> None:
    import torch
    from torch import nn

    (xt, at, yt), (xv, av, yv), gen = split_crops(DATA, seed)
    print(f"{int((yt > 0).sum()) + int((yv > 0).sum())} crops turned a quarter")
    net = Net(outputs=3)
    opt, sched = optimiser(net, epochs, len(xt))
    for ep in range(epochs):
        net.train()
        t0, tot = time.time(), 0.0
        for idx in torch.randperm(len(xt), generator=gen).split(128):
            xb, flip = varied(xt[idx], at[idx], gen)
            yb = yt[idx].clone()
            yb[flip] = torch.where(yb[flip] > 0, 3 - yb[flip], yb[flip])  # (mirrored: the square's side swaps)
            loss = nn.functional.cross_entropy(net(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            tot += float(loss.detach()) * len(idx)
        net.eval()
        with torch.no_grad():
            p = torch.cat([net(_inputs(xs, a_)).softmax(1) for xs, a_ in zip(xv.split(512), av.split(512))])
        right = float((p.argmax(1) == yv).float().mean())
        turned = yv > 0
        sure = p[:, 1:].sum(1) >= SURE
        print(f"epoch {ep + 1}/{epochs}: loss {tot / len(xt):.4f}; validation right {100 * right:.2f} %, turned read "
              f"sure {int((sure & turned).sum())} of {int(turned.sum())}, stands read turned {int((sure & ~turned).sum())} "
              f"of {int((~turned).sum())} ({time.time() - t0:.0f} s)", flush=True)
    save_and_export(net, DATA / "net.pt", QUARTER_PATH, CHANNELS, ["quarter"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=("build", "train", "all"))
    ap.add_argument("--first", type=int, default=40, help="the training split's first N Epic tables")
    ap.add_argument("--epochs", type=int, default=6)
    a = ap.parse_args(argv)
    if a.step in ("build", "all"):
        build(a.first)
    if a.step in ("train", "all"):
        train(a.epochs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
