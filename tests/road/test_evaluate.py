import numpy as np
import pytest
import torch
from PIL import Image

from drivemetrics._internal.pool import parallel_map
from drivemetrics.geometry import image_from_road_calib, read_kitti_calib, warp_image_to_bev
from drivemetrics.road.evaluate import evaluate_results, format_scores_table, frame_counts, transform_to_bev
from drivemetrics.road.io import (
    calib_file_for,
    category_frames,
    find_layout,
    gt_masks,
    parse_gt_name,
    read_confidence_png,
    read_gt_png,
    write_png,
)
from drivemetrics.road.pixel import PixelCounts, scores_from_counts

FRAMES = ["um_road_000000", "umm_road_000000", "uu_road_000000", "uu_road_000093"]
MAGENTA, RED, BLACK = (255, 0, 255), (255, 0, 0), (0, 0, 0)


def save_rgb(path, array):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.asarray(array, dtype=np.uint8)).save(path)


def make_binary_dataset(root, results):
    """kitti_road.md section 7 synthetic check: 10 x 10, 50 road pixels; prediction 40 TP + 10 FP (0 / 255)."""
    gt = np.zeros((10, 10, 3), np.uint8)
    gt[:] = RED
    gt[:5] = MAGENTA  # rows 0-4: 50 road pixels
    save_rgb(root / "gt_image_2" / "um_road_000000.png", gt)
    pred = np.zeros((10, 10), np.uint8)
    pred[:4] = 255  # 40 true positives
    pred[5, :] = 255  # 10 false positives
    results.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pred).save(results / "um_road_000000.png")


# --------------------------------------------------------------------------------------------- names and layout


def test_parse_gt_name():
    assert parse_gt_name("um_road_000012") == ("um", "road", "000012")
    assert parse_gt_name("/x/y/umm_road_000003.png") == ("umm", "road", "000003")
    assert parse_gt_name("um_lane_000000.png") == ("um", "lane", "000000")
    for bad in ("um_000012", "xx_road_000001", "um_road_12", "um_road_000012_extra"):
        with pytest.raises(ValueError, match="not a KITTI-ROAD ground-truth name"):
            parse_gt_name(bad)


def test_calib_file_for_drops_the_type_tag(tmp_path):
    (tmp_path / "um_000012.txt").write_text("x")
    assert calib_file_for(tmp_path, "um_road_000012") == tmp_path / "um_000012.txt"
    assert calib_file_for(tmp_path, "um_lane_000012.png") == tmp_path / "um_000012.txt"
    (tmp_path / "um_road_000012.txt").write_text("x")
    assert calib_file_for(tmp_path, "um_road_000012") == tmp_path / "um_road_000012.txt"  # exact name first
    with pytest.raises(FileNotFoundError, match=r"no calibration file for 'uu_road_000001'.*uu_000001.txt"):
        calib_file_for(tmp_path, "uu_road_000001")


def test_find_layout(tmp_path):
    (tmp_path / "a" / "gt_image_2").mkdir(parents=True)
    (tmp_path / "a" / "calib").mkdir()
    layout = find_layout(tmp_path / "a", need_calib=True)
    assert layout.gt_dir == tmp_path / "a" / "gt_image_2"
    assert layout.calib_dir == tmp_path / "a" / "calib"
    (tmp_path / "b" / "training" / "gt_image_2").mkdir(parents=True)
    layout = find_layout(tmp_path / "b")
    assert layout.root == tmp_path / "b" / "training"
    assert layout.calib_dir is None
    with pytest.raises(ValueError, match=r"has gt_image_2/ but no calib/"):
        find_layout(tmp_path / "b", need_calib=True)
    (tmp_path / "c" / "images").mkdir(parents=True)
    with pytest.raises(ValueError, match=r"unknown KITTI-ROAD layout in .*c: expected"):
        find_layout(tmp_path / "c")
    with pytest.raises(FileNotFoundError, match="data folder not found"):
        find_layout(tmp_path / "missing")


def test_category_frames(tmp_path):
    for name in ("um_road_000001", "um_road_000000", "umm_road_000000", "um_lane_000000", "um_road_bad"):
        (tmp_path / f"{name}.png").write_bytes(b"")
    assert category_frames(tmp_path, "um_road") == ["um_road_000000", "um_road_000001"]
    assert category_frames(tmp_path, "umm_road") == ["umm_road_000000"]
    with pytest.raises(ValueError, match="unknown category 'um'"):
        category_frames(tmp_path, "um")


