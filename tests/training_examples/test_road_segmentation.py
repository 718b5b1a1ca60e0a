"""The road segmentation example: logged metrics equal the functionals, DDP pools, resume, KITTI folder, JSON."""

from __future__ import annotations

import json

import pytest
import torch

pytest.importorskip("pytorch_lightning")
pytest.importorskip("jsonargparse")
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*LeafSpec.*",
    "ignore:.*LightningCLI.s args parameter.*",
    "ignore:.*deprecated in v4.*",
    "ignore:.*JsonargparseDeprecationWarning.*",
)

from drivemetrics.functional import driving_corridor_scores, road_pixel_scores  # noqa: E402
from drivemetrics.road.bev_inputs import pixel_inputs_to_bev  # noqa: E402
from training_examples import road_segmentation as example  # noqa: E402


@pytest.fixture(autouse=True)
def _one_thread():
    """Small tensors: one thread is faster (and the CI machine is shared); restored afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


TINY = ["--data.train_frames=16", "--data.val_frames=8", "--data.batch_size=4", "--trainer.max_epochs=1"]


def _expected(cli) -> dict[str, float]:
    """The validation metrics computed in one process with the functionals, on the whole validation set."""
    model, data = cli.model.eval(), cli.datamodule
    data.setup("validate")  # after ddp_spawn only the child processes had built the data
    frames = data.val_set.tensors
    with torch.no_grad():
        probs = model(frames["image"])
    valid, hom = frames["valid"], frames["homography"]
    pixel = road_pixel_scores(probs[:, 0], frames["road"], valid=valid)
    road_bev, road_target, road_valid = pixel_inputs_to_bev(probs[:, 0], frames["road"], valid, hom, model.grid)
    bev = road_pixel_scores(road_bev, road_target, valid=road_valid)
    lane_bev, lane_target, lane_valid = pixel_inputs_to_bev(probs[:, 1], frames["lane"], valid, hom, model.grid)
    corridor = driving_corridor_scores(
        lane_bev, lane_target, valid=lane_valid, threshold=model.hparams.corridor_threshold, grid=model.grid
    )
    out = {
        "val/maxf": pixel["max_f"],
        "val/ap": pixel["average_precision"],
        "val/bev_maxf": bev["max_f"],
        "val/bev_ap": bev["average_precision"],
    }
    out.update({f"val/corridor_{k}": v for k, v in corridor.items()})
    return {k: float(v) for k, v in out.items()}


def _assert_logged_equal(logged: dict[str, float], expected: dict[str, float]) -> None:
    for key, value in expected.items():
        assert logged[key] == pytest.approx(value, abs=1e-6), key


def test_quick_run_logs_the_pooled_metrics_and_writes_json(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the quick run writes only what it was asked for (no checkpoint folder in the cwd)
    out = tmp_path / "road.json"
    figure = tmp_path / "road.png"
    cli, result = example.run(["--quick", *TINY, "--json", str(out), "--figure", str(figure)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["road.json", "road.png"]
    written = json.loads(out.read_text())
    assert written["final"] == pytest.approx(result["final"])
    assert written["epochs"] == 1
    assert len(written["history"]) == 1
    expected = _expected(cli)
    assert set(expected) | {"val/soft_f_loss"} == set(written["final"])
    _assert_logged_equal(written["final"], expected)
    assert 0 < written["final"]["val/soft_f_loss"] < 2  # road + lane soft-F losses, each in [0, 1]
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob(".*.tmp"))  # the atomic write left no temp file


@pytest.mark.ddp
@pytest.mark.slow
def test_two_process_ddp_logs_the_metric_pooled_over_both_ranks(tmp_path):
    args = ["--quick", *TINY, "--data.batch_size=2", "--trainer.devices=2", "--trainer.strategy=ddp_spawn"]
    out = tmp_path / "road.json"
    cli, result = example.run([*args, f"--trainer.default_root_dir={tmp_path}", "--json", str(out)])
    assert result["world_size"] == 2
    # trained in the spawned processes: rank 0's epochs, steps and history reach the main process and the JSON
    written = json.loads(out.read_text())
    assert written["epochs"] == 1
    assert written["global_steps"] == 4  # 16 frames, 8 per rank, batches of 2
    assert [h["epoch"] for h in written["history"]] == [0]
    assert {k: v for k, v in written["history"][0].items() if k != "epoch"} == pytest.approx(written["final"])
    logged = {k: float(v) for k, v in cli.trainer.callback_metrics.items()}
    expected = _expected(cli)  # the trained weights are loaded back into the main process
    _assert_logged_equal(logged, expected)
    # rank 0 alone saw frames 0, 2, 4, 6: its own MaxF differs from the pooled one, so the logged value is synced
    frames = cli.datamodule.val_set.tensors
    with torch.no_grad():
        probs = cli.model(frames["image"][0::2])
    rank0 = road_pixel_scores(probs[:, 0], frames["road"][0::2], valid=frames["valid"][0::2])["max_f"].item()
    assert logged["val/maxf"] != pytest.approx(rank0, abs=1e-6)


@pytest.mark.parametrize("has_lane", [[False, False, False], [True, False, True]])
def test_validation_step_logs_the_corridor_even_without_lane_ground_truth(has_lane, monkeypatch):
    """Every rank must log the same metrics under DDP: a batch without lane ground truth logs, but adds no frame."""
    model = example.RoadSegmenter()
    batch = {**example.synthetic_frames(3, seed=0, image_scale=0.125), "has_lane": torch.tensor(has_lane)}
    logged: list[str] = []
    monkeypatch.setattr(model, "log", lambda name, value, **kwargs: logged.append(name))
    monkeypatch.setattr(model, "log_dict", lambda values, **kwargs: logged.extend(values.keys()))
    with torch.no_grad():
        model.validation_step(batch, 0)
    assert set(model.val_corridor.keys(keep_base=False)) <= set(logged)
    assert [int(m.frames) for m in model.val_corridor.values()] == [sum(has_lane)] * 9  # 3 scores x 3 distances


def test_resume_from_checkpoint_gives_the_uninterrupted_metrics(tmp_path):
    base = ["--quick", *TINY[:-1]]
    _, straight = example.run([*base, "--trainer.max_epochs=2", f"--trainer.default_root_dir={tmp_path / 'a'}"])
    checkpoint = ["--trainer.enable_checkpointing=true"]  # --quick saves none unless asked
    example.run([*base, *checkpoint, "--trainer.max_epochs=1", f"--trainer.default_root_dir={tmp_path / 'b'}"])
    (ckpt,) = (tmp_path / "b" / "checkpoints").glob("*.ckpt")
    _, resumed = example.run(
        [*base, "--trainer.max_epochs=2", f"--trainer.default_root_dir={tmp_path / 'c'}", "--ckpt_path", str(ckpt)]
    )
    assert resumed["global_steps"] == straight["global_steps"]
    assert resumed["final"] == pytest.approx(straight["final"], abs=1e-6)
    assert resumed["final"] != pytest.approx(straight["history"][0], abs=1e-6)  # epoch 2 differs from epoch 1


def test_bev_loss_switch_trains_and_differs(tmp_path):
    _, perspective = example.run(["--quick", *TINY, f"--trainer.default_root_dir={tmp_path}"])
    _, bev = example.run(["--quick", *TINY, "--model.loss_space=bev", f"--trainer.default_root_dir={tmp_path}"])
    assert bev["loss_space"] == "bev"
    assert bev["final"]["val/soft_f_loss"] != pytest.approx(perspective["final"]["val/soft_f_loss"], abs=1e-4)


def test_kitti_road_folder(fixtures_dir, tmp_path):
    root = fixtures_dir / "kitti_road"
    frames = example.kitti_frames(root, 0.125)
    assert frames["image"].shape == (4, 3, 47, 155)
    assert frames["has_lane"].tolist() == [True, False, False, False]  # um_lane_000000 only
    assert frames["road"].any()
    assert frames["valid"].any()
    args = ["--quick", f"--data.root={root}", "--data.val_every=5", "--data.batch_size=4", "--trainer.max_epochs=1"]
    cli, result = example.run([*args, f"--trainer.default_root_dir={tmp_path}"])
    assert len(cli.datamodule.val_set) == 4  # fewer frames than val_every: all of them
    assert 0 < result["final"]["val/maxf"] <= 1
    assert "val/corridor_hitrate_20m" in result["final"]


def test_kitti_root_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        example.kitti_frames(tmp_path / "missing", 0.125)
    with pytest.raises(ValueError, match="image_scale"):
        example.RoadDataModule(image_scale=0)
