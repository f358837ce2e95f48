"""THE held-out benchmark (issue #28): the tracker and the naive baseline on tables never
tuned on, with 95 % confidence intervals.

    python benchmarks/heldout.py                             # the whole REPORTING split + the public sets
    python benchmarks/heldout.py --split tuning --first 6 --jobs 2 --json out.json
    python benchmarks/heldout.py --no-public --kinds epic

Tables come from benchmarks/corpus.py (rendered on demand by ../shared/eval/make_set.py;
protocol there: REPORTING is only ever scored, its failures only counted) and, reported
apart, the three public sets ../shared/eval/sets/warcry-1..3. Per set: the tracker
(``Pipeline.from_footage`` + ``judge_still`` on every frame, the frames being separate
stills; ``process`` with a full look every frame if the pipeline has no ``judge_still``)
and ../shared/eval/baseline.py, both scored by ../shared/eval/score.py (imported where
they stand). Figures pool every frame of every set; 95 % CIs by a cluster bootstrap over
sets (benchmarks/heldout_metrics.py). Breakdowns: per kind and base shape, resolution,
and hard case (classified from truth and images on the scoring side only:
benchmarks/heldout_cases.py); objective control as the rules call it on the truth and
on the tracker's state (benchmarks/heldout_control.py). With --jobs 2 two sets run at
once, one per process (this machine has 2 cores; per-frame times then include the
contention). The last line printed is a JSON summary; --json writes everything.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import corpus  # noqa: E402
from benchmarks.heldout_cases import CASES  # noqa: E402
from benchmarks.heldout_metrics import METRICS, Pool, Tally, estimate, paired  # noqa: E402
from benchmarks.heldout_run import EVAL, run_set  # noqa: E402

PUBLIC = [EVAL / "sets" / f"warcry-{i}" for i in (1, 2, 3)]
ROWS = [("recall", "recall"), ("recall, visible", "recall_visible"), ("precision", "precision"),
        ("side accuracy", "side_accuracy"), ("RMS all (in)", "rms_in"), ("RMS floor (in)", "rms_floor_in"),
        ("RMS platforms (in)", "rms_platform_in"), ("p95 (in)", "p95_in"), ("token recall", "token_recall"),
        ("token recall, in sight", "token_recall_in_sight"), ("token precision", "token_precision"),
        ("tokens read as fighters", "tokens_as_fighters"),  # per true token
        ("tag ids right", "tag_ids_right"), ("tag ids wrong", "tag_ids_wrong"),  # per tagged token found
        ("camera: floor RMS (in)", "rms_camera_floor_in")]  # the calibration alone, vs the true camera
KIND_GROUPS = ["warcry round", "warcry-mixed round", "warcry-mixed oval", "warcry-mixed rect", "epic stand"]
RES_GROUPS = ["720p", "1080p", "4K"]


def fmt(est: dict | None, key: str, pct: str = " %") -> str:
    """A value with its CI: in inches (rms, p95), degrees (angle) or as a percentage."""
    if est is None or est["value"] is None:
        return "-"
    v, c = est["value"], est["ci"]
    if key.startswith(("rms", "p95", "angle")):
        n = 2 if key.startswith("angle") else 4
        return f"{v:.{n}f} [{c[0]:.{n}f}, {c[1]:.{n}f}]" if c else f"{v:.{n}f}"
    return f"{100 * v:.1f}{pct} [{100 * c[0]:.1f}, {100 * c[1]:.1f}]" if c else f"{100 * v:.1f}{pct}"


def jobs_for(entries: list[corpus.Entry], public: bool) -> list[dict]:
    out = [{"path": str(e.path), "name": e.name, "kind": e.kind, "resolution": e.resolution,
            "seed": e.seed, "pool": e.split} for e in entries]
    if public:
        for p in PUBLIC:
            h = json.loads((p / "setup.json").read_text())["image"]["height"]
            out.append({"path": str(p), "name": p.name, "kind": "warcry",
                        "resolution": {720: "720p", 1080: "1080p", 2160: "4K"}.get(h, f"{h}p"), "pool": "public"})
    return out


def run_all(jobs: list[dict], n_jobs: int) -> list[dict]:
    """Every set, ``n_jobs`` processes at a time, with a progress bar; in job order."""
    from tqdm import tqdm

    with tqdm(total=len(jobs), desc="tracking", unit="set") as bar:
        if n_jobs <= 1:
            out = []
            for j in jobs:
                out.append(run_set(j))
                bar.update()
            return out
        with ProcessPoolExecutor(n_jobs) as ex:
            futs = [ex.submit(run_set, j) for j in jobs]
            for f in futs:
                f.add_done_callback(lambda _f: bar.update())
            return [f.result() for f in futs]


def tallies(recs: list[dict], who: str) -> list[Tally]:
    return [Tally(r["tallies"][who]["counts"], r["tallies"][who]["errs"]) for r in recs]


def group_spec(group: str, what: str) -> tuple[str, ...]:
    g = f"g:{group}:"
    return {"recall_visible": ("ratio", g + "n_m_vis", g + "n_vis"), "side_accuracy": ("ratio", g + "n_team", g + "n_m"),
            "angle_rms_deg": ("rms", g + "angle")}[what]


def report(title: str, recs: list[dict]) -> dict:
    """Print one pool's tables; return its figures."""
    tr, bl = Pool(tallies(recs, "tracker")), Pool(tallies(recs, "baseline"))
    frames = sum(len(r["timing"]["frame_s"]) for r in recs)
    kinds, res = Counter(r["kind"] for r in recs), Counter(r["resolution"] for r in recs)
    print(f"\n=== {title}: {len(recs)} sets ({', '.join(f'{k} {n}' for k, n in kinds.items())}; "
          f"{', '.join(f'{k} {n}' for k, n in res.items())}), {frames} frames, "
          f"{tr.total('n_t')} fighter-frames ({tr.total('n_vis')} at least half visible), {tr.total('tk_t')} token-frames")
    out: dict = {"sets": [r["name"] for r in recs], "tracker": {}, "baseline": {}}
    print(f"{'':26s}{'tracker [95 % CI]':>30s}{'baseline [95 % CI]':>30s}")
    for label, key in ROWS:
        a, b = estimate(tr, METRICS[key]), estimate(bl, METRICS[key])
        out["tracker"][key], out["baseline"][key] = a, b
        print(f"{label:26s}{fmt(a, key):>30s}{fmt(b, key):>30s}")
    print(f"{'  tokens read as fighters, count':34s}{tr.total('tok_fighter'):>22d}{bl.total('tok_fighter'):>30d}")
    print(f"{'  matched on platforms':34s}{tr.n_errs('elevated'):>22d}{bl.n_errs('elevated'):>30d}")
    for kind in kinds:
        if tr.n_errs(f"camera:{kind}"):
            e = estimate(tr, ("rms", f"camera:{kind}"))
            out["tracker"][f"rms_camera_floor_in:{kind}"] = e
            print(f"{'  camera: floor RMS, ' + kind:34s}{fmt(e, 'rms'):>22s}")
    out["vs_baseline"] = {}
    print("tracker vs baseline (paired bootstrap)")
    for label, key, how in (("RMS all, baseline / tracker", "rms_in", "ratio"),
                            ("RMS floor, baseline / tracker", "rms_floor_in", "ratio"),
                            ("RMS platforms, baseline / tracker", "rms_platform_in", "ratio"),
                            ("recall, tracker - baseline", "recall", "diff"),
                            ("recall visible, tracker - baseline", "recall_visible", "diff"),
                            ("side accuracy, tracker - baseline", "side_accuracy", "diff")):
        e = paired(tr, bl, METRICS[key], how)
        out["vs_baseline"][f"{key}_{how}"] = e
        if e["value"] is None:
            txt = "-"
        elif how == "ratio":
            txt = f"{e['value']:.1f}x" + (f" [{e['ci'][0]:.1f}, {e['ci'][1]:.1f}]" if e["ci"] else "")
        else:
            txt = f"{100 * e['value']:+.1f} pts" + (f" [{100 * e['ci'][0]:+.1f}, {100 * e['ci'][1]:+.1f}]" if e["ci"] else "")
        print(f"  {label:36s}{txt:>28s}")
    out["breakdown"] = breakdowns(tr, bl)
    out["control"] = control_table(recs, tr)
    out["speed"] = speed(recs)
    return out


