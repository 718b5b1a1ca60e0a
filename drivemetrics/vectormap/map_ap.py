"""Vectorised HD-map AP (MapTR, Argoverse 2 challenge) as Metrics: per-class Chamfer AP at 0.5 / 1.0 / 1.5 m.

The kernels, the matching rule and the two input forms (a dict of batched tensors, or torchmetrics' list of
per-frame dicts) are described in :mod:`drivemetrics.vectormap.scoring`; the classes here accumulate its matches
and take the same ``(preds, target)``. torchmetrics' ``MetricTester`` runs them as
they are (TorchScript aside, which drivemetrics does not support). The kernels (``vector_map_ap``,
``vector_map_matches``, ``vector_map_ap_from_matches``) are re-exported here.
"""

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from drivemetrics._internal.metric import MetricFamily, ScalarMetric, add_config_state
from drivemetrics._internal.ragged import RaggedRows, RaggedStateMixin
from drivemetrics.vectormap.protocol import ProtocolName, get_protocol
from drivemetrics.vectormap.scoring import vector_map_ap, vector_map_ap_from_matches, vector_map_matches

__all__ = [
    "VectorMapAPMetrics",
    "VectorMapAveragePrecision",
    "VectorMapMeanAveragePrecision",
    "vector_map_ap",
    "vector_map_ap_from_matches",
    "vector_map_matches",
]


