"""Calibration benchmark: real photographs, the independent eval renders (truth used ONLY
here, to score), the honesty of the stated 1-sigma, a camera bump, marker detection speed.

    python benchmarks/calibration.py [--sets warcry-1,warcry-2,warcry-3]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibration.boards import CirclesGrid, board_from_config  # noqa: E402
from calibration.camera import CameraModel, Intrinsics, TablePose  # noqa: E402
from calibration.intrinsics import calibrate_camera  # noqa: E402
from calibration.live import PoseTracker  # noqa: E402
from calibration.markers import MarkerDetections, detect_markers  # noqa: E402
from calibration.table import estimate_table_pose, pose_covariance, solve_pose, table_object_points, _residuals  # noqa: E402
from tracker.config import GameConfig  # noqa: E402

SETS = Path(__file__).resolve().parents[1].parent / "shared" / "eval" / "sets"
REAL = SETS.parents[1] / "real-calibration" / "circles-grid-left"


def rms(e):
    e = np.asarray(e).reshape(-1, 2)
    return float(np.sqrt((e ** 2).sum(1).mean()))


def truth_camera(t):
    c = t["camera"]
    intr = Intrinsics(np.array(c["K"]), np.array(c["dist"]), (t["image"]["width"], t["image"]["height"]), 0.0)
    return CameraModel(intr, TablePose(np.array(c["rvec"]), np.array(c["tvec"]), 0.0, (), ()))


def tag_corners_world(entry):
    x, y, th = entry["pose"]["x"], entry["pose"]["y"], entry["pose"]["theta"]
    h = entry["tag_size_in"] / 2
    loc = np.array([(-h, h), (h, h), (h, -h), (-h, -h)])
    R = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    return np.c_[loc @ R.T + [x, y], np.full(4, entry["height_in"])]


def real_photos():
    print("== real photographs: circles-grid-left (25 views, 640x512) ==")
    b = CirclesGrid(4, 11, 20)
    t0 = time.time()
    r = calibrate_camera(REAL, b, fix_principal_point=True, fix_aspect_ratio=True, zero_tangent=True, progress=False)
    pub = 522.78124071224499
    print(f"published flags: {len(r.views_used)}/25 views, fx {r.intrinsics.fx:.2f} px (published {pub:.2f}, "
          f"diff {100 * (r.intrinsics.fx / pub - 1):+.3f} %), RMS {r.intrinsics.rms_px:.4f} px (published 0.0937)")
    r2 = calibrate_camera(REAL, b, progress=False)
    print(f"default flags:   {len(r2.views_used)}/25 views, fx {r2.intrinsics.fx:.2f} fy {r2.intrinsics.fy:.2f}, "
          f"RMS {r2.intrinsics.rms_px:.4f} px  ({time.time() - t0:.1f} s)")


def naive_homography(det: MarkerDetections, table):
    by = {m.id: m for m in table.markers}
    ids = [i for i in by if det.get(i) is not None]
    src = np.array([det.get(i).mean(0) for i in ids], np.float64)
    dst = np.array([by[i].centre_in for i in ids], np.float64)
    H, _ = cv2.findHomography(src, dst, 0)
    return lambda uv: (lambda q: q[:, :2] / q[:, 2:3])(np.c_[np.asarray(uv, float).reshape(-1, 2), np.ones(len(uv))] @ H.T)


def eval_set(name, use_table_view=False):
    s = SETS / name
    t = json.loads((s / "truth.json").read_text())  # scoring only
    cfg = GameConfig.load(s / "setup.json")
    tcam = truth_camera(t)
    img = cv2.imread(str(s / "table.jpg"))
    t0 = time.time()
    extra = ()
    if use_table_view:
        det0 = detect_markers(img, cfg.table.dictionary)
        ids = [m.id for m in cfg.table.markers if det0.get(m.id) is not None]
        extra = [("table.jpg markers", table_object_points(cfg.table, ids).reshape(-1, 3),
                  np.stack([det0.get(i) for i in ids]).reshape(-1, 2))]
    res = calibrate_camera(s / "calib", board_from_config(cfg.calibration_board), progress=False, extra_views=extra)
    intr = res.intrinsics
    pose = estimate_table_pose(img, intr, cfg.table)
    cam = CameraModel(intr, pose)
    dt = time.time() - t0
    K = tcam.intrinsics.K
    print(f"-- {name}{' (+ table.jpg markers as an extra calibration view)' if use_table_view else ''}: "
          f"{len(res.views_used)} views, calib RMS {intr.rms_px:.3f} px, fx {intr.fx:.1f} (true {K[0, 0]:.1f}, "
          f"{100 * (intr.fx / K[0, 0] - 1):+.2f} %), fy {intr.fy:.1f} (true {K[1, 1]:.1f}), cx {intr.K[0, 2]:.1f} "
          f"(true {K[0, 2]:.1f}), cy {intr.K[1, 2]:.1f} (true {K[1, 2]:.1f}); table reproj "
          f"{pose.reprojection_error_px:.3f} px; {dt:.1f} s")

    det = detect_markers(img, cfg.table.dictionary)
    naive = naive_homography(det, cfg.table)
    # known 3D points: detected table-marker corners at z=0, terrain tag corners at their heights
    pts, obs = [], []
    for m in cfg.table.markers:
        c = det.get(m.id)
        if c is not None:
            pts.append(np.array(m.corners_in())); obs.append(c)
    n_table = len(pts) * 4
    for e in t["terrain"]:
        c = det.get(e["tag_id"])
        if c is not None:
            pts.append(tag_corners_world(e)); obs.append(c)
    P = np.concatenate(pts); uv = np.concatenate(obs).astype(np.float64)
    xy = cam.unproject(uv, P[:, 2])
    xyn = naive(uv)
    e_t, e_h = xy[:n_table] - P[:n_table, :2], xy[n_table:] - P[n_table:, :2]
    n_t, n_h = xyn[:n_table] - P[:n_table, :2], xyn[n_table:] - P[n_table:, :2]
    zs = P[n_table:, 2]
    print(f"   detected corners -> world: table markers z=0: {rms(e_t):.4f} in RMS (naive homography {rms(n_t):.4f}, "
          f"x{rms(n_t) / rms(e_t):.1f}); terrain tags z={zs.min():.1f}-{zs.max():.1f}: {rms(e_h):.4f} in "
          f"(naive {rms(n_h):.4f}, x{rms(n_h) / rms(e_h):.1f})")
    g = np.mgrid[0:30:31j, 0:22:23j].reshape(2, -1).T
    out = []
    for z in (0.0, 5.0):
        Pz = np.c_[g, np.full(len(g), z)]
        uvz = tcam.project(Pz)
        e = cam.unproject(uvz, z) - g
        en = naive(uvz) - g
        sig = cam.position_sigma(Pz, 0.0)
        sig0 = cam.position_sigma(Pz, 0.0, include_intrinsics=False)
        out.append((rms(e), rms(en)))
        print(f"   play-area grid (true projection, no detection noise) z={z:.0f}: {rms(e):.4f} in RMS, max "
              f"{np.abs(e).max():.4f}; naive homography {rms(en):.4f} (x{rms(en) / rms(e):.0f}); stated 1-sigma "
              f"(x,y RMS) {rms(sig):.4f} [pose-only {rms(sig0):.4f}], |err|<=1 sigma {(np.abs(e) <= sig).mean():.0%}")
    cp = cam.camera_position - np.array(t["camera"]["position_in"])
    print(f"   camera position error {np.round(cp, 3).tolist()} in, |d| = {np.linalg.norm(cp):.3f} in; stated 1-sigma "
          f"{np.round(cam.camera_position_sigma(), 3).tolist()} in")
    return {"z0": out[0][0], "z5": out[1][0], "cam": float(np.linalg.norm(cp)), "naive_z0": out[0][1],
            "corners_z0": rms(e_t), "corners_tags": rms(e_h), "naive_corners_z0": rms(n_t), "naive_tags": rms(n_h)}


def honesty(name="warcry-1", trials=400, pix=0.25, point_pix=0.5, seed=0):
    """Monte Carlo: synthetic marker-corner observations (projectPoints + Gaussian noise)
    -> pose + covariance -> points observed with noise -> fraction of true errors inside
    the stated 1 and 2 sigma, per axis."""
    t = json.loads((SETS / name / "truth.json").read_text())
    cfg = GameConfig.load(SETS / name / "setup.json")
    tcam = truth_camera(t)
    intr = tcam.intrinsics
    rng = np.random.default_rng(seed)
    obj = table_object_points(cfg.table, [0, 1, 2, 3]).reshape(-1, 3)
    img_true = tcam.project(obj)
    ks = []
    for k in range(trials):
        img = img_true + rng.normal(0, pix, img_true.shape)
        r, tv = solve_pose(obj, img, intr)
        res = _residuals(obj, img, r, tv, intr)
        cov, _ = pose_covariance(obj, r, tv, intr, res)
        cam = CameraModel(intr, TablePose(r, tv, 0, (0, 1, 2, 3), (), cov))
        P = np.c_[rng.uniform(0, 30, 20), rng.uniform(0, 22, 20), rng.choice([0.0, 3.0, 5.0], 20)]
        uv = tcam.project(P) + rng.normal(0, point_pix, (20, 2))
        err = cam.unproject(uv, P[:, 2]) - P[:, :2]
        sig = cam.position_sigma(P, point_pix)
        ks.append(np.abs(err) / sig)
    ks = np.concatenate(ks)
    for label, pp in (("", point_pix),):
        w1 = (ks <= 1).mean(0)
        w2 = (ks <= 2).mean(0)
    print(f"== honesty of position_sigma ({name} camera, corners noise {pix} px, point noise {point_pix} px, "
          f"{trials} trials x 20 points) ==")
    print(f"   within 1 sigma: x {w1[0]:.1%} y {w1[1]:.1%}  (want 60-75 %);  within 2 sigma: x {w2[0]:.1%} "
          f"y {w2[1]:.1%} (want >= 93 %)")
    # pose-only part (point observed exactly): tests the pose covariance itself
    ks = []
    for k in range(trials):
        img = img_true + rng.normal(0, pix, img_true.shape)
        r, tv = solve_pose(obj, img, intr)
        cov, _ = pose_covariance(obj, r, tv, intr, _residuals(obj, img, r, tv, intr))
        cam = CameraModel(intr, TablePose(r, tv, 0, (0, 1, 2, 3), (), cov))
        P = np.c_[rng.uniform(0, 30, 5), rng.uniform(0, 22, 5), rng.choice([0.0, 5.0], 5)]
        err = cam.unproject(tcam.project(P), P[:, 2]) - P[:, :2]
        ks.append(np.abs(err) / cam.position_sigma(P, 0.0))
    ks = np.concatenate(ks)
    print(f"   pose-only (noise-free point): within 1 sigma x {(ks[:, 0] <= 1).mean():.1%} y {(ks[:, 1] <= 1).mean():.1%}; "
          f"2 sigma x {(ks[:, 0] <= 2).mean():.1%} y {(ks[:, 1] <= 2).mean():.1%}")


def honesty_full(name="warcry-3", trials=80, board_pix=0.08, pix=0.25, point_pix=0.5, seed=5):
    """Monte Carlo of the whole chain: synthetic board corners (the truth's 15 board poses,
    projectPoints + noise) -> calibration + its covariance -> synthetic table-marker
    corners + noise -> pose -> points at z 0/3/5 observed with noise -> |error| / sigma."""
    from calibration.boards import CharucoBoard
    from calibration.intrinsics import intrinsics_covariance
    t = json.loads((SETS / name / "truth.json").read_text())
    cfg = GameConfig.load(SETS / name / "setup.json")
    tcam = truth_camera(t)
    K, d = tcam.intrinsics.K, tcam.intrinsics.dist
    b = CharucoBoard()
    rng = np.random.default_rng(seed)
    objt = table_object_points(cfg.table, [0, 1, 2, 3]).reshape(-1, 4, 3)
    ks, ks0 = [], []
    for k in range(trials):
        obj, img = [], []
        for v in t["calib"]["views"]:
            P, _ = cv2.projectPoints(b.all_corners.astype(float), np.array(v["rvec"]), np.array(v["tvec"]), K, d)
            obj.append(b.all_corners.reshape(-1, 1, 3))
            img.append((P.reshape(-1, 2) + rng.normal(0, board_pix, (len(P), 2))).astype(np.float32).reshape(-1, 1, 2))
        rms_, K2, d2, rv, tv = cv2.calibrateCamera(obj, img, (1920, 1080), None, None)
        C = intrinsics_covariance(obj, img, rv, tv, K2, d2, 0, rms_)
        intr = Intrinsics(K2, d2, (1920, 1080), rms_, np.sqrt(np.diag(C)), C)
        c = tcam.project(objt.reshape(-1, 3)).reshape(4, 4, 2) + rng.normal(0, pix, (4, 4, 2))
        pose = estimate_table_pose(None, intr, cfg.table, detections=MarkerDetections(np.arange(4), c.astype(np.float32)))
        cam = CameraModel(intr, pose)
        P = np.c_[rng.uniform(0, 30, 20), rng.uniform(0, 22, 20), rng.choice([0.0, 3.0, 5.0], 20)]
        uvt = tcam.project(P)
        err = cam.unproject(uvt + rng.normal(0, point_pix, uvt.shape), P[:, 2]) - P[:, :2]
        ks.append(np.abs(err) / cam.position_sigma(P, point_pix))
        err0 = cam.unproject(uvt, P[:, 2]) - P[:, :2]
        ks0.append(np.abs(err0) / cam.position_sigma(P, 0.0))
    print(f"== honesty, whole chain ({name} camera: synthetic calibration from its 15 board poses + {board_pix} px "
          f"noise, table corners + {pix} px, {trials} trials x 20 points) ==")
    for lab, kk in ((f"points observed with {point_pix} px noise", ks), ("calibration + pose only (exact pixel)", ks0)):
        kk = np.concatenate(kk)
        w1, w2 = (kk <= 1).mean(0), (kk <= 2).mean(0)
        print(f"   {lab}: within 1 sigma x {w1[0]:.1%} y {w1[1]:.1%} (want 60-75 %); within 2 sigma x {w2[0]:.1%} "
              f"y {w2[1]:.1%} (want >= 93 %)")


def bumped_pose(pose: TablePose, shift_in=(1.0, 0.0, 0.0), tilt_deg=2.0) -> TablePose:
    """The camera moved by shift_in (world inches) and tilted by tilt_deg about its own x axis."""
    R = pose.R
    C = -R.T @ pose.tvec + np.asarray(shift_in)
    Rt = cv2.Rodrigues(np.array([np.deg2rad(tilt_deg), 0.0, 0.0]))[0]
    R2 = Rt @ R
    return TablePose(cv2.Rodrigues(R2)[0].ravel(), -R2 @ C, 0, (), ())


def warp_to_pose(img, intr, pose_from: TablePose, pose_to: TablePose):
    """Re-render ``img`` (taken from pose_from) as seen from pose_to, exact for the table
    plane z = 0 (lens distortion included): each output pixel -> its point on z=0 from
    pose_to -> pixel in the original view."""
    h, w = img.shape[:2]
    u, v = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
    uv = np.stack([u.ravel(), v.ravel()], 1)
    xy = CameraModel(intr, pose_to).unproject(uv, 0.0)
    src = CameraModel(intr, pose_from).project(np.c_[xy, np.zeros(len(xy))]).astype(np.float32)
    return cv2.remap(img, src[:, 0].reshape(h, w), src[:, 1].reshape(h, w), cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_REPLICATE)


def bump(name="warcry-1", n_before=8, n_after=10, seed=1):
    print("== camera bump (1 in shift + 2 deg tilt mid-clip) ==")
    t = json.loads((SETS / name / "truth.json").read_text())
    cfg = GameConfig.load(SETS / name / "setup.json")
    tcam = truth_camera(t)
    intr = tcam.intrinsics
    rng = np.random.default_rng(seed)
    obj = table_object_points(cfg.table, [0, 1, 2, 3]).reshape(-1, 4, 3)
    p0 = tcam.pose
    p1 = bumped_pose(p0)
    # (a) synthetic corner observations, 0.15 px noise
    tr = PoseTracker(intr, cfg.table)
    g = np.c_[np.mgrid[0:30:7j, 0:22:5j].reshape(2, -1).T, np.zeros(35)]
    errs = {}
    for f in range(n_before + n_after):
        pose = p0 if f < n_before else p1
        cm = CameraModel(intr, pose)
        c = cm.project(obj.reshape(-1, 3)).reshape(-1, 4, 2) + rng.normal(0, 0.15, (4, 4, 2))
        st = tr.update(detections=MarkerDetections(np.arange(4), c.astype(np.float32)))
        if st.camera is not None:
            errs[f] = rms(st.camera.unproject(cm.project(g), 0.0) - g[:, :2])
        if f >= n_before - 1 and f <= n_before + 4:
            print(f"   synthetic frame {f}: {st.health:24s} position RMS {errs.get(f, float('nan')):.4f} in")
    rep = [f for f, h in tr.history if h.startswith("re-posed")]
    lag = rep[0] - n_before + 1 if rep else None
    print(f"   synthetic: re-posed {lag} frame(s) after the bump; position RMS before {np.mean([errs[f] for f in range(2, n_before)]):.4f} "
          f"in, after {np.mean([errs[f] for f in range(n_before + 4, n_before + n_after)]):.4f} in")
    # (b) real pixels: table.jpg warped to the bumped pose (exact for the table plane)
    img = cv2.imread(str(SETS / name / "table.jpg"))
    img1 = warp_to_pose(img, intr, p0, p1)
    tr = PoseTracker(intr, cfg.table)
    seq = [img] * 3 + [img1] * 4
    res = []
    for f, im in enumerate(seq):
        st = tr.update(im)
        truth = p0 if f < 3 else p1
        cm = CameraModel(intr, truth)
        res.append((st.health, rms(st.camera.unproject(cm.project(g), 0.0) - g[:, :2]) if st.camera else float("nan")))
    print("   warped table.jpg: " + "; ".join(f"f{f} {h} {e:.4f} in" for f, (h, e) in enumerate(res)))


def speed(name="warcry-1", n=10):
    img = cv2.imread(str(SETS / name / "frames" / "000000.jpg"))
    gray = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    for kw, label in ((dict(refine=False), "detect only (half-res)"), (dict(refine=True), "detect + edge refine"),
                      (dict(refine=True, ids_wanted=[0, 1, 2, 3]), "table markers only, refined")):
        detect_markers(gray, "DICT_4X4_100", **kw)
        t0 = time.perf_counter()
        for _ in range(n):
            d = detect_markers(gray, "DICT_4X4_100", **kw)
        print(f"   {label}: {1000 * (time.perf_counter() - t0) / n:.1f} ms per 1920x1080 frame ({len(d)} markers)")
    cfg = GameConfig.load(SETS / name / "setup.json")
    t = json.loads((SETS / name / "truth.json").read_text())
    tr = PoseTracker(truth_camera(t).intrinsics, cfg.table)
    tr.update(gray)
    t0 = time.perf_counter()
    for _ in range(n):
        st = tr.update(gray)
    print(f"   PoseTracker.update (regions around the expected table markers + refine + pose): "
          f"{1000 * (time.perf_counter() - t0) / n:.1f} ms per frame ({st.health})")
    import os
    print(f"   (load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores: timings are inflated when shared)")


def bundled_sample(folder: Path) -> None:
    """The set-up the tracker runs (``calibrate_folder``: board views -> intrinsics, the
    empty table's markers found at full resolution -> pose, tagged terrain placed) on a
    bundled sample or an eval set, scored on a grid over its play area at a base rim's
    height against the render's camera, and by its terrain's footprints."""
    from tracker.calibrate import calibrate_folder

    t = json.loads((folder / "truth.json").read_text())  # scoring only
    cfg = GameConfig.load(folder / "game.yaml" if (folder / "game.yaml").exists() else folder / "setup.json")
    setup = calibrate_folder(folder, cfg)
    tcam = truth_camera(t)
    W, D = cfg.table.play_area_in
    g = np.mgrid[0:W:25j, 0:D:17j].reshape(2, -1).T
    z = cfg.base_thickness_in
    P = np.c_[g, np.full(len(g), z)]
    e = setup.camera.unproject(tcam.project(P), z) - g
    cp = np.asarray(setup.camera.camera_position) - np.asarray(t["camera"]["position_in"])
    pose = setup.camera.pose
    print(f"-- {folder.name}: camera {t['camera']['height_in']:.0f} in up, table markers used "
          f"{list(pose.markers_used)} (missing {list(pose.markers_missing)}); play-area grid at rim height "
          f"{rms(e):.4f} in RMS, max {np.abs(np.hypot(*e.T)).max():.4f} in; camera position off by {np.linalg.norm(cp):.3f} in")
    # Tagged terrain placed from its tag (pose, then the library's footprint): each
    # footprint corner against the render's, matched to the nearest (order aside).
    placed = {p.tag_id: np.array(p.footprint) for p in setup.terrain if p.tag_id is not None}
    errs, missing = [], []
    for e_t in t.get("terrain", []):
        got = placed.get(e_t["tag_id"])
        if got is None:
            missing.append(e_t["tag_id"])
            continue
        want = np.array(e_t["footprint"])
        errs += list(np.linalg.norm(want[:, None] - got[None], axis=2).min(axis=1))
    if errs:
        print(f"   terrain placed from its tags: {len(placed)} pieces, footprint corners {float(np.sqrt(np.mean(np.square(errs)))):.4f} in RMS, "
              f"max {max(errs):.4f} in" + (f"; not found: {missing}" if missing else ""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="warcry-1,warcry-2,warcry-3")
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    t0 = time.time()
    real_photos()
    print("== eval renders: calib/ -> intrinsics, table.jpg -> pose, scored against truth.json ==")
    rows = []
    for n in a.sets.split(","):
        rows.append(eval_set(n))
    for n in a.sets.split(","):
        eval_set(n, use_table_view=True)
    print(f"   MEAN over sets (board views only): grid z=0 {np.mean([r['z0'] for r in rows]):.4f} in, z=5 "
          f"{np.mean([r['z5'] for r in rows]):.4f} in, camera {np.mean([r['cam'] for r in rows]):.3f} in; naive z=0 "
          f"{np.mean([r['naive_z0'] for r in rows]):.4f} in (x{np.mean([r['naive_z0'] for r in rows]) / np.mean([r['z0'] for r in rows]):.0f})")
    print("== bundled samples: the tracker's own set-up, scored against truth.json ==")
    for name in ("warcry-demo", "epic-demo"):
        bundled_sample(Path(__file__).resolve().parents[1] / "sample_footage" / name)
    print("== eval sets: the tracker's own set-up (as the bundled samples above) ==")
    for n in a.sets.split(","):
        bundled_sample(SETS / n)
    honesty()
    honesty_full()
    bump()
    print("== marker detection speed ==")
    speed()
    print(f"total {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