# ------------------------------------------------------------------------------------------------------- PNGs


def test_gt_png_colours(tmp_path):
    gt = np.array([[MAGENTA, RED, BLACK], [(0, 0, 255), (255, 255, 255), RED]], np.uint8)
    save_rgb(tmp_path / "g.png", gt)
    rgb = read_gt_png(tmp_path / "g.png")
    assert rgb.shape == (3, 2, 3)
    road, valid = gt_masks(rgb)
    # road = blue > 0, valid = red > 0 (a blue-only pixel is road but not evaluated)
    assert road.tolist() == [[True, False, False], [True, True, False]]
    assert valid.tolist() == [[True, True, False], [False, True, True]]


def test_gt_png_errors(tmp_path):
    Image.fromarray(np.zeros((2, 2), np.uint8)).save(tmp_path / "grey.png")
    with pytest.raises(ValueError, match=r"grey.png: ground truth must be an 8-bit colour PNG"):
        read_gt_png(tmp_path / "grey.png")
    with pytest.raises(FileNotFoundError, match="ground-truth PNG file not found"):
        read_gt_png(tmp_path / "none.png")
    with pytest.raises(ValueError, match=r"`gt_rgb` must have shape ... x 3 x H x W"):
        gt_masks(torch.zeros(2, 4, 4))


def test_real_gt_colour_counts(fixtures_dir):
    # kitti_road.md section 3: um_road_000000 has 5,470 black, 398,964 red, 61,316 magenta pixels (375 x 1242)
    rgb = read_gt_png(fixtures_dir / "kitti_road/training/gt_image_2/um_road_000000.png")
    assert rgb.shape == (3, 375, 1242)
    road, valid = gt_masks(rgb)
    assert int((road & valid).sum()) == 61316
    assert int((valid & ~road).sum()) == 398964
    assert int((~valid).sum()) == 5470


def test_confidence_png_modes(tmp_path):
    values = np.arange(256, dtype=np.uint8).reshape(16, 16)
    Image.fromarray(values).save(tmp_path / "l.png")
    Image.fromarray(np.stack([values] * 3, -1)).save(tmp_path / "rgb.png")  # grey stored as RGB
    for name in ("l.png", "rgb.png"):
        got = read_confidence_png(tmp_path / name)
        assert got.dtype == torch.uint8
        np.testing.assert_array_equal(got.numpy(), values)
    Image.fromarray(np.zeros((4, 4), np.uint16) + 1000).save(tmp_path / "16.png")
    with pytest.raises(ValueError, match=r"16.png: results must be 8-bit PNGs"):
        read_confidence_png(tmp_path / "16.png")
    with pytest.raises(FileNotFoundError, match="result PNG file not found"):
        read_confidence_png(tmp_path / "none.png")


def test_write_png_round_trip(tmp_path):
    grey = torch.randint(0, 256, (5, 7), dtype=torch.uint8)
    write_png(tmp_path / "sub" / "g.png", grey)
    assert torch.equal(read_confidence_png(tmp_path / "sub" / "g.png"), grey)
    rgb = torch.randint(0, 256, (3, 5, 7), dtype=torch.uint8)
    write_png(tmp_path / "c.png", rgb)
    assert torch.equal(read_gt_png(tmp_path / "c.png"), rgb)
    with pytest.raises(ValueError, match="must be uint8"):
        write_png(tmp_path / "x.png", grey.float())


# -------------------------------------------------------------------------------------------------- evaluation


def test_binary_synthetic_matches_devkit_values(tmp_path):
    make_binary_dataset(tmp_path / "data", tmp_path / "res")
    scores = evaluate_results(tmp_path / "data", tmp_path / "res", progress=False)
    assert list(scores) == ["um_road"]
    s = scores["um_road"]
    # kitti_road.md section 7: MaxF 0.7999999999492, AvgPrec 0.7454545454531456, BestThresh 1/255, PRE = REC = 0.8
    assert s["max_f"] == pytest.approx(0.7999999999492, abs=1e-13)
    assert s["average_precision"] == pytest.approx(0.7454545454531456, abs=1e-13)
    assert s["best_threshold"] == 1 / 255
    assert s["precision_wp"] == pytest.approx(0.8)
    assert s["recall_wp"] == pytest.approx(0.8)
    assert s["fpr_wp"] == pytest.approx(0.2)
    assert s["accuracy_wp"] == pytest.approx(0.8)
    assert (s["total_positives"], s["total_negatives"]) == (50, 50)
    table = format_scores_table(scores)
    assert "um_road" in table
    assert "80.00" in table
    assert "1/255" in table