class VectorMapAPMetrics(RaggedStateMixin, MetricFamily):
    """Vectorised HD-map AP over a dataset: mAP, per-class AP and per-class AP at each threshold (a dict).

    ``compute()`` returns ``{"map": ..., "ap_<class>": ..., "ap_<class>_<thr>": ...}`` (e.g. ``ap_divider_0.5``).
    State: per frame, the matched predictions as ragged rows ``(score, class, true-positive flag per threshold)``
    (:mod:`drivemetrics._internal.ragged`: one gather across processes, also when a process saw no frame or fewer frames
    than the others), and the GT count per class (sum). Matching is per frame, so it happens in ``update``; tied
    scores are ordered by content when pooled, so the result does not depend on the order of frames or processes.

    Args:
        protocol: ``"default"``, ``"nuscenes-maptr"`` or ``"av2-cvpr23"`` (see
            :mod:`drivemetrics.vectormap.protocol`).
        thresholds: Chamfer thresholds (metres); default the protocol's.
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Examples:
        >>> from drivemetrics.vectormap import VectorMapAPMetrics
        >>> import torch
        >>> metric = VectorMapAPMetrics(protocol="av2-cvpr23")
        >>> line = torch.tensor([[[[0.0, 0.0], [10.0, 0.0]]]])  # (B, N, P, 2): one frame, one line, metres
        >>> preds = {"points": line + torch.tensor([0.0, 0.6]), "labels": torch.tensor([[0]]),  # 0: divider
        ...          "scores": torch.tensor([[0.9]])}
        >>> metric.update(preds, {"points": line, "labels": torch.tensor([[0]])})
        >>> round(metric.compute()["ap_divider"].item(), 4)
        0.6667
        >>> per_frame = [{"points": line[0] + 0.6, "labels": torch.tensor([1]), "scores": torch.tensor([0.9])}]
        >>> metric.update(per_frame, [{"points": line[0], "labels": torch.tensor([1])}])  # one dict per frame
        >>> round(metric.compute()["ap_divider"].item(), 4)
        0.6667
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    num_targets: Tensor

    def __init__(
        self,
        protocol: ProtocolName = "default",
        thresholds: Sequence[float] | None = None,
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.validate_args = bool(validate_args)
        self.protocol = get_protocol(protocol)
        self.thresholds = tuple(float(t) for t in (self.protocol.thresholds if thresholds is None else thresholds))
        if not self.thresholds or any(not t > 0 for t in self.thresholds):
            raise ValueError(f"`thresholds` must be positive distances in metres, got {self.thresholds}")
        # the one per-prediction state: rows (score, class id, flag at each threshold), float64
        self.add_ragged_state(matches=((2 + len(self.thresholds),), torch.float64))
        self.add_state(
            "num_targets", default=torch.zeros(len(self.protocol.class_names), dtype=torch.long), dist_reduce_fx="sum"
        )
        add_config_state(self, (self.protocol, self.thresholds))

    def update(
        self,
        preds: Mapping[str, Tensor] | Sequence[Mapping[str, Tensor]],
        target: Mapping[str, Tensor] | Sequence[Mapping[str, Tensor]],
    ) -> None:
        """Match a batch of frames: ``preds`` / ``target`` dicts of batched tensors, or lists of per-frame dicts
        (torchmetrics' detection convention), as in :func:`vector_map_matches`."""
        out = vector_map_matches(
            preds, target, protocol=self.protocol, thresholds=self.thresholds, validate_args=self.validate_args
        )
        rows = torch.cat(
            [
                out["scores"].to(torch.float64)[:, None],
                out["labels"].to(torch.float64)[:, None],
                out["true_positive"].to(torch.float64),
            ],
            1,
        )
        self.append_frames(matches=RaggedRows(rows, out["num_kept"].to(torch.int64)))
        self.num_targets = self.num_targets + out["num_targets"].to(self.num_targets.device)

    def compute(self) -> dict[str, Tensor]:
        """``map``, ``ap_<class>`` and ``ap_<class>_<threshold>`` (float64 scalars)."""
        rows = self.ragged_frames().fields["matches"].rows
        scores, labels, tp = rows[:, 0], rows[:, 1].to(torch.long), rows[:, 2:] > 0.5
        out = vector_map_ap_from_matches(
            scores, labels, tp, self.num_targets, protocol=self.protocol, validate_args=False
        )
        result = {"map": out["map"]}
        for c, name in enumerate(self.protocol.class_names):
            result[f"ap_{name}"] = out["ap"][c]
            for t, threshold in enumerate(self.thresholds):
                result[f"ap_{name}_{threshold:g}"] = out["ap_per_threshold"][c, t]
        return result


class VectorMapMeanAveragePrecision(ScalarMetric, VectorMapAPMetrics):
    """Vectorised HD-map mAP (mean of the class APs), one tensor (arguments as :class:`VectorMapAPMetrics`).

    Examples:
        >>> from drivemetrics.vectormap import VectorMapMeanAveragePrecision, vector_map_example_inputs
        >>> metric = VectorMapMeanAveragePrecision(protocol="av2-cvpr23")
        >>> metric(**vector_map_example_inputs())  # divider AP 2/3, the other classes 0
        tensor(0.2222, dtype=torch.float64)
    """

    key = "map"


class VectorMapAveragePrecision(ScalarMetric, VectorMapAPMetrics):
    """AP of one class (mean over the thresholds, or at one threshold), one tensor.

    Args:
        class_name: a class of the protocol (``divider``, ``ped_crossing``, ``boundary``).
        threshold: one of the thresholds for the AP at it alone; ``None`` for the mean over thresholds.
        protocol: see :class:`VectorMapAPMetrics`.
        thresholds: see :class:`VectorMapAPMetrics`.

    Examples:
        >>> from drivemetrics.vectormap import VectorMapAveragePrecision, vector_map_example_inputs
        >>> metric = VectorMapAveragePrecision("divider", threshold=1.0, protocol="av2-cvpr23")
        >>> metric(**vector_map_example_inputs())
        tensor(1., dtype=torch.float64)
    """

    def __init__(
        self,
        class_name: str,
        threshold: float | None = None,
        protocol: ProtocolName = "default",
        thresholds: Sequence[float] | None = None,
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(protocol=protocol, thresholds=thresholds, validate_args=validate_args, **kwargs)
        if class_name not in self.protocol.class_names:
            raise ValueError(f"`class_name` must be one of {self.protocol.class_names}, got {class_name!r}")
        if threshold is not None and float(threshold) not in self.thresholds:
            raise ValueError(f"`threshold` must be one of {self.thresholds}, got {threshold}")
        self.class_name = class_name
        self.threshold = threshold
        self.at_threshold = "" if threshold is None else f"_{float(threshold):g}"

    key = "ap_{class_name}{at_threshold}"
