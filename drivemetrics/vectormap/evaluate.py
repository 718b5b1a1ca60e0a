"""Evaluating map-AP files: pair prediction samples with GT samples by token, pack them, run the protocol."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from drivemetrics._internal.limits import short_repr
from drivemetrics._internal.pool import map_in_processes, one_torch_thread_per_worker, parallel_map, usable_cores
from drivemetrics._internal.progress import progress_bar
from drivemetrics.vectormap.io import (
    PROTOCOL_FORMATS,
    MapSample,
    pack_samples,
    read_map_files,
    read_map_gt,
    read_map_preds,
)
from drivemetrics.vectormap.lines import FlatLines, ap_from_rows, flatten_samples, match_flat, resample_lines
from drivemetrics.vectormap.protocol import MapProtocol, ProtocolName, get_protocol

if TYPE_CHECKING:  # the numpy path (evaluate_flat, read_resampled) never imports torch
    import torch
    from torch import Tensor

__all__ = [
    "MapEvaluation",
    "evaluate_flat",
    "evaluate_map_files",
    "evaluate_map_samples",
    "flat_path_applies",
    "read_resampled",
]

#: fewest samples a worker process of ``workers`` gets (fewer processes otherwise): starting one (spawn, importing
#: torch) costs about what matching a thousand samples costs
MIN_SAMPLES_PER_PROCESS = 1000

#: padded points (lines x longest line, after resampling) one batch of samples may hold, per side: batches are cut
#: by this cost, so one large sample never pads a whole batch to its size
BATCH_POINTS = 1 << 21


@dataclass
class MapEvaluation:
    """Result of a file evaluation: the report dict, the prediction tokens without GT (ignored) and the GT tokens
    without predictions (scored as empty samples).

    Examples:
        >>> from drivemetrics.vectormap import MapEvaluation
        >>> result = MapEvaluation({"mAP": 0.5, "classes": {}}, ["orphan"], ["unanswered"])
        >>> result.report["mAP"], result.unknown_samples, result.missing_samples
        (0.5, ['orphan'], ['unanswered'])
    """

    report: dict[str, Any]
    unknown_samples: list[str]
    missing_samples: list[str] = field(default_factory=list)


def _padded_sizes(samples: list[MapSample], proto: MapProtocol) -> list[tuple[int, int]]:
    """``(lines, longest line in points after resampling)`` of each sample: what packing and resampling pad to.

    For ``"spacing"`` the longest line is bounded from its arc length in the plane (one pass over the points of all
    samples; the bound only sizes batches, it changes no value)."""
    lines = [line for sample in samples for line in sample.points]
    line_count = np.array([len(sample.points) for sample in samples], dtype=np.int64)
    if not lines:
        return [(0, 0)] * len(samples)
    sample_of_line = np.repeat(np.arange(len(samples)), line_count)
    point_count = np.array([len(line) for line in lines], dtype=np.int64)
    longest = np.zeros(len(samples), dtype=np.int64)
    np.maximum.at(longest, sample_of_line, point_count)
    if proto.resample == "count":
        longest = np.maximum(longest, proto.num_samples)
    else:
        xy = np.concatenate([line[:, :2] for line in lines]).astype(np.float64, copy=False)
        line_of_point = np.repeat(np.arange(len(lines)), point_count)
        inside = line_of_point[1:] == line_of_point[:-1]  # segments within a line
        segment = np.sqrt(np.square(np.diff(xy, axis=0)).sum(-1))
        arc = np.bincount(line_of_point[:-1][inside], weights=segment[inside], minlength=len(lines))
        most_arc = np.zeros(len(samples))
        np.maximum.at(most_arc, sample_of_line, arc)
        longest = np.maximum(longest, (most_arc / proto.spacing).astype(np.int64) + 3)
    longest[line_count == 0] = 0
    return list(zip(line_count.tolist(), longest.tolist(), strict=True))


def _batches(gt: list[MapSample], preds: list[MapSample], proto: MapProtocol, batch_size: int) -> list[range]:
    """Consecutive samples cut into batches of at most ``batch_size`` samples whose padded size (samples x most lines
    x longest resampled line, each side) stays within :data:`BATCH_POINTS` (one sample at least)."""
    sizes = list(zip(_padded_sizes(gt, proto), _padded_sizes(preds, proto), strict=True))
    out: list[range] = []
    start = 0
    most = [0, 0, 0, 0]  # GT lines, GT points, prediction lines, prediction points
    for k, ((gl, gp), (pl, pp)) in enumerate(sizes):
        grown = [max(most[0], gl), max(most[1], gp), max(most[2], pl), max(most[3], pp)]
        count = k - start + 1
        too_big = count * max(grown[0] * grown[1], grown[2] * grown[3]) > BATCH_POINTS or count > batch_size
        if too_big and k > start:
            out.append(range(start, k))
            start, grown = k, [gl, gp, pl, pp]
        most = grown
    if start < len(sizes):
        out.append(range(start, len(sizes)))
    return out


def _match_batch(job: tuple) -> tuple[Tensor, Tensor]:
    """Match one batch of paired samples: rows ``(S, 2 + T)`` float64 (score, class id, true-positive flags) and the
    GT count per class ``(C,)``."""
    import torch

    from drivemetrics.vectormap.scoring import vector_map_matches

    gt, preds, proto, gt_dims, pred_dims, device = job
    gt_part = pack_samples(gt, proto.class_names, gt_dims, device=device)
    pred_part = pack_samples(preds, proto.class_names, pred_dims, device=device)
    matches = vector_map_matches(pred_part, gt_part, protocol=proto)
    columns = [matches["scores"].to(torch.float64)[:, None], matches["labels"].to(torch.float64)[:, None]]
    rows = torch.cat([*columns, matches["true_positive"].to(torch.float64)], 1).to(device)
    return rows, matches["num_targets"].to(device)


def _match_group(job: tuple[list[tuple], int | None]) -> list[tuple[Tensor, Tensor]]:
    """One job of :func:`_match_samples`: its batches matched by ``threads`` threads of this process (``None``: one
    per core in the command's process, one in a worker process, where the workers already share the cores)."""
    import multiprocessing

    batches, threads = job
    if threads is None:
        threads = 1 if multiprocessing.parent_process() is not None else usable_cores()
    threads = min(threads, len(batches))
    # one intra-op thread in every case: batches in threads (the kernels release the GIL, a thread costs no start),
    # and with one thread torch's own threads would spin on small ops (--workers 1 --threads 1 took 80 s of CPU
    # instead of 9 on 2 loaded cores, 6,019 nuScenes samples)
    with one_torch_thread_per_worker():
        if threads <= 1:
            return [_match_batch(batch) for batch in batches]
        return list(parallel_map(_match_batch, batches, threads))


def _match_samples(
    gt: list[MapSample],
    preds: list[MapSample],
    proto: MapProtocol,
    gt_dims: int,
    pred_dims: int,
    device: torch.device | str,
    batch_size: int,
    workers: int | None = None,
    progress: bool | None = False,
    threads: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Match paired samples in batches (cut by padded size, see :func:`_batches`): ``workers`` processes on the
    CPU (``None``: the pool's measured auto policy, :func:`~drivemetrics._internal.pool.map_in_processes`), each
    matching its batches in ``threads`` threads (``None``: one per core in this process, one in a worker): rows
    ``(S, 2 + T)`` float64 (score, class id, true-positive flags) and the GT count per class ``(C,)``. The rows do
    not depend on the batches, the processes or the threads."""
    import torch

    if torch.device(device).type != "cpu":
        workers, threads = 1, 1  # one process, one thread drives the accelerator
    if workers is not None:
        workers = max(1, min(workers, len(gt) // MIN_SAMPLES_PER_PROCESS))  # a process costs its start-up (imports)
    lanes = (workers or usable_cores()) * (threads or usable_cores())
    if lanes > 1:  # at least two batches per thread, so that the threads and processes share the work
        batch_size = max(1, min(batch_size, -(-len(gt) // (2 * lanes))))
    batches = [
        (gt[batch.start : batch.stop], preds[batch.start : batch.stop], proto, gt_dims, pred_dims, device)
        for batch in _batches(gt, preds, proto, batch_size)
    ]
    per_job = max(1, min(len(batches), threads or usable_cores()))
    jobs = [(batches[k : k + per_job], threads) for k in range(0, len(batches), per_job)]
    rows = [torch.zeros(0, 2 + len(proto.thresholds), dtype=torch.float64, device=device)]
    num_targets = torch.zeros(len(proto.class_names), dtype=torch.long, device=device)
    with progress_bar(len(gt), "map-eval", "sample", progress) as bar:
        for job, parts in zip(jobs, map_in_processes(_match_group, jobs, workers), strict=True):
            for part, counts in parts:
                rows.append(part.to(device))
                num_targets += counts.to(device)
            bar.update(sum(len(batch[0]) for batch in job[0]))
    return torch.cat(rows), num_targets


def evaluate_map_samples(
    gt: list[MapSample],
    preds: list[MapSample],
    protocol: ProtocolName = "default",
    device: torch.device | str = "cpu",
    batch_size: int = 2000,
    workers: int | None = 1,
    progress: bool | None = False,
    names: tuple[str, str] = ("GT", "predictions"),
    threads: int | None = None,
) -> MapEvaluation:
    """Evaluate prediction samples against GT samples (paired by token; GT without predictions count as empty).

    Under ``torchrun`` (the ``map-eval`` command, see :mod:`drivemetrics._internal.distributed`) each rank matches the
    GT samples ``rank, rank + world, ...`` and the matches are pooled across the ranks: every rank returns the report
    of one process. ``workers`` processes match batches of samples (CPU only; ``None``: the pool's measured auto
    policy, :func:`~drivemetrics._internal.pool.map_in_processes`), each in ``threads`` threads (``None``: one per
    core in this process, one in a worker process); the result depends on neither. ``progress`` draws a bar on
    stderr (``None``: only when stdout and stderr are terminals).

    Returns:
        ``report = {"mAP": float, "classes": {name: {"AP", "AP@<thr>", "num_gts", "num_preds"}}}``.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.vectormap import MapSample
        >>> from drivemetrics.vectormap import evaluate_map_samples
        >>> gt = [MapSample("a", [np.array([[0.0, 0.0], [0.0, 10.0]])], ["divider"])]
        >>> pred = [MapSample("a", [np.array([[0.7, 0.0], [0.7, 10.0]])], ["divider"], [0.9])]
        >>> evaluate_map_samples(gt, pred, "av2-cvpr23").report["classes"]["divider"]["AP@1.0"]
        1.0
    """
    import torch

    from drivemetrics._internal.distributed import current_shard
    from drivemetrics._internal.ragged import RaggedRows
    from drivemetrics.vectormap.scoring import vector_map_ap_from_matches

    proto = get_protocol(protocol)
    gt_index: dict[str, int] = {}
    for i, sample in enumerate(gt):
        if sample.token in gt_index:
            raise ValueError(
                f"{names[0]}: sample {sample.token} appears twice (samples {gt_index[sample.token]} and {i})"
            )
        gt_index[sample.token] = i
    by_token: dict[str, MapSample] = {}
    pred_index: dict[str, int] = {}
    for i, sample in enumerate(preds):
        if sample.token in by_token:
            raise ValueError(
                f"{names[1]}: sample {sample.token} appears twice (samples {pred_index[sample.token]} and {i})"
            )
        by_token[sample.token] = sample
        pred_index[sample.token] = i
    unknown = [s.token for s in preds if s.token not in gt_index]
    missing = [s.token for s in gt if s.token not in by_token]
    paired = [by_token.get(s.token, MapSample(s.token)) for s in gt]
    all_dims = {p.shape[1] for s in paired for p in s.points}
    if len(all_dims) > 1:
        raise ValueError(f"{names[1]}: lines of {sorted(all_dims)} coordinates: every line needs the same dimension")
    pred_dims = min(all_dims, default=2)
    if proto.dims == "2d" and pred_dims != 2:
        raise ValueError(
            f"{names[1]}: protocol {proto.name!r} evaluates 2-D predictions; the prediction file has {pred_dims}-D "
            "points"
        )
    gt_dims = 2 if proto.dims == "2d" else pred_dims
    shard = current_shard()  # under torchrun: this rank matches its shard of the samples, then all are pooled
    mine = shard.indices(len(gt))
    rows, num_targets = _match_samples(
        [gt[i] for i in mine],
        [paired[i] for i in mine],
        proto,
        gt_dims,
        pred_dims,
        device,
        batch_size,
        workers,
        progress if shard.is_main else False,
        threads,
    )
    if shard.world > 1:  # tied scores are ordered by content: the pooled AP does not depend on the sharding
        frames = shard.gather_frames([shard.rank], matches=RaggedRows(rows, torch.tensor([rows.shape[0]])))
        rows, num_targets = frames.fields["matches"].rows, shard.sum(num_targets)
    out: Any
    if flat_path_applies(proto):  # pooled as the numpy path pools (the challenge's sums): the same bits on every path
        out = ap_from_rows(rows.cpu().numpy(), num_targets.cpu().numpy(), proto)
    else:
        out = vector_map_ap_from_matches(
            rows[:, 0], rows[:, 1].long(), rows[:, 2:] > 0.5, num_targets, protocol=proto, validate_args=False
        )
    return MapEvaluation(_report(out, num_targets.tolist(), proto), unknown, missing)


def _report(out: Any, num_targets: list[int], proto: MapProtocol) -> dict[str, Any]:
    """``{"mAP", "classes": {name: {"AP", "AP@<thr>", "num_gts", "num_preds"}}}`` of pooled APs (``out``: the
    dict of :func:`~drivemetrics.vectormap.lines.ap_from_rows` or of ``vector_map_ap_from_matches``)."""
    classes: dict[str, dict[str, float | int]] = {}
    for c, name in enumerate(proto.class_names):
        entry: dict[str, float | int] = {"AP": float(out["ap"][c])}
        for t, threshold in enumerate(proto.thresholds):
            entry[f"AP@{threshold}"] = float(out["ap_per_threshold"][c, t])
        entry["num_gts"] = int(num_targets[c])
        entry["num_preds"] = int(out["num_preds"][c])
        classes[name] = entry
    return {"mAP": float(out["map"]), "classes": classes}


def running_sharded() -> bool:
    """Whether this process is one of several torchrun ranks (the distributed module, and torch, is only imported
    by the command's process group set-up)."""
    module = sys.modules.get("drivemetrics._internal.distributed")
    return module is not None and module.current_shard().world > 1


def evaluate_map_files(
    gt_path: str | Path,
    pred_path: str | Path,
    protocol: ProtocolName = "default",
    device: torch.device | str = "cpu",
    workers: int | None = 1,
    progress: bool | None = False,
    threads: int | None = None,
) -> MapEvaluation:
    """Read a GT and a prediction file in the protocol's native format and evaluate them (``workers``, ``threads``
    and ``progress`` as in :func:`evaluate_map_samples`). The protocols of :func:`flat_path_applies` run on numpy
    (:func:`read_resampled`, :func:`evaluate_flat`: the same report; processes only, ``threads`` does not apply).

    Examples:
        >>> import tempfile, json, os
        >>> from drivemetrics.vectormap import evaluate_map_files
        >>> gt = {"GTs": [{"sample_token": "a", "vectors": [{"pts": [[0, 0], [0, 10]], "type": 0}]}]}
        >>> pred = {"results": [{"sample_token": "a",
        ...                      "vectors": [{"pts": [[0.7, 0], [0.7, 10]], "type": 0, "confidence_level": 0.9}]}]}
        >>> with tempfile.TemporaryDirectory() as d:
        ...     for name, data in (("gt.json", gt), ("pred.json", pred)):
        ...         _ = open(os.path.join(d, name), "w").write(json.dumps(data))
        ...     result = evaluate_map_files(os.path.join(d, "gt.json"), os.path.join(d, "pred.json"), "nuscenes-maptr")
        >>> result.report["classes"]["divider"]["AP@0.5"], result.report["classes"]["divider"]["AP@1.0"]
        (0.0, 1.0)
    """
    if flat_path_applies(protocol, str(device)) and not running_sharded():  # the same report on numpy, without torch
        gt_lines, pred_lines = read_resampled(gt_path, "gt", protocol), read_resampled(pred_path, "pred", protocol)
        return evaluate_flat(gt_lines, pred_lines, protocol, workers, progress, names=(str(gt_path), str(pred_path)))
    gt, preds = read_map_files(gt_path, pred_path, protocol)
    return evaluate_map_samples(
        gt,
        preds,
        protocol,
        device,
        workers=workers,
        progress=progress,
        names=(str(gt_path), str(pred_path)),
        threads=threads,
    )


#: fewest prediction lines for which the numpy path matches in several processes (a forked worker costs little,
#: but a tiny input finishes before a pool has started)
MIN_LINES_PER_PROCESS = 2000


def flat_path_applies(protocol: ProtocolName | MapProtocol, device: str = "cpu") -> bool:
    """Whether :func:`evaluate_flat` (numpy, no torch) evaluates ``protocol`` on ``device``: the CPU, 2-D lines,
    the references' matching rule and no buffer prefilter (of the presets: ``"av2-cvpr23"``).

    Examples:
        >>> from drivemetrics.vectormap.evaluate import flat_path_applies
        >>> flat_path_applies("av2-cvpr23"), flat_path_applies("nuscenes-maptr"), flat_path_applies("default")
        (True, False, False)
    """
    proto = get_protocol(protocol)
    return device == "cpu" and proto.dims == "2d" and not proto.fallback and proto.buffer_prefilter is None


def read_resampled(path: str | Path, role: str, protocol: ProtocolName | MapProtocol) -> FlatLines:
    """Read one file in the protocol's format (``role``: ``"gt"`` or ``"pred"``) and resample its lines: what
    :func:`evaluate_flat` takes. Needs no torch (``map-eval`` runs it in a forked reader while it starts up).

    The checks of :func:`evaluate_map_samples`: GT lines need 2 points or more, predictions must be 2-D (GT lines
    are cut to (x, y)); predictions of fewer than the protocol's ``min_pred_points`` points are left out.

    Examples:
        >>> import tempfile, json, os
        >>> from drivemetrics.vectormap.evaluate import read_resampled
        >>> gt = {"log": [{"timestamp": "t", "annotation": {"divider": [[[0, 0, 0], [0, 10, 0]]]}}]}
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = open(os.path.join(d, "gt.json"), "w").write(json.dumps(gt))
        ...     lines = read_resampled(os.path.join(d, "gt.json"), "gt", "av2-cvpr23")
        >>> lines.tokens, lines.counts.tolist(), lines.points.shape
        (['t'], [35], (35, 2))
    """
    proto = get_protocol(protocol)
    if not flat_path_applies(proto):
        raise ValueError(f"protocol {proto.name!r} is evaluated by evaluate_map_samples, not by the numpy path")
    fmt = PROTOCOL_FORMATS.get(proto.name)
    if role == "gt":
        samples = read_map_gt(path, fmt)
        lines = flatten_samples(samples, proto.class_names, 2, with_scores=False)
        short = np.flatnonzero(lines.counts < 2)
        if short.size:
            line = int(short[0])
            sample = int(lines.sample[line])
            position = line - int(np.searchsorted(lines.sample, sample))
            raise ValueError(
                f"{path}: sample {lines.tokens[sample]}: line {position} has 1 point; a line needs 2 or more"
            )
    else:
        samples = read_map_preds(path, fmt)
        dims = min((points.shape[1] for sample in samples for points in sample.points), default=2)
        if dims != 2:
            raise ValueError(
                f"{path}: protocol {proto.name!r} evaluates 2-D predictions; the prediction file has {dims}-D points"
            )
        lines = flatten_samples(samples, proto.class_names, 2, with_scores=True)
        lines = lines.take(np.flatnonzero(lines.counts >= proto.min_pred_points))
    try:
        return resample_lines(lines, proto)
    except ValueError as err:  # a line too long for its points: name the file and the sample
        line = int(str(err).split(":", 1)[0].removeprefix("line ")) if str(err).startswith("line ") else None
        if line is None:
            raise ValueError(f"{path}: {err}") from None
        sample = int(lines.sample[line])
        position = line - int(np.searchsorted(lines.sample, sample))
        detail = str(err).split(":", 1)[1]
        raise ValueError(f"{path}: sample {short_repr(lines.tokens[sample])}: line {position}:{detail}") from None


def _match_flat_job(job: tuple[FlatLines, FlatLines, MapProtocol]) -> tuple[np.ndarray, np.ndarray]:
    preds, gt, proto = job
    return match_flat(preds, gt, proto)


def evaluate_flat(
    gt: FlatLines,
    preds: FlatLines,
    protocol: ProtocolName | MapProtocol = "av2-cvpr23",
    workers: int | None = None,
    progress: bool | None = False,
    names: tuple[str, str] = ("GT", "predictions"),
) -> MapEvaluation:
    """:func:`evaluate_map_samples` on numpy arrays: resampled GT and prediction lines (:func:`read_resampled`),
    paired by token, matched in ``workers`` processes (forked where torch is not imported; ``None``: the pool's
    measured auto policy, :func:`~drivemetrics._internal.pool.map_in_processes`), pooled into the report. Same
    report, without torch; for the protocols of
    :func:`flat_path_applies`.

    Examples:
        >>> from drivemetrics.vectormap.lines import resample_lines
        >>> import numpy as np
        >>> from drivemetrics.vectormap.lines import FlatLines
        >>> from drivemetrics.vectormap.protocol import get_protocol
        >>> from drivemetrics.vectormap.evaluate import evaluate_flat
        >>> line = np.array([[0.0, 0.0], [0.0, 10.0]])
        >>> gt = FlatLines(line, np.array([2]), np.array([0]), np.array([0]), tokens=["a"])
        >>> pred = FlatLines(line + [0.7, 0.0], np.array([2]), np.array([0]), np.array([0]), np.array([0.9]), ["a"])
        >>> proto = get_protocol("av2-cvpr23")
        >>> result = evaluate_flat(resample_lines(gt, proto), resample_lines(pred, proto), proto)
        >>> result.report["classes"]["divider"]["AP@1.0"], result.report["mAP"]
        (1.0, 0.2222222222222222)
    """
    proto = get_protocol(protocol)
    gt_index: dict[str, int] = {}
    for i, token in enumerate(gt.tokens):
        if token in gt_index:
            raise ValueError(f"{names[0]}: sample {token} appears twice (samples {gt_index[token]} and {i})")
        gt_index[token] = i
    pred_index: dict[str, int] = {}
    for i, token in enumerate(preds.tokens):
        if token in pred_index:
            raise ValueError(f"{names[1]}: sample {token} appears twice (samples {pred_index[token]} and {i})")
        pred_index[token] = i
    unknown = [token for token in preds.tokens if token not in gt_index]
    missing = [token for token in gt.tokens if token not in pred_index]
    # prediction lines renumbered to their GT sample, in GT sample order (lines of unknown samples dropped)
    to_gt = np.array([gt_index.get(token, -1) for token in preds.tokens], dtype=np.int64)
    sample = to_gt[preds.sample] if len(preds.sample) else np.zeros(0, dtype=np.int64)
    kept = np.flatnonzero(sample >= 0)
    kept = kept[np.argsort(sample[kept], kind="stable")]
    if len(kept) < len(sample) or (np.diff(kept) != 1).any():  # not already in GT order (the usual case)
        preds = preds.take(kept)
    preds = replace(preds, sample=sample[kept], tokens=gt.tokens)
    # jobs: consecutive GT samples, about four per process
    processes = workers  # None: the pool's measured auto policy (forks once the timed jobs say it pays)
    if processes is None:
        num_jobs = 4 * usable_cores() if len(preds.counts) >= MIN_LINES_PER_PROCESS * 2 else 1
    else:
        processes = max(1, min(processes, usable_cores(), len(gt.tokens)))  # --workers 10000: no fork storm
        num_jobs = 1 if processes == 1 else 4 * processes
    bounds = np.linspace(0, len(gt.tokens), num_jobs + 1).round().astype(np.int64)
    gt_bounds = np.searchsorted(gt.sample, bounds)
    pred_bounds = np.searchsorted(preds.sample, bounds)
    jobs = [
        (preds.lines(pred_bounds[k], pred_bounds[k + 1]), gt.lines(gt_bounds[k], gt_bounds[k + 1]), proto)
        for k in range(num_jobs)
    ]
    rows = [np.zeros((0, 2 + len(proto.thresholds)))]
    num_targets = np.zeros(len(proto.class_names), dtype=np.int64)
    with progress_bar(len(gt.tokens), "map-eval", "sample", progress) as bar:
        for k, (part, counts) in enumerate(map_in_processes(_match_flat_job, jobs, processes)):
            rows.append(part)
            num_targets += counts
            bar.update(int(bounds[k + 1] - bounds[k]))
    out = ap_from_rows(np.concatenate(rows), num_targets, proto)
    return MapEvaluation(_report(out, num_targets.tolist(), proto), unknown, missing)