def test_size_mismatch_and_crop(tmp_path):
    make_binary_dataset(tmp_path / "data", tmp_path / "res")
    big = np.zeros((11, 12), np.uint8)
    big[:10, :10] = np.asarray(Image.open(tmp_path / "res" / "um_road_000000.png"))
    big[10:, :] = 255
    Image.fromarray(big).save(tmp_path / "res" / "um_road_000000.png")
    with pytest.raises(
        ValueError, match=r"result um_road_000000 is 11 x 12 but its ground truth is 10 x 10; pass --crop"
    ):
        evaluate_results(tmp_path / "data", tmp_path / "res", progress=False)
    cropped = evaluate_results(tmp_path / "data", tmp_path / "res", crop=True, progress=False)
    assert cropped["um_road"]["max_f"] == pytest.approx(0.7999999999492, abs=1e-13)
    Image.fromarray(big[:9, :9]).save(tmp_path / "res" / "um_road_000000.png")
    with pytest.raises(ValueError, match=r"is 9 x 9 but its ground truth is 10 x 10 \(--crop only crops"):
        evaluate_results(tmp_path / "data", tmp_path / "res", crop=True, progress=False)


def test_missing_results(tmp_path):
    make_binary_dataset(tmp_path / "data", tmp_path / "res")
    save_rgb(tmp_path / "data" / "gt_image_2" / "um_road_000001.png", np.full((10, 10, 3), 255, np.uint8))
    with pytest.raises(ValueError, match=r"um_road: 1 of 2 result files are missing .*um_road_000001.png"):
        evaluate_results(tmp_path / "data", tmp_path / "res", progress=False)
    save_rgb(tmp_path / "data" / "gt_image_2" / "uu_road_000000.png", np.full((10, 10, 3), 255, np.uint8))
    lines = []
    with pytest.raises(ValueError, match=r"no result PNG named like the ground truth"):
        evaluate_results(tmp_path / "data", tmp_path / "res", categories=["uu_road"], log=lines.append)
    assert lines == [f"uu_road: no result files in {tmp_path / 'res'}, skipped"]
    with pytest.raises(ValueError, match=r"`space` must be one of perspective, bev"):
        evaluate_results(tmp_path / "data", tmp_path / "res", space="image")
    with pytest.raises(ValueError, match=r"unknown categories \['um'\]"):
        evaluate_results(tmp_path / "data", tmp_path / "res", categories=["um"])
    with pytest.raises(FileNotFoundError, match="results folder not found"):
        evaluate_results(tmp_path / "data", tmp_path / "nope")
    with pytest.raises(ValueError, match="no calib/"):
        evaluate_results(tmp_path / "data", tmp_path / "res", space="bev")


# ------------------------------------------------------------------------------------- conformance (real data)


def baseline_prior(gt_dir):
    """The devkit's computeBaseline location potential over the 4 road frames: a 376 x 1242 uint8 map."""
    potential = np.zeros((376, 1242), np.float32)
    for key in FRAMES:
        rgb = np.asarray(Image.open(gt_dir / f"{key}.png").convert("RGB"))
        road = rgb[..., 2] > 0
        potential[: road.shape[0], : road.shape[1]] += road
    return ((potential / len(FRAMES)) * 255).astype(np.uint8)


def pooled_counts(fixtures_dir, space):
    root = fixtures_dir / "kitti_road/training"
    prior = torch.from_numpy(baseline_prior(root / "gt_image_2"))
    per_frame = {}
    for key in FRAMES:
        gt = read_gt_png(root / "gt_image_2" / f"{key}.png")
        h = None
        if space == "bev":
            h = image_from_road_calib(read_kitti_calib(calib_file_for(root / "calib", key)))
        per_frame[key] = frame_counts(gt, prior[: gt.shape[1], : gt.shape[2]], h)
    total = PixelCounts(*(sum(c) for c in zip(*per_frame.values(), strict=True)))
    return total, per_frame


