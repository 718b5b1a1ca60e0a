"""KITTI object Metric classes: :class:`KittiObjectMetrics` (every curve and AP) and
:class:`KittiObjectAveragePrecision` (one AP), over per-frame boxes accumulated in a validation loop.

The evaluation itself (the official ``evaluate_object.cpp`` protocol) is :mod:`drivemetrics.detection.kitti_ap`;
its names are re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from drivemetrics._internal import arrays
from drivemetrics._internal.extras import require
from drivemetrics._internal.metric import MetricFamily, ScalarMetric, plot_metric
from drivemetrics._internal.ragged import RaggedStateMixin
from drivemetrics._internal.validation import check_coordinates_within_limit
from drivemetrics.detection.io import KittiObjects
from drivemetrics.detection.kitti_ap import (
    DIFFICULTIES,
    KITTI_CLASSES,
    LOOSE_OVERLAPS,
    METRICS,
    N_SAMPLE_PTS,
    STRICT_OVERLAPS,
    Difficulty,
    KittiClass,
    KittiMetric,
    Overlaps,
    average_precision_r11,
    average_precision_r40,
    evaluate_kitti_objects,
    kitti_recall_thresholds,
)

__all__ = [
    "DIFFICULTIES",
    "KITTI_CLASSES",
    "KITTI_TYPES",
    "LOOSE_OVERLAPS",
    "METRICS",
    "N_SAMPLE_PTS",
    "STRICT_OVERLAPS",
    "KittiObjectAveragePrecision",
    "KittiObjectMetrics",
    "average_precision_r11",
    "average_precision_r40",
    "evaluate_kitti_objects",
    "kitti_recall_thresholds",
]


# ----------------------------------------------------------------------------------------------------
# Metric classes

#: The KITTI object types; an integer label ``k`` in ``update`` means ``KITTI_TYPES[k]``.
KITTI_TYPES: tuple[str, ...] = (
    "Car",
    "Van",
    "Truck",
    "Pedestrian",
    "Person_sitting",
    "Cyclist",
    "Tram",
    "Misc",
    "DontCare",
)
_TYPE_INDEX = {name: i for i, name in enumerate(KITTI_TYPES)}
_COLUMNS = 16  # label, truncated, occluded, alpha, bbox 4, dimensions 3, location 3, rotation_y, score


def _frame_rows(frame: KittiObjects | Mapping[str, Any], is_pred: bool, where: str) -> Tensor:
    """One frame as an ``(N, 16)`` float64 tensor (label index first, score last)."""
    if isinstance(frame, KittiObjects):
        unknown = [t for t in frame.type if t not in _TYPE_INDEX]
        if unknown:
            raise ValueError(f"{where}: unknown KITTI type {unknown[0]!r}; expected one of {KITTI_TYPES}")
        if is_pred and frame.score is None:
            raise ValueError(f"{where}: detections need scores")
        labels = np.array([_TYPE_INDEX[t] for t in frame.type], dtype=np.float64)
        values = frame.to_array()[:, :14]
        score = frame.score if frame.score is not None else np.zeros(len(frame))
        return torch.from_numpy(np.concatenate([labels[:, None], values, score[:, None]], 1))
    required = ["labels", "boxes", "dimensions", "location", "rotation_y"] + (["scores"] if is_pred else [])
    missing = [k for k in required if k not in frame]
    if missing:
        raise ValueError(f"{where}: missing key(s) {missing}; expected {required} (+ alpha, truncated, occluded)")
    labels = torch.as_tensor(frame["labels"])
    n = labels.shape[0] if labels.ndim else 0
    device = labels.device

    def column(key: str, width: int, default: float | None = None) -> Tensor:
        if key not in frame:
            return torch.full((n, width), float(default), dtype=torch.float64, device=device)  # type: ignore[arg-type]
        value = torch.as_tensor(frame[key], device=device).to(torch.float64)
        if value.numel() != n * width:
            shape = f"{n} x {width}" if width > 1 else f"{n}"
            raise ValueError(f"{where}: `{key}` must have shape {shape} (one row per label), got {tuple(value.shape)}")
        return value.reshape(n, width)

    if labels.dtype.is_floating_point or labels.dtype == torch.bool or labels.ndim != 1:
        raise ValueError(f"{where}: `labels` must be a 1-D integer tensor (index into KITTI_TYPES)")
    return torch.cat(
        [
            labels.to(torch.float64)[:, None],
            column("truncated", 1, 0.0),
            column("occluded", 1, 0.0),
            column("alpha", 1, -10.0),
            column("boxes", 4),
            column("dimensions", 3),
            column("location", 3),
            column("rotation_y", 1),
            column("scores", 1) if is_pred else torch.zeros(n, 1, dtype=torch.float64, device=device),
        ],
        dim=1,
    )


def _frames_from_rows(rows: np.ndarray, counts: np.ndarray, with_score: bool) -> list[KittiObjects]:
    frames = []
    for block in np.split(rows, np.cumsum(counts)[:-1]) if len(counts) else []:
        labels = block[:, 0].astype(np.int64)
        if len(labels) and (labels.min() < 0 or labels.max() >= len(KITTI_TYPES)):
            raise ValueError(f"labels must index KITTI_TYPES (0..{len(KITTI_TYPES) - 1})")
        values = block[:, 1:16] if with_score else block[:, 1:15]
        frames.append(KittiObjects.from_array([KITTI_TYPES[k] for k in labels], values))
    return frames


class KittiObjectMetrics(RaggedStateMixin, MetricFamily):
    r"""The official KITTI object evaluation (2D, AOS, BEV, 3D; R11 and R40) over every frame seen.

    As input to ``update`` the metric accepts two lists with one entry per frame, each a
    :class:`~drivemetrics.detection.io.KittiObjects` or a dict of tensors (``N`` objects):

    - ``labels``: ``N`` int64 indices into :data:`KITTI_TYPES` (``Car`` 0, ``Van`` 1, ..., ``DontCare`` 8);
    - ``boxes``: ``(N, 4)`` 2D boxes ``x1, y1, x2, y2`` in pixels;
    - ``dimensions``: ``(N, 3)`` ``h, w, l`` in metres; ``location``: ``(N, 3)`` bottom-face center ``x, y, z`` in
      rectified camera coordinates; ``rotation_y``: ``N`` yaw (radians);
    - ``alpha``: ``N`` observation angles (optional: missing means -10, which switches AOS off, as the C++);
    - ``preds`` only: ``scores``: ``N``; ``target`` only (optional, default 0): ``truncated``, ``occluded``.

    The detections and labels are ragged per-frame state (:mod:`~drivemetrics._internal.ragged`): they sync across
    processes in one gather whatever each process saw (none, or different numbers of frames); ``frame_ids`` in
    ``update`` (e.g. dataset indices) fix the frame order, which does not change the values. ``compute()`` returns a
    flat dict of float64 scalars ``"{class}_{metric}_{difficulty}_r11"`` / ``"..._r40"`` (class ``car`` /
    ``pedestrian`` / ``cyclist``, metric ``2d`` / ``aos`` / ``bev`` / ``3d``, difficulty ``easy`` /
    ``moderate`` / ``hard``), fractions in [0, 1] (the devkit prints them ``* 100``); every class and metric is
    always present (a class never detected has AP 0; AOS is NaN when a detection has no alpha).
    :meth:`evaluate` returns the full nested result with the 41-point curves.

    Args:
        overlaps: ``"strict"`` (official: 0.7 / 0.5 / 0.5), ``"loose"`` (BEV / 3D at 0.5 / 0.25 / 0.25) or a mapping
            ``{"2d" | "bev" | "3d": (car, pedestrian, cyclist)}``.
        kwargs: see torchmetrics' ``Metric`` keyword arguments.
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Examples:
        >>> from drivemetrics.detection.io import parse_kitti_objects
        >>> from drivemetrics.detection import KittiObjectMetrics
        >>> line = "Car 0.00 0 -1.57 100.00 150.00 300.00 250.00 1.50 1.60 4.00 1.00 1.70 15.00 -1.57"
        >>> target = [parse_kitti_objects(line)] * 40  # 40 frames, one car each
        >>> preds = [parse_kitti_objects(line + " 0.9")] * 40  # each detected exactly (score 0.9)
        >>> metric = KittiObjectMetrics()
        >>> metric.update(preds, target)
        >>> metric.compute()["car_3d_moderate_r40"]
        tensor(0.9750, dtype=torch.float64)
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def __init__(
        self, overlaps: Overlaps | Mapping[str, Sequence[float]] = "strict", validate_args: bool = True, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.validate_args = bool(validate_args)
        if isinstance(overlaps, str) and overlaps not in ("strict", "loose"):
            raise ValueError(f"`overlaps` must be 'strict', 'loose' or a mapping, got {overlaps!r}")
        self.overlaps = overlaps if isinstance(overlaps, str) else {k: tuple(v) for k, v in overlaps.items()}
        self.classes: tuple[str, ...] = KITTI_CLASSES  # evaluated by compute() (a scalar class: its one class)
        self.add_ragged_state(det=(_COLUMNS, torch.float64), gt=(_COLUMNS, torch.float64))

    def update(
        self,
        preds: Sequence[KittiObjects | Mapping[str, Any]],
        target: Sequence[KittiObjects | Mapping[str, Any]],
        *,
        frame_ids: Tensor | Sequence[int] | None = None,
    ) -> None:
        """Add frames: ``preds[i]`` are the detections and ``target[i]`` the labels of frame ``i``; ``frame_ids``
        (optional, one int per frame) order the frames across processes."""
        if not isinstance(preds, Sequence) or not isinstance(target, Sequence):
            raise ValueError("`preds` and `target` must be lists with one entry per frame")
        if len(preds) != len(target):
            raise ValueError(f"got {len(preds)} prediction frames but {len(target)} target frames")
        dets = [_frame_rows(pred, True, f"preds[{i}]") for i, pred in enumerate(preds)]
        gts = [_frame_rows(tgt, False, f"target[{i}]") for i, tgt in enumerate(target)]
        if self.validate_args and dets:  # one read-back per batch: every box field and score finite and bounded
            check_coordinates_within_limit(torch.cat(dets), "preds")
        if self.validate_args and gts:
            check_coordinates_within_limit(torch.cat(gts), "target")
        self.append_frames(keys=frame_ids, det=dets, gt=gts)

    def _frames(self) -> tuple[list[KittiObjects], list[KittiObjects]]:
        frames = self.ragged_frames()

        def numpy(name: str) -> tuple[np.ndarray, np.ndarray]:
            field = frames.fields[name]
            return field.rows.detach().cpu().numpy(), field.lengths.cpu().numpy()

        dets = _frames_from_rows(*numpy("det"), with_score=True)
        gts = _frames_from_rows(*numpy("gt"), with_score=False)
        return gts, dets

    def evaluate(self) -> dict[str, dict[str, dict[str, dict[str, object]]]]:
        """The nested result of :func:`~drivemetrics.detection.kitti_object.evaluate_kitti_objects` (curves and APs)
        over the frames seen on this process (call inside ``sync_context()`` for all processes)."""
        gts, dets = self._frames()
        return evaluate_kitti_objects(
            dets, gts, classes=self.classes, overlaps=self.overlaps, only_detected=False, validate_args=False
        )

    def compute(self) -> dict[str, Tensor]:
        """Flat dict of AP values, fractions in [0, 1] (see the class docstring)."""
        result = self.evaluate()
        out = {}
        for cls in KITTI_CLASSES:
            for metric in METRICS:
                for diff in DIFFICULTIES:
                    entry = result.get(cls, {}).get(metric, {}).get(diff)
                    for points in ("r11", "r40"):
                        value = float("nan") if entry is None else float(entry[f"ap_{points}"])  # type: ignore[arg-type]
                        out[f"{cls}_{metric}_{diff}_{points}"] = torch.tensor(value, dtype=torch.float64)
        return out

    def plot(
        self, val: Any = None, ax: Any = None, cls: KittiClass = "car", metric: KittiMetric = "3d"
    ) -> tuple[Any, Any]:
        """Draw the 41-point interpolated precision curves of ``cls`` / ``metric`` for the three difficulties.

        Args:
            val: a result of :meth:`evaluate` (default: evaluate now) for the precision curves, or values of
                :meth:`compute` (a flat dict, or a sequence of them over epochs) drawn torchmetrics-style.
            ax: a matplotlib axes to draw into (default: a new figure).
            cls: ``car``, ``pedestrian`` or ``cyclist``.
            metric: ``2d``, ``aos``, ``bev`` or ``3d``.

        Returns:
            ``(figure, axes)``.
        """
        plt = require("plot", "matplotlib.pyplot", "plot()")
        is_flat = isinstance(val, dict) and all(arrays.is_tensor(v) for v in val.values())
        if is_flat or (isinstance(val, Sequence) and not isinstance(val, str)):
            return plot_metric(self, val, ax)
        result = self.evaluate() if val is None else val
        fig, ax = plt.subplots() if ax is None else (ax.figure, ax)
        recall = np.arange(41) / 40
        for diff, entry in result.get(cls, {}).get(metric, {}).items():
            ax.plot(recall, entry["curve"], label=f"{diff}: R40 {entry['ap_r40']:.2%}, R11 {entry['ap_r11']:.2%}")
        ax.set_xlabel("recall")
        ax.set_ylabel("orientation similarity" if metric == "aos" else "precision")
        ax.set_title(f"KITTI {cls} {metric}")
        ax.set_xlim(0, 1.01)
        ax.set_ylim(0, 1.01)
        ax.legend(loc="lower left")
        return fig, ax


class KittiObjectAveragePrecision(ScalarMetric, KittiObjectMetrics):
    """One KITTI AP as a scalar (a fraction in [0, 1], float64) for ``self.log(...)``; same states as
    :class:`KittiObjectMetrics`.

    Args:
        cls: ``car`` (default), ``pedestrian`` or ``cyclist``.
        metric: ``2d``, ``aos``, ``bev`` or ``3d`` (default).
        difficulty: ``easy``, ``moderate`` (default) or ``hard``.
        recall_points: 40 (official since 2019, default) or 11.
        overlaps: see :class:`KittiObjectMetrics`.

    Examples:
        >>> from drivemetrics.detection import KittiObjectAveragePrecision, kitti_object_example_inputs
        >>> metric = KittiObjectAveragePrecision(cls="car", metric="bev", difficulty="easy", recall_points=11)
        >>> metric(**kitti_object_example_inputs())
        tensor(0.9091, dtype=torch.float64)
    """

    def __init__(
        self,
        cls: KittiClass = "car",
        metric: KittiMetric = "3d",
        difficulty: Difficulty = "moderate",
        recall_points: int = 40,
        overlaps: Overlaps | Mapping[str, Sequence[float]] = "strict",
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(overlaps=overlaps, validate_args=validate_args, **kwargs)
        if cls.lower() not in KITTI_CLASSES:
            raise ValueError(f"`cls` must be one of {KITTI_CLASSES}, got {cls!r}")
        if metric not in METRICS:
            raise ValueError(f"`metric` must be one of {METRICS}, got {metric!r}")
        if difficulty not in DIFFICULTIES:
            raise ValueError(f"`difficulty` must be one of {DIFFICULTIES}, got {difficulty!r}")
        if recall_points not in (11, 40):
            raise ValueError(f"`recall_points` must be 11 or 40, got {recall_points!r}")
        self.cls, self.metric, self.difficulty, self.recall_points = cls.lower(), metric, difficulty, recall_points
        self.classes = (self.cls,)

    key = "{cls}_{metric}_{difficulty}_r{recall_points}"