def breakdowns(tr: Pool, bl: Pool) -> dict:
    """Recall (visible) and side accuracy per kind, resolution and hard case."""
    out = {}
    head = (f"{'group (% [95 % CI])':24s}{'fighters':>9s}{'visible':>8s}{'tracker recall vis':>22s}"
            f"{'tracker side acc':>22s}{'baseline recall vis':>22s}{'baseline side acc':>22s}{'tracker angle RMS deg':>23s}")
    for title, groups in (("per kind and base", KIND_GROUPS), ("per resolution", RES_GROUPS), ("per hard case", list(CASES))):
        print(f"breakdown {title}\n{head}")
        for g in groups:
            n, nv = tr.total(f"g:{g}:n_t"), tr.total(f"g:{g}:n_vis")
            if not n and title != "per hard case":
                continue
            row = {"fighters": n, "visible": nv}
            cells = []
            for who, pool in (("tracker", tr), ("baseline", bl)):
                for what in ("recall_visible", "side_accuracy"):
                    e = estimate(pool, group_spec(g, what))
                    row[f"{who}_{what}"] = e
                    cells.append(fmt(e, what, pct=""))
            ang = estimate(tr, group_spec(g, "angle_rms_deg")) if tr.n_errs(f"g:{g}:angle") else None
            row["tracker_angle_rms_deg"] = ang
            out[g] = row
            print(f"{g:24s}{n:>9d}{nv:>8d}" + "".join(f"{c:>22s}" for c in cells) + f"{fmt(ang, 'angle'):>23s}")
    return out