# kitti_road.md section 7 (devkit's own helper.py / BirdsEyeView.py on the 4 frames)
EXPECTED = {
    "perspective": {
        "max_f": 0.8634450850048166,
        "average_precision": 0.9167009977958855,
        "best_threshold": 64 / 255,
        "wp32": {
            "precision_wp": 0.8671165109,
            "recall_wp": 0.8598045707,
            "fpr_wp": 0.0263306722,
            "fnr_wp": 0.1401953995,
        },
        "counts": (266125, 40783, 43393, 1508095),
        "per_image": {
            "um_road_000000": (0.9110107479, 0.9336981812, 128),
            "umm_road_000000": (0.9194780895, 0.9553328377, 1),
            "uu_road_000000": (0.9663876281, 0.9634725584, 64),
            "uu_road_000093": (0.7897113011, 0.8806196266, 128),
        },
    },
    "bev": {
        "max_f": 0.8036932039144153,
        "average_precision": 0.8368548662661625,
        "best_threshold": 64 / 255,
        "wp32": {
            "precision_wp": 0.7342315316,
            "recall_wp": 0.8876709342,
            "fpr_wp": 0.1917221099,
            "fnr_wp": 0.1123290807,
        },
        "counts": (407243, 147409, 51534, 621459),
        "per_image": {
            "um_road_000000": (0.7495937535, None, None),
            "umm_road_000000": (0.9367359422, None, None),
            "uu_road_000000": (0.9903347037, None, None),
            "uu_road_000093": (0.7734772164, None, None),
        },
    },
}


@pytest.mark.parametrize("space", ["perspective", "bev"])
def test_conformance_baseline_prior(fixtures_dir, space):
    expected = EXPECTED[space]
    total, per_frame = pooled_counts(fixtures_dir, space)
    scores = scores_from_counts(total)
    assert abs(float(scores["max_f"]) - expected["max_f"]) < 1e-9
    assert abs(float(scores["average_precision"]) - expected["average_precision"]) < 1e-9
    assert float(scores["best_threshold"]) == expected["best_threshold"]
    k = int(scores["best_threshold_index"])
    assert (int(total.tp[k]), int(total.fp[k]), int(total.fn[k]), int(total.tn[k])) == expected["counts"]
    devkit32 = scores_from_counts(total, compat="reference")
    for key, value in expected["wp32"].items():
        assert abs(float(devkit32[key]) - value) < 1e-9, key  # the devkit's float32 working point, printed to 1e-10
    for key, (max_f, ap, thresh) in expected["per_image"].items():
        s = scores_from_counts(per_frame[key])
        assert abs(float(s["max_f"]) - max_f) < 1e-9, key
        if ap is not None:
            assert abs(float(s["average_precision"]) - ap) < 1e-9, key
            assert round(float(s["best_threshold"]) * 255) == thresh, key


@pytest.mark.parametrize("space", ["perspective", "bev"])
def test_evaluate_results_count_like_frame_counts(fixtures_dir, tmp_path, space):
    # the numpy path (red / blue channels only, the devkit's lookup table for the BEV) and the tensor path
    # (device="cpu": the tensor warp, the same kernels on tensors) against the plain per-frame tensor path
    root = fixtures_dir / "kitti_road/training"
    results = tmp_path / "res"
    results.mkdir()
    prior = baseline_prior(root / "gt_image_2")
    for key in FRAMES:
        Image.fromarray(prior).save(results / f"{key}.png")
    total, per_frame = pooled_counts(fixtures_dir, space)
    runs = []
    for compat in ("default", "reference"):
        for device in (None, "cpu"):
            kwargs = {"space": space, "crop": True, "progress": False, "compat": compat, "workers": 1}
            runs.append(evaluate_results(root.parent, results, device=device, **kwargs))
        assert runs[-2] == runs[-1]  # every number of every category equal, bit for bit
    for scores in runs:
        assert scores["urban_road"]["total_positives"] == int(total.tp[0] + total.fn[0])
        assert scores["urban_road"]["total_negatives"] == int(total.fp[0] + total.tn[0])
        assert scores["urban_road"]["max_f"] == pytest.approx(EXPECTED[space]["max_f"], abs=1e-12)
        uu = PixelCounts(
            *(a + b for a, b in zip(per_frame["uu_road_000000"], per_frame["uu_road_000093"], strict=True))
        )
        assert scores["uu_road"]["max_f"] == pytest.approx(float(scores_from_counts(uu)["max_f"]), abs=1e-12)
    with pytest.raises(ValueError, match="`workers` must be a positive int"):
        evaluate_results(root.parent, results, space=space, crop=True, progress=False, workers=0)


