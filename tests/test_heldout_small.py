"""A small, fast held-out regression test (issue #28): the real tracker on the SMOKE split of
``benchmarks/corpus.py`` (one table of each kind, warcry / warcry-mixed / epic, 2 frames
each, rendered by ``../shared/eval/make_set.py``; never tuned on), scored by the shared
scorer ``../shared/eval/score.py`` and beside the shared naive baseline on the same frames.

Each set goes through ``benchmarks/heldout_run.run_set``, the benchmark's own path:
``Pipeline.from_footage`` (calibrated from the set's board views, as a user's footage is)
and ``judge_still`` on every frame, then ``../shared/eval/baseline.py``, then the scoring
side (tallies, hard cases, objective control by the rules on the truth and on the
tracker's state). score.py, imported where it stands (``evalsets.SHARED``), scores both.

Size: 1920x1080, the smallest at which the tracker calibrates all three kinds from the
renderer's board views. At 640x360 none does ("board found in 0-2 of 15 views" / focal
length undetermined); warcry and warcry-mixed do from 960x540, Epic at none of 640x360,
960x540, 1280x720 for any seed tried, so the Epic entry is seed 300003 (300002's views
leave the focal length at 3.7 % sigma even at 1920x1080); see benchmarks/corpus.py.

The floors sit a little under what the tracker measured when this test was written
(``MEASURED``; recall and precision 0.1 under, at least above the baseline on the same
frames), so they fail on a real regression: recall allows the warcry set (18 fighter-frames)
one miss, warcry-mixed (28) two more than now, epic (60) seven more than its 2. The figures are the
same run after run (the renderer and the tracker are deterministic). The sets are
rendered once into pytest's cache (``.pytest_cache``, keyed by the renderer's source, so a
changed renderer renders afresh), never into ``~/.cache``; the tracker's intrinsics cache
(``$XDG_CACHE_HOME/tabletracker``) goes to a temporary folder, so every run calibrates.
On this 2-core machine: about 15 s with the sets already rendered, about 47 s from scratch
(rendering them, two at a time, takes about 30 s of it).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
import time
from pathlib import Path

import pytest
from evalsets import SHARED

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import corpus  # noqa: E402
from benchmarks.heldout_metrics import METRICS, Pool, Tally, estimate  # noqa: E402

pytestmark = pytest.mark.slow

# What the tracker scored on the SMOKE split when this test was written (score.py's figures
# per set; control agreement and token recall pooled over the three sets).
MEASURED = {
    "warcry": {"recall_visible": 1.0, "precision": 1.0, "team_accuracy": 1.0, "rms_in": 0.017},
    "warcry-mixed": {"recall_visible": 0.786, "precision": 0.957, "team_accuracy": 1.0, "rms_in": 0.244},
    "epic": {"recall_visible": 0.967, "precision": 1.0, "team_accuracy": 1.0, "rms_in": 0.092},
    "pooled": {"control_agreement": 0.889, "token_recall": 0.909},
}
FLOORS = {
    "warcry": {"recall_visible": 0.9, "precision": 0.9, "team_accuracy": 0.9},
    "warcry-mixed": {"recall_visible": 0.68, "precision": 0.85, "team_accuracy": 0.9},
    "epic": {"recall_visible": 0.85, "precision": 0.9, "team_accuracy": 0.9},
}
RMS_CEILING_IN = {"warcry": 0.1, "warcry-mixed": 0.35, "epic": 0.2}
CONTROL_FLOOR, TOKEN_RECALL_FLOOR = 0.75, 0.75


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"shared_eval_{path.stem}_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _renderer_key() -> str:
    h = hashlib.sha1()
    for name in ("render.py", "make_set.py"):
        h.update((SHARED / "eval" / name).read_bytes())
    return h.hexdigest()[:12]


@pytest.fixture(scope="module")
def smoke(request, tmp_path_factory):
    """{kind: (entry, run_set record, score.py's figures for tracker and baseline)}."""
    if not (SHARED / "eval" / "make_set.py").is_file():
        pytest.fail(f"{SHARED / 'eval'} is missing: the shared renderer and scorer must sit beside the repository")
    from benchmarks.heldout_run import run_set

    root = request.config.cache.mkdir("heldout-smoke") / _renderer_key()
    entries = [corpus.Entry(e.split, e.seed, e.kind, e.width, e.height, e.frames, root=str(root))
               for e in corpus.entries("smoke")]
    scorer = _load(SHARED / "eval" / "score.py")
    out = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        t0 = time.perf_counter()
        assert not corpus.ensure(entries, jobs=2, progress=False)  # every smoke table renders
        t_render = time.perf_counter() - t0
        for e in entries:
            rec = run_set({"path": str(e.path), "name": e.name, "kind": e.kind, "resolution": e.resolution,
                           "pool": "smoke"})
            assert "error" not in rec, f"{e.name}: the tracker failed: {rec.get('error')}"
            truth = json.loads((e.path / "truth.json").read_text())
            figs = {who: scorer.score(truth, rec["preds"][who]) for who in ("tracker", "baseline")}
            out[e.kind] = (e, rec, figs)
    shown = ("recall_visible", "precision", "team_accuracy", "rms_in")
    print(f"\nsmoke split: rendering {t_render:.1f} s; " + "; ".join(
        f"{kind}: tracker {({m: figs['tracker'][m] for m in shown})}, baseline recall_visible "
        f"{figs['baseline']['recall_visible']}" for kind, (_, _, figs) in out.items())
        + f"; pooled control agreement {_pooled(out, 'tracker', 'control_agreement')}, "
          f"token recall {_pooled(out, 'tracker', 'token_recall')}")
    return out


def _pooled(smoke: dict, who: str, metric: str) -> float | None:
    pool = Pool([Tally(**rec["tallies"][who]) for _, rec, _ in smoke.values()], resamples=1)
    return estimate(pool, METRICS[metric])["value"]


@pytest.mark.parametrize("kind", ["warcry", "warcry-mixed", "epic"])
def test_tracker_holds_its_recall_precision_and_sides_on_each_kind(smoke, kind):
    e, rec, figs = smoke[kind]
    tr, bl = figs["tracker"], figs["baseline"]
    got = {m: tr[m] for m in MEASURED[kind]}
    assert not rec["cross_check"], f"{e.name}: the benchmark's tallies differ from score.py: {rec['cross_check']}"
    for m, floor in FLOORS[kind].items():
        assert tr[m] is not None and tr[m] >= floor, f"{e.name}: {m} {tr[m]} under {floor} (measured {MEASURED[kind][m]}); {got}"
    assert tr["recall_visible"] > (bl["recall_visible"] or 0.0), (
        f"{e.name}: tracker recall_visible {tr['recall_visible']} not above the naive baseline's {bl['recall_visible']}")
    assert tr["rms_in"] is not None and tr["rms_in"] <= RMS_CEILING_IN[kind], (
        f"{e.name}: RMS {tr['rms_in']} in over {RMS_CEILING_IN[kind]} (measured {MEASURED[kind]['rms_in']})")
    if bl["rms_in"] is not None:
        assert tr["rms_in"] < bl["rms_in"], f"{e.name}: RMS {tr['rms_in']} not under the baseline's {bl['rms_in']}"
    n = rec["tallies"]["tracker"]["counts"]["tok_fighter"]
    assert n == 0, f"{e.name}: {n} token(s) read as fighters"


def test_objective_control_and_tokens_agree_with_the_truth(smoke):
    """Objective control as the rules call it on the tracker's state vs on the truth, and
    token recall, pooled over the three sets."""
    agree = _pooled(smoke, "tracker", "control_agreement")
    n = sum(rec["tallies"]["tracker"]["counts"].get("ctl_n", 0) for _, rec, _ in smoke.values())
    assert n >= 12, f"only {n} objective-frames: the smoke sets changed"
    assert agree is not None and agree >= CONTROL_FLOOR, (
        f"control agreement {agree} over {n} objective-frames under {CONTROL_FLOOR} "
        f"(measured {MEASURED['pooled']['control_agreement']})")
    tokens = _pooled(smoke, "tracker", "token_recall")
    assert tokens is not None and tokens >= TOKEN_RECALL_FLOOR, (
        f"token recall {tokens} under {TOKEN_RECALL_FLOOR} (measured {MEASURED['pooled']['token_recall']})")


def test_a_split_leaves_out_its_first_tables_on_asking():
    """``--skip N``: a model trained on a split's first tables is compared on the rest
    (``scripts/train_stand_refiner.py`` reads the tuning split's first 34 Epic tables)."""
    epic = corpus.select("tuning", kinds=["epic"])
    rest = corpus.select("tuning", kinds=["epic"], skip=34)
    assert len(epic) > 34 and rest == epic[34:]
    assert corpus.select("tuning", 2, ["epic"], skip=34) == epic[34:36]
    assert {e.seed for e in rest}.isdisjoint(e.seed for e in epic[:34])


def test_the_splits_share_no_table():
    """A table is in one split only: the training split, which only feeds learned models'
    crops, never holds a tuning table a model is compared on or a reporting one."""
    seeds = {name: {e.seed for e in corpus.entries(name)} for name in corpus.SPLITS}
    assert set(seeds) >= {"tuning", "reporting", "training", "smoke"}
    for a in seeds:
        for b in seeds:
            assert a == b or seeds[a].isdisjoint(seeds[b]), (a, b)
    mixed = corpus.select("training", kinds=["warcry-mixed"])
    assert len(mixed) >= 64 and {e.kind for e in mixed} == {"warcry-mixed"}