def control_table(recs: list[dict], tr: Pool) -> dict:
    """Objective control agreement, all sets and per game."""
    out = {}
    print("objective control: rules on the tracker's state vs on the truth (per objective-frame)")
    print(f"{'':14s}{'objective-frames':>17s}{'agree [95 % CI]':>26s}{'too close':>10s}{'wrong':>7s}"
          f"{'of which missing':>18s}{'unseen, said':>14s}{'extra':>7s}{'agreeing yet flagged':>22s}")
    for name, sub in (("all", recs), ("warcry kinds", [r for r in recs if r["kind"] != "epic"]),
                      ("epic", [r for r in recs if r["kind"] == "epic"])):
        if not sub:
            continue
        p = tr if sub is recs else Pool(tallies(sub, "tracker"))
        e = estimate(p, METRICS["control_agreement"])
        row = {k: p.total(f"ctl_{k}") for k in ("n", "agree", "flag", "wrong", "missing", "unseen", "extra", "agree_flag")}
        row["agreement"] = e
        out[name] = row
        print(f"{name:14s}{row['n']:>17d}{fmt(e, 'control'):>26s}{row['flag']:>10d}{row['wrong']:>7d}"
              f"{row['missing']:>18d}{row['unseen']:>14d}{row['extra']:>7d}{row['agree_flag']:>22d}")
    return out