def test_parallel_map_keeps_order_bounds_the_queue_and_raises():
    pulled = []

    def items():
        for i in range(100):
            pulled.append(i)
            yield i

    results = parallel_map(lambda i: i * i, items(), workers=3)
    assert next(results) == 0
    assert len(pulled) <= 2 * 3 + 1  # a bounded window, not the whole input
    assert list(results) == [i * i for i in range(1, 100)]

    def fail_at_5(i):
        if i == 5:
            raise ValueError("frame 5 is bad")
        return i

    got = []

    def consume():
        for value in parallel_map(fail_at_5, range(50), workers=2):
            got.append(value)

    with pytest.raises(ValueError, match="frame 5 is bad"):
        consume()
    assert got == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("workers", [1, 2])
def test_transform_to_bev_real_gt(fixtures_dir, tmp_path, workers):
    root = fixtures_dir / "kitti_road/training"
    inputs = tmp_path / "in"
    inputs.mkdir()
    for key in ("um_road_000000", "um_lane_000000"):
        (inputs / f"{key}.png").write_bytes((root / "gt_image_2" / f"{key}.png").read_bytes())
    grey = np.asarray(Image.open(root / "gt_image_2" / "um_road_000000.png").convert("RGB"))[..., 2]
    Image.fromarray(grey).save(inputs / "uu_road_000093.png")  # 8-bit grey, with another frame's calibration
    written = transform_to_bev(root / "calib", inputs, tmp_path / "out", progress=False, threads=workers)
    assert not list((tmp_path / "out").glob("*.tmp*"))
    assert [p.name for p in written] == ["um_lane_000000.png", "um_road_000000.png", "uu_road_000093.png"]
    # kitti_road.md section 7: BEV colour counts (black incl. unseen, red, magenta)
    for key, (black, red, magenta) in {
        "um_road_000000": (12638, 224560, 82802),
        "um_lane_000000": (12638, 265378, 41984),
    }.items():
        bev = np.asarray(Image.open(tmp_path / "out" / f"{key}.png"))
        assert bev.shape == (800, 400, 3)
        assert int((bev.sum(-1) == 0).sum()) == black
        assert int(((bev[..., 0] == 255) & (bev[..., 2] == 0)).sum()) == red
        assert int(((bev[..., 0] == 255) & (bev[..., 2] == 255)).sum()) == magenta
    bev = np.asarray(Image.open(tmp_path / "out" / "uu_road_000093.png"))
    h = image_from_road_calib(read_kitti_calib(root / "calib" / "uu_000093.txt"))
    expect, _ = warp_image_to_bev(torch.from_numpy(grey.copy())[None, None], h, mode="devkit")
    assert bev.dtype == np.uint8
    np.testing.assert_array_equal(bev, expect[0, 0].numpy())


def test_transform_to_bev_errors(tmp_path):
    (tmp_path / "calib").mkdir()
    (tmp_path / "in").mkdir()
    with pytest.raises(ValueError, match=r"no .png files in"):
        transform_to_bev(tmp_path / "calib", tmp_path / "in", tmp_path / "out")
    Image.fromarray(np.zeros((4, 4), np.uint8)).save(tmp_path / "in" / "um_road_000001.png")
    with pytest.raises(FileNotFoundError, match=r"no calibration file for 'um_road_000001'"):
        transform_to_bev(tmp_path / "calib", tmp_path / "in", tmp_path / "out")
    with pytest.raises(FileNotFoundError, match=r"input folder not found"):
        transform_to_bev(tmp_path / "calib", tmp_path / "nope", tmp_path / "out")
    with pytest.raises(ValueError, match=r"is the input folder"):
        transform_to_bev(tmp_path / "calib", tmp_path / "in", tmp_path / "in" / ".")
