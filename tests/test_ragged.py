"""Ragged per-frame state (drivemetrics._internal.ragged): storage, order and the one-gather sync across processes."""

from __future__ import annotations

import pickle
import warnings

import pytest
import torch
from torch import Tensor
from torchmetrics import Metric

from drivemetrics._internal.ragged import RaggedRows, RaggedStateMixin, gather_ragged, sort_frames
from tests.ddp import run_distributed

pytestmark = pytest.mark.filterwarnings("ignore:.*compute.*before.*update.*:UserWarning")


class FrameLog(RaggedStateMixin, Metric):
    """Keeps float boxes (n, 2, 2), int labels (n,) and bool flags (n, 3) per frame, plus a sum state."""

    full_state_update = False

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.add_ragged_state(boxes=((2, 2), torch.float64), labels=((), torch.int64), flags=(3, torch.bool))
        self.add_state("updates", torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")

    def update(self, boxes, labels, flags, keys=None):
        self.append_frames(keys=keys, boxes=boxes, labels=labels, flags=flags)
        self.updates = self.updates + 1

    def compute(self):
        frames = self.ragged_frames()
        return {
            "keys": frames.keys,
            **{f"{n}_rows": f.rows for n, f in frames.fields.items()},
            **{f"{n}_lengths": f.lengths for n, f in frames.fields.items()},
            "updates": self.updates,
        }


def _frame(key: int) -> tuple[Tensor, Tensor, Tensor]:
    """Frame ``key``: ``key % 3`` rows whose values encode the key (0 rows every third frame)."""
    n = key % 3
    boxes = torch.arange(n * 4, dtype=torch.float64).reshape(n, 2, 2) + 100 * key
    labels = torch.arange(n, dtype=torch.int64) + 10 * key
    flags = (torch.arange(n * 3).reshape(n, 3) + key) % 2 == 0
    return boxes, labels, flags


def _update(metric: FrameLog, keys: list[int], with_keys: bool = True) -> None:
    frames = [_frame(k) for k in keys]
    boxes, labels, flags = ([f[i] for f in frames] for i in range(3))
    metric.update(boxes, labels, flags, keys=keys if with_keys else None)


def _frame_lists(keys: list[int]) -> tuple[list[Tensor], list[Tensor], list[Tensor]]:
    frames = [_frame(k) for k in keys]
    return tuple([f[i] for f in frames] for i in range(3))


def _expected(keys: list[int]) -> dict[str, Tensor]:
    metric = FrameLog()
    for key in sorted(keys):
        _update(metric, [key])
    out = metric.compute()
    del out["updates"]
    return out


def test_rows_lengths_and_offsets():
    rows = RaggedRows(torch.arange(5.0)[:, None], torch.tensor([2, 0, 3]))
    assert rows.offsets().tolist() == [0, 2, 2, 5]
    assert rows.frame_index().tolist() == [0, 0, 2, 2, 2]
    assert [t.flatten().tolist() for t in rows.split()] == [[0.0, 1.0], [], [2.0, 3.0, 4.0]]


def test_sort_frames_moves_whole_frames_and_is_stable():
    keys = torch.tensor([3, 1, 3, 0])
    field = RaggedRows(torch.tensor([[30], [31], [10], [32], [33], [34]]), torch.tensor([2, 1, 3, 0]))
    keys_sorted, fields = sort_frames(keys, {"a": field})
    assert keys_sorted.tolist() == [0, 1, 3, 3]
    assert fields["a"].lengths.tolist() == [0, 1, 2, 3]
    assert fields["a"].rows.flatten().tolist() == [10, 30, 31, 32, 33, 34]


def test_frames_come_back_sorted_by_key_whatever_the_update_order():
    metric = FrameLog()
    _update(metric, [5, 2])
    _update(metric, [])
    _update(metric, [4, 0, 1, 3])
    out = metric.compute()
    for name, value in _expected(list(range(6))).items():
        assert torch.equal(out[name], value), name
    assert out["keys"].tolist() == list(range(6))
    assert out["updates"] == 3
    assert out["labels_lengths"].tolist() == [0, 1, 2, 0, 1, 2]


def test_default_keys_are_the_arrival_index():
    metric = FrameLog()
    _update(metric, [7, 8], with_keys=False)
    _update(metric, [9], with_keys=False)
    assert metric.ragged_frames().keys.tolist() == [0, 1, 2]


def test_default_keys_are_the_position_among_the_held_frames_after_forward_and_merge():
    metric = FrameLog()
    metric(*(_frame_lists([7, 8])))  # forward: updates a reset copy, then joins the held frames
    metric(*(_frame_lists([9])))
    other = FrameLog()
    _update(other, [4, 5], with_keys=False)
    metric.merge_state(other)
    _update(metric, [6], with_keys=False)
    frames = metric.ragged_frames()
    assert frames.keys.tolist() == [0, 1, 2, 3, 4, 5]
    # frames 4, 5 (merge_state puts the incoming frames first), 7, 8, 9, 6: key % 3 rows each
    assert frames.fields["labels"].lengths.tolist() == [1, 2, 1, 2, 0, 0]
    metric.reset()
    _update(metric, [1], with_keys=False)
    assert metric.ragged_frames().keys.tolist() == [0]


def test_reset_merge_and_pickle_keep_the_frames():
    first, second = FrameLog(), FrameLog()
    _update(first, [0, 3])
    _update(second, [1, 2, 4])
    restored = pickle.loads(pickle.dumps(first))
    restored.merge_state(second)
    for name, value in _expected([0, 1, 2, 3, 4]).items():
        assert torch.equal(restored.compute()[name], value), name
    assert restored.compute()["updates"] == 2
    restored.reset()
    assert restored.ragged_frames().keys.numel() == 0


def test_bad_frames_are_refused():
    metric = FrameLog()
    with pytest.raises(ValueError, match="needs the fields"):
        metric.append_frames(boxes=[], labels=[])
    with pytest.raises(ValueError, match="same number of frames"):
        metric.append_frames(boxes=[torch.zeros(1, 2, 2)], labels=[], flags=[])
    with pytest.raises(ValueError, match="keys for"):
        metric.append_frames(keys=[1, 2], boxes=[], labels=[], flags=[])
    with pytest.raises(ValueError, match="lengths sum"):
        metric.append_frames(
            boxes=RaggedRows(torch.zeros(3, 2, 2), torch.tensor([1, 1])),
            labels=RaggedRows(torch.zeros(2, dtype=torch.long), torch.tensor([1, 1])),
            flags=RaggedRows(torch.zeros(2, 3, dtype=torch.bool), torch.tensor([1, 1])),
        )


# ----------------------------------------------------------------------------------------------------------------
# several processes: one gloo group of 3 ranks runs every scenario

#: scenario -> frame keys updated by each rank, one list per update call (rank 0 empty in most)
SCENARIOS: dict[str, list[list[list[int]]]] = {
    "one_rank_empty": [[], [[0, 1, 2], [3]], [[4, 5]]],
    "uneven": [[[6]], [[2, 0], [1], [5, 4]], [[3]]],
    "all_empty": [[], [], []],
    "only_empty_frames": [[[0]], [], [[3, 6]]],  # frames without rows: lengths only
}


def _worker(rank: int, world: int) -> dict[str, object]:
    warnings.simplefilter("ignore")
    out: dict[str, object] = {}
    for name, per_rank in SCENARIOS.items():
        metric = FrameLog()
        for keys in per_rank[rank]:
            _update(metric, keys)
        local = metric.ragged_frames().keys.tolist()
        out[name] = {k: v.tolist() for k, v in metric.compute().items()}
        out[f"{name}_local_kept"] = metric.ragged_frames().keys.tolist() == local
    from drivemetrics._internal.distributed import distributed_from_env
    from drivemetrics.lanegraph.evaluate import evaluate_submission

    with distributed_from_env() as shard:  # the group of this test: a dataset evaluation in shards
        assert (shard.rank, shard.world) == (rank, world)
        for compat in ("default", "reference"):
            result = evaluate_submission(*_lane_graphs(), "successor", compat=compat, progress=False)
            out[f"lanegraph_{compat}"] = result
    # the bare gather: rank order, no sorting
    keys = (torch.arange(rank, dtype=torch.int64) + 1).repeat(2)  # rank r sends 2r frames of 1..r rows
    field = RaggedRows(torch.full((int(keys.sum()),), float(rank)), keys.clone())
    all_keys, fields = gather_ragged(keys, {"x": field})
    out["gather"] = (all_keys.tolist(), fields["x"].lengths.tolist(), fields["x"].rows.tolist())
    return out


def _lane_graphs() -> tuple[dict, dict]:
    """``(predictions, annotations)`` of a small lane-graph submission."""
    from tests.lanegraph.test_evaluate import line

    gt = {
        "austin": {"eval": {f"a{i}": line(0, 150 + 20 * i, y=10.0 * i) for i in range(4)}},
        "miami": {"eval": {f"m{i}": line(0, 200, y=5.0 * i) for i in range(3)}},
    }
    pred = {  # a0 without prediction; shifted, shortened and exact lanes
        "austin": {"eval": {f"a{i}": line(0, 120 + 30 * i, y=13.0 * i) for i in range(1, 4)}},
        "miami": {"eval": {f"m{i}": line(10 * i, 200, y=5.0 * i) for i in range(3)}},
    }
    return pred, gt


@pytest.fixture(scope="module")
def three_ranks() -> list[dict[str, object]]:
    return run_distributed(_worker, world=3)


@pytest.mark.ddp
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_three_processes_give_the_one_process_frames(three_ranks, scenario):
    keys = [k for per_rank in SCENARIOS[scenario] for update in per_rank for k in update]
    expected = {k: v.tolist() for k, v in _expected(keys).items()}
    expected["updates"] = sum(len(per_rank) for per_rank in SCENARIOS[scenario])
    for rank, result in enumerate(three_ranks):
        assert result[scenario] == expected, f"rank {rank}"
        assert result[f"{scenario}_local_kept"], f"rank {rank}: compute changed the local frames"


@pytest.mark.ddp
def test_gather_keeps_rank_order(three_ranks):
    expected = ([1, 1, 1, 2, 1, 2], [1, 1, 1, 2, 1, 2], [1.0, 1.0] + [2.0] * 6)
    for result in three_ranks:
        assert result["gather"] == expected


@pytest.mark.ddp
@pytest.mark.parametrize("compat", ["default", "reference"])
def test_lanegraph_evaluation_in_shards_equals_one_process(three_ranks, compat):
    import json

    from drivemetrics.lanegraph.evaluate import _json_ready, evaluate_submission

    expected = json.dumps(_json_ready(evaluate_submission(*_lane_graphs(), "successor", compat=compat, progress=False)))
    for rank, result in enumerate(three_ranks):
        assert json.dumps(_json_ready(result[f"lanegraph_{compat}"])) == expected, f"rank {rank}"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_nccl_gather_on_cuda_reads_the_device_once(tmp_path):
    """One NCCL rank on the GPU: the metric's frames survive the packed gather, and the gather synchronises with
    the host once (the header read that sizes the buffer)."""
    import torch.distributed as dist

    if not dist.is_nccl_available():
        pytest.skip("NCCL not available")
    dist.init_process_group("nccl", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1)
    try:
        metric = FrameLog().to("cuda")
        _update(metric, [4, 1, 2])
        _update(metric, [0, 3])
        out = metric.compute()  # synced through NCCL
        for name, value in _expected([0, 1, 2, 3, 4]).items():
            assert out[name].device.type == "cuda", name
            assert torch.equal(out[name].cpu(), value), name
        keys, fields = metric._local_frames()
        torch.cuda.synchronize()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                gather_ragged(keys, fields)
            finally:
                torch.cuda.set_sync_debug_mode("default")
        syncs = [str(w.message) for w in caught if "synchroniz" in str(w.message)]
        assert len(syncs) == 1, syncs
    finally:
        dist.destroy_process_group()


def test_gather_and_sort_read_the_device_once(tmp_path):
    """The gather's only host read is the header (the sizes of every rank's data); sorting reads nothing. Checked
    on CPU tensors with the recorder of tests/test_device_sync.py (``repeat_interleave`` with ``output_size``
    does not synchronise)."""
    import torch.distributed as dist

    from tests.test_device_sync import SyncRecorder

    class Recorder(SyncRecorder):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if getattr(func, "__name__", "") == "repeat_interleave" and (kwargs or {}).get("output_size") is not None:
                return func(*args, **(kwargs or {}))
            return super().__torch_function__(func, types, args, kwargs)

    metric = FrameLog()
    _update(metric, [4, 1, 2])
    _update(metric, [0, 3])
    keys, fields = metric._local_frames()
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1)
    try:
        with Recorder() as gather_calls:
            gathered = gather_ragged(keys, fields)
    finally:
        dist.destroy_process_group()
    assert [name for name, _ in gather_calls.calls] == ["cpu", "tolist"]  # one read: the header
    with Recorder() as sort_calls:
        sort_frames(*gathered)
    assert sort_calls.calls == []
