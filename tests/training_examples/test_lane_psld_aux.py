"""The PSLD auxiliary-loss example: same start for both runs, held-out scores equal the functionals, JSON, config."""

from __future__ import annotations

import json

import pytest
import torch

pytest.importorskip("pytorch_lightning")
pytestmark = pytest.mark.filterwarnings("ignore:.*LeafSpec.*")

from drivemetrics.functional import psld, tusimple_metrics  # noqa: E402
from drivemetrics.lane.geometry import center_from_image_lanes  # noqa: E402
from training_examples import lane_psld_aux as example  # noqa: E402


@pytest.fixture(autouse=True)
def _one_thread():
    """Small tensors: one thread is faster (and the CI machine is shared); restored afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


TINY_CONFIG = """
seed: 3
psld_weight: 2.0
max_epochs: 1
batch_size: 8
e2e_frames: 3
train: {clips: 4, frames: 4}
val: {clips: 1, frames: 4}
test: {clips: 2, frames: 4}
model: {width: 8, lr: 0.003, horizon_frames: 5, image_width: 256}
quick: {max_epochs: 2}
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("lane") / "tiny.yaml"
    path.write_text(TINY_CONFIG)
    return path


def test_both_runs_start_from_the_same_weights(tiny):
    config = example.load_config(tiny, quick=False)
    config["max_epochs"] = 0
    data = example.load_clips(2, 2, seed=0)
    baseline = example.train_one(config, 0.0, data, data).state_dict()
    with_psld = example.train_one(config, 2.0, data, data).state_dict()
    assert baseline.keys() == with_psld.keys()
    assert all(torch.equal(baseline[k], with_psld[k]) for k in baseline)


def test_held_out_scores_equal_the_functionals(tiny):
    config = example.load_config(tiny, quick=False)
    train = example.load_clips(4, 4, seed=1)
    test = example.load_clips(2, 4, seed=2)
    model = example.train_one(config, 2.0, train, train)
    scores = example.held_out_scores(model, test, e2e_frames=3)
    with torch.no_grad():
        x = model.net.to_pixels(model.net(test["images"]))
    expected = tusimple_metrics(x, test["lanes"], h_samples=test["clips"].h_samples, pixel_threshold=4.0)
    for key in ("accuracy", "fp", "fn", "f1"):
        assert scores[f"tusimple_{key}"] == pytest.approx(expected[key].item(), abs=1e-9)
    uv = torch.stack([x.double(), test["clips"].h_samples.expand_as(x)], -1)
    center = center_from_image_lanes(uv, test["clips"].image_from_road, test["clips"].z_samples)
    value = psld(center, test["center"], speed=test["speed"], z_samples=test["clips"].z_samples, horizon_frames=5)
    assert scores["psld"] == pytest.approx(value.item(), rel=1e-5)
    assert 0 <= scores["e2e_ld"] <= scores["e2e_ld_max"]


def test_run_writes_both_runs_to_json(tiny, tmp_path):
    out, figure = tmp_path / "lane.json", tmp_path / "lane.png"
    result = example.run(["--config", str(tiny), "--quick", "--json", str(out), "--figure", str(figure)])
    written = json.loads(out.read_text())
    assert written["config"]["max_epochs"] == 2  # the quick override
    assert written["held_out_frames"] == 8
    keys = {"tusimple_accuracy", "tusimple_fp", "tusimple_fn", "tusimple_f1", "psld", "e2e_ld", "e2e_ld_max"}
    assert set(written["baseline"]) == keys
    assert set(written["psld_aux"]) == keys
    assert written["baseline"] == pytest.approx(result["baseline"])
    assert written["psld_aux"]["psld"] != pytest.approx(written["baseline"]["psld"], rel=1e-9)  # the loss acts
    assert {"val/psld", "val/tusimple_accuracy", "val/tusimple_f1"} <= set(written["last_validation"]["baseline"])
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_config_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="config file not found"):
        example.load_config(tmp_path / "missing.yaml", quick=False)
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: 0\n")
    with pytest.raises(ValueError, match="missing keys"):
        example.load_config(bad, quick=False)


def test_shipped_config_and_its_quick_section():
    full = example.load_config(example.CONFIG, quick=False)
    quick = example.load_config(example.CONFIG, quick=True)
    assert "quick" not in full
    assert "quick" not in quick
    assert full["train"] == {"clips": 48, "frames": 10}
    assert full["e2e_frames"] == 20
    assert quick["train"] == {"clips": 24, "frames": 5}  # the quick section overrides these four
    assert quick["val"] == {"clips": 2, "frames": 5}
    assert quick["test"] == {"clips": 4, "frames": 20}
    assert quick["e2e_frames"] == 10
    untouched = ("seed", "psld_weight", "max_epochs", "batch_size", "model")
    assert {k: quick[k] for k in untouched} == {k: full[k] for k in untouched}
    assert quick["model"]["image_width"] == 256