def speed(recs: list[dict]) -> dict:
    fs = [s for r in recs for s in r["timing"]["frame_s"]]
    bs = [s for r in recs for s in r["timing"]["baseline_frame_s"]]
    setup = [r["timing"]["setup_s"] for r in recs]
    by_res: dict[str, list[float]] = {}
    for r in recs:
        by_res.setdefault(r["resolution"], []).extend(r["timing"]["frame_s"])
    out = {"tracker_fps": len(fs) / sum(fs) if fs else None, "baseline_fps": len(bs) / sum(bs) if bs else None,
           "setup_s_mean": sum(setup) / len(setup) if setup else None,
           "tracker_fps_by_resolution": {k: len(v) / sum(v) for k, v in by_res.items() if v},
           "method": sorted({r["timing"]["method"] for r in recs})}
    print(f"speed: tracker {out['tracker_fps']:.2f} frames/s ({'/'.join(out['method'])} on every frame; "
          + ", ".join(f"{k} {v:.2f}" for k, v in out["tracker_fps_by_resolution"].items())
          + f"), calibration {out['setup_s_mean']:.1f} s a set; baseline {out['baseline_fps']:.1f} frames/s")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    corpus.add_selection_args(ap, "reporting")
    ap.add_argument("--jobs", type=int, default=2, help="sets rendered / tracked at once (2 cores here)")
    ap.add_argument("--public", action=argparse.BooleanOptionalAction, default=True,
                    help="also the public sets ../shared/eval/sets/warcry-1..3, reported apart")
    ap.add_argument("--json", dest="json_out", type=Path, default=None, help="write every figure and prediction")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    entries = corpus.selection(a)
    unrendered = corpus.ensure(entries, a.jobs)
    for e in unrendered:
        print(f"UNRENDERABLE {e.name}: the shared renderer fails on this seed; left out of the figures")
    entries = [e for e in entries if e not in unrendered]
    t_render = time.perf_counter() - t0
    recs = run_all(jobs_for(entries, a.public), a.jobs)
    failed = [r for r in recs if "error" in r]
    for r in failed:
        print(f"FAILED {r['name']}: {r['error']}")
    for r in recs:
        if r.get("refused"):
            what = "FAILED" if r["refused"].startswith("crashed") else "REFUSED"
            print(f"{what} in the tracker (scored as nothing found) {r['name']}: {r['refused']}")
    for r in recs:
        if r.get("cross_check"):
            print(f"WARNING {r['name']}: tallies differ from score.py: {'; '.join(r['cross_check'])}")
    ok = [r for r in recs if "error" not in r]
    out: dict = {"split": a.split, "pools": {}, "failed": {r["name"]: r["error"] for r in failed},
                 "unrenderable": [e.name for e in unrendered]}
    for pool, title in ((a.split, f"{a.split.upper()} split"), ("public", "public sets (shared/eval/sets)")):
        sub = [r for r in ok if r["pool"] == pool]
        if sub:
            out["pools"][pool] = report(title, sub)
            counts, asked = Counter(), Counter()
            for r in sub:
                counts.update(r["case_counts"])
                asked.update(r.get("case_eligible", {}))
            print("hard cases (fighter-frames; crescent among those at least half visible): " + ", ".join(
                f"{c} {counts[c]} of {asked[c]}" + (f" ({100 * counts[c] / asked[c]:.1f} %)" if asked[c] else "")
                for c in CASES))
            out["pools"][pool]["case_counts"] = dict(counts)
            out["pools"][pool]["case_eligible"] = dict(asked)
    wall = time.perf_counter() - t0
    out["wall_s"], out["render_s"] = wall, t_render
    print(f"\nwall time {wall:.1f} s (rendering missing sets {t_render:.1f} s); {len(ok)} sets scored, {len(failed)} failed")
    if a.json_out:
        a.json_out.write_text(json.dumps({**out, "sets": recs}, indent=1))
        print(f"wrote {a.json_out}")
    print(json.dumps(summary(out)))
    return 1 if failed else 0


def summary(out: dict) -> dict:
    """The one-line summary: headline figures of each pool."""
    s: dict = {"split": out["split"], "wall_s": round(out["wall_s"], 1), "failed": len(out["failed"])}
    for pool, p in out["pools"].items():
        v = lambda who, k: None if p[who][k]["value"] is None else round(p[who][k]["value"], 4)  # noqa: E731
        s[pool] = {"sets": len(p["sets"]),
                   **{f"tracker_{k}": v("tracker", k) for k in ("recall_visible", "precision", "side_accuracy",
                                                              "rms_floor_in", "rms_platform_in", "token_recall")},
                   **{f"baseline_{k}": v("baseline", k) for k in ("recall_visible", "side_accuracy", "rms_floor_in")},
                   "control_agreement": (p["control"].get("all", {}).get("agreement") or {}).get("value"),
                   "control_wrong": p["control"].get("all", {}).get("wrong"),
                   "tracker_fps": round(p["speed"]["tracker_fps"], 2) if p["speed"]["tracker_fps"] else None}
    return s


if __name__ == "__main__":
    sys.exit(main())
