"""Input factories for the Metric test battery (tests/test_metric_battery.py), one registration per Metric class.

The battery discovers every ``torchmetrics.Metric`` class exported by the domain packages (``_EXPORTS`` of
``drivemetrics.road``, ``.lane``, ``.graph``, ``.attack``, ``.detection`` and their sub-packages) and FAILS for a
class without a factory here. To add a Metric class:

1. write a factory ``def _my_case(cls: type[Metric]) -> MetricCase`` returning small, valid, deterministic inputs:
   ``init_kwargs`` for ``cls(**init_kwargs)`` and exactly ``NUM_BATCHES`` (4) batches, each ``(args, kwargs)`` for
   ``metric.update(*args, **kwargs)``. Batches 0 and 2 go to rank 0 and batches 1 and 3 to rank 1 in the DDP
   checks (and other splits, one rank without batches among them, in the uneven DDP checks, which compare
   integer values exactly and floats to 1e-12). Make the batches differ, so that a metric that forgets or
   double-counts a batch changes its value; keep them tiny (the whole battery must stay fast: every class is
   updated ~30 times);
2. if the metric takes float tensors, give ``cast(batch, dtype)`` returning the batch with its float inputs in
   ``dtype`` (used for the float64 / float16 checks) and ``grad_arg`` (index in ``args`` of a float input that can
   carry gradients, for the ``is_differentiable`` check); else leave both ``None``. Float64 inputs must give the
   float32 value within ``float64_rtol`` (loosen it, or set ``None``, only with a comment saying why);
3. decorate it with ``@register(ClassA, ClassB, ...)`` for every class it serves (a family's dict class and its
   scalar classes usually share one factory; the factory may look at ``cls`` to adapt ``init_kwargs``).

Import the classes from their modules (not through the lazy package) so that a missing module fails loudly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import networkx as nx
import torch
from torch import Tensor
from torchmetrics import Metric

from drivemetrics.detection.kitti_object import KittiObjectAveragePrecision, KittiObjectMetrics
from drivemetrics.geometry.bev import BevGrid
from drivemetrics.lane.culane import CULaneF1Score, CULaneMetrics, CULanePrecision, CULaneRecall
from drivemetrics.lane.curvelanes import CurveLanesF1Score, CurveLanesMetrics, CurveLanesPrecision, CurveLanesRecall
from drivemetrics.lane.geometry import default_z_samples
from drivemetrics.lane.llamas import (
    LlamasF1Score,
    LlamasF1Score75,
    LlamasMeanF1Score,
    LlamasMetrics,
    LlamasPrecision,
    LlamasRecall,
)
from drivemetrics.lane.psld import PSLD
from drivemetrics.lane.tusimple import (
    TuSimpleAccuracy,
    TuSimpleF1Score,
    TuSimpleFalseNegatives,
    TuSimpleFalsePositives,
    TuSimpleMetrics,
)
from drivemetrics.lane3d.apollo import (
    Apollo3DAveragePrecision,
    Apollo3DMaxFScore,
    Apollo3DMetrics,
    Apollo3DXErrorClose,
    Apollo3DXErrorFar,
    Apollo3DZErrorClose,
    Apollo3DZErrorFar,
)
from drivemetrics.lane3d.once import ONCE3DDistanceError, ONCE3DF1Score, ONCE3DMetrics, ONCE3DPrecision, ONCE3DRecall
from drivemetrics.lane3d.openlane import (
    OpenLane3DCategoryAccuracy,
    OpenLane3DFScore,
    OpenLane3DMetrics,
    OpenLane3DPrecision,
    OpenLane3DRecall,
    OpenLane3DXErrorClose,
    OpenLane3DXErrorFar,
    OpenLane3DZErrorClose,
    OpenLane3DZErrorFar,
)
from drivemetrics.lanegraph.lanegraph import (
    LaneGraphAPLS,
    LaneGraphGeoPrecision,
    LaneGraphGeoRecall,
    LaneGraphIoU,
    LaneGraphMetrics,
    LaneGraphSDA20,
    LaneGraphSDA50,
    LaneGraphTopoPrecision,
    LaneGraphTopoRecall,
)
from drivemetrics.lanegraph.planning import (
    LaneGraphPlanningMED,
    LaneGraphPlanningMetrics,
    LaneGraphPlanningMMD,
    LaneGraphPlanningSuccessRate,
)
from drivemetrics.lanetopology.openlanev2 import (
    OpenLaneV2AreaAP,
    OpenLaneV2F1Score,
    OpenLaneV2LaneAP,
    OpenLaneV2LaneElementTopology,
    OpenLaneV2LaneTopology,
    OpenLaneV2Metrics,
    OpenLaneV2Score,
    OpenLaneV2TrafficElementAP,
    OpenLaneV2UniScore,
    OpenLaneV2UniScoreMetrics,
)
from drivemetrics.road.corridor import (
    DrivingCorridorHitRate,
    DrivingCorridorLateralPrecision,
    DrivingCorridorLongitudinalF1Score,
    DrivingCorridorMetrics,
)
from drivemetrics.road.corridor_config import CorridorConfig
from drivemetrics.road.pixel import RoadPixelAveragePrecision, RoadPixelMaxFScore, RoadPixelMetrics
from drivemetrics.roadnet.apls import APLSMetrics, APLSScore
from drivemetrics.roadnet.ccq import CCQCompleteness, CCQCorrectness, CCQMetrics, CCQQuality
from drivemetrics.roadnet.junct import JunctionFCorrect, JunctionFError, JunctionMetrics
from drivemetrics.roadnet.opt_g import OptGF1Score, OptGMetrics, OptGPrecision, OptGRecall
from drivemetrics.roadnet.opt_j import OptJF1Score, OptJMetrics, OptJPrecision, OptJRecall
from drivemetrics.roadnet.opt_p import OptPF1Score, OptPMetrics, OptPPrecision, OptPRecall
from drivemetrics.roadnet.subg import SubgraphF1Score, SubgraphMetrics
from drivemetrics.roadnet.tlts import TLTSAccuracy, TLTSMetrics
from drivemetrics.vectormap.cmap import (
    ConsistentMapAPMetrics,
    ConsistentMapAveragePrecision,
    ConsistentMapMeanAveragePrecision,
)
from drivemetrics.vectormap.map_ap import (
    VectorMapAPMetrics,
    VectorMapAveragePrecision,
    VectorMapMeanAveragePrecision,
)

NUM_BATCHES = 4

Batch = tuple[tuple[Any, ...], dict[str, Any]]


@dataclass
class MetricCase:
    """What the battery needs to exercise one Metric class (see the module docstring)."""

    init_kwargs: dict[str, Any]
    batches: list[Batch]
    cast: Callable[[Batch, torch.dtype], Batch] | None = None
    grad_arg: int | None = None
    float64_rtol: float | None = 1e-4  # float64 vs float32 inputs; None: not comparable (say why at the factory)


INPUT_FACTORIES: dict[type[Metric], Callable[[type[Metric]], MetricCase]] = {}


def register(*classes: type[Metric]) -> Callable:
    """Decorator: use the decorated factory for each of ``classes``."""

    def wrap(factory: Callable[[type[Metric]], MetricCase]) -> Callable[[type[Metric]], MetricCase]:
        for cls in classes:
            if cls in INPUT_FACTORIES:
                raise ValueError(f"{cls.__name__} has two input factories")
            INPUT_FACTORIES[cls] = factory
        return factory

    return wrap


def make_case(cls: type[Metric]) -> MetricCase:
    """The registered case of ``cls`` (checked: ``NUM_BATCHES`` batches)."""
    case = INPUT_FACTORIES[cls](cls)
    if len(case.batches) != NUM_BATCHES:
        raise ValueError(f"the input factory of {cls.__name__} must give {NUM_BATCHES} batches")
    return case


def cast_float_args(batch: Batch, dtype: torch.dtype) -> Batch:
    """``batch`` with every floating tensor argument converted to ``dtype``."""
    args, kwargs = batch

    def convert(x: Any) -> Any:
        if isinstance(x, dict):  # a container of tensors (the map family's (preds, target))
            return {k: convert(v) for k, v in x.items()}
        return x.to(dtype) if isinstance(x, Tensor) and x.is_floating_point() else x

    return tuple(convert(a) for a in args), {k: convert(v) for k, v in kwargs.items()}


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ----------------------------------------------------------------------------------------------------------------
# road


@register(RoadPixelMetrics, RoadPixelMaxFScore, RoadPixelAveragePrecision)
def _road_pixel_case(cls: type[Metric]) -> MetricCase:
    g = _generator(1)
    batches = []
    for i in range(NUM_BATCHES):
        target = torch.rand(2, 9, 11, generator=g) < 0.25 + 0.1 * i
        preds = (0.5 * target + 0.6 * torch.rand(target.shape, generator=g)).clamp(0, 1)
        valid = torch.rand(target.shape, generator=g) > 0.1
        batches.append(((preds, target), {"valid": valid}))
    return MetricCase({"thresholds": 32}, batches, cast_float_args, grad_arg=0)


_CORRIDOR_GRID = BevGrid(x_min=-4.0, x_max=4.0, z_min=6.0, z_max=26.0, resolution=0.25)  # 80 x 32 cells
_CORRIDOR_CONFIG = CorridorConfig(distances=(15.0, 20.0), max_stages=5)


@register(
    DrivingCorridorMetrics, DrivingCorridorHitRate, DrivingCorridorLateralPrecision, DrivingCorridorLongitudinalF1Score
)
def _corridor_case(cls: type[Metric]) -> MetricCase:
    xs, zs = _CORRIDOR_GRID.cell_centers()
    batches = []
    for i in range(NUM_BATCHES):
        shifts = (0.3 * i, -0.4 * i + 0.2)
        target = torch.stack([(xs - s).abs() <= 1.75 for s in shifts]) & (zs <= 24.0 - 2 * i)
        preds = target.float() * 0.9
        preds[0, 30 + 8 * i : 42 + 8 * i] = 0.0  # a gap: the corridor stops there (row 0 is the far edge)
        preds[1] = torch.roll(preds[1], 3 * i - 2, dims=1)  # a detection shifted sideways
        batches.append(((preds, target), {}))
    kwargs: dict[str, Any] = {"threshold": 0.5, "grid": _CORRIDOR_GRID, "config": _CORRIDOR_CONFIG}
    if cls is not DrivingCorridorMetrics:
        kwargs["distance"] = 20.0
    # The beam search breaks ties between manoeuvres of (nearly) equal fitness by the rounding of the input's float
    # type, so float32 and float64 maps can give different corridors on these synthetic, grid-aligned lanes.
    return MetricCase(kwargs, batches, cast_float_args, grad_arg=0, float64_rtol=None)


# ----------------------------------------------------------------------------------------------------------------
# lane


@register(TuSimpleMetrics, TuSimpleAccuracy, TuSimpleFalsePositives, TuSimpleFalseNegatives, TuSimpleF1Score)
def _tusimple_case(cls: type[Metric]) -> MetricCase:
    g = _generator(2)
    h_samples = torch.arange(160.0, 720.0, 20.0)
    batches = []
    for i in range(NUM_BATCHES):
        target = 200.0 + 250.0 * torch.arange(4.0)[None, :, None] + 0.3 * h_samples + torch.zeros(3, 4, 1)
        target[:, 3, : 5 * i] = torch.nan  # a partly missing lane
        preds = target + torch.randn(target.shape, generator=g) * (5.0 + 10.0 * i)
        preds[0, 1] += 80.0  # a lane that misses
        batches.append(((preds, target), {"h_samples": h_samples.expand(3, -1)}))
    return MetricCase({}, batches, cast_float_args, grad_arg=0)


def _culane_lanes(g: torch.Generator, batch: int, noise: float) -> tuple[Tensor, Tensor]:
    y = torch.linspace(20.0, 58.0, 8)
    starts = torch.tensor([20.0, 60.0, 100.0, 140.0])
    target = torch.stack([starts[:, None] + 0.8 * (y - 20.0), y.expand(4, -1)], dim=-1).expand(batch, -1, -1, -1)
    preds = target + torch.randn(target.shape, generator=g) * noise
    return preds.clone(), target.clone()


@register(CULaneMetrics, CULanePrecision, CULaneRecall, CULaneF1Score)
def _culane_case(cls: type[Metric]) -> MetricCase:
    g = _generator(3)
    batches = []
    for i in range(NUM_BATCHES):
        preds, target = _culane_lanes(g, 2, 0.3 + 1.2 * i)
        preds[1, i % 4 :] = torch.nan  # missed lanes in the second image
        batches.append(((preds, target), {}))
    return MetricCase({"height": 64, "width": 168, "line_width": 6.0}, batches, cast_float_args, grad_arg=0)


def _road_lanes(g: torch.Generator, batch: int, noise: float, rows: Tensor, starts: Tensor) -> tuple[Tensor, Tensor]:
    """Straight lanes through ``starts`` at the bottom row, converging upwards, and noisy predictions of them."""
    bottom = rows.max()
    xs = starts[:, None] + (starts[:, None] - starts.mean()) * (rows - bottom) / (2 * bottom)
    target = torch.stack([xs, rows.expand(len(starts), -1)], dim=-1).expand(batch, -1, -1, -1).clone()
    shift = torch.randn(batch, len(starts), 1, 1, generator=g) * noise
    return (target + shift * torch.tensor([1.0, 0.0])).clone(), target


@register(LlamasMetrics, LlamasPrecision, LlamasRecall, LlamasF1Score, LlamasF1Score75, LlamasMeanF1Score)
def _llamas_case(cls: type[Metric]) -> MetricCase:
    g = _generator(11)
    rows = torch.arange(300.0, 717.0, 16.0)
    batches = []
    for i in range(NUM_BATCHES):
        preds, target = _road_lanes(g, 2, 4.0 + 8.0 * i, rows, torch.tensor([200.0, 500.0, 800.0, 1100.0]))
        preds = preds[:, :, ::3]  # predictions sampled more sparsely than the GT rows
        preds[1, i % 4 :] = torch.nan  # missed lanes in the second frame
        batches.append(((preds, target), {}))
    return MetricCase({}, batches, cast_float_args, grad_arg=0)


@register(CurveLanesMetrics, CurveLanesPrecision, CurveLanesRecall, CurveLanesF1Score)
def _curvelanes_case(cls: type[Metric]) -> MetricCase:
    g = _generator(12)
    rows = torch.arange(700.0, 1440.0, 60.0)
    batches = []
    for i in range(NUM_BATCHES):
        preds, target = _road_lanes(g, 2, 3.0 + 6.0 * i, rows, torch.tensor([400.0, 1000.0, 1600.0, 2200.0]))
        preds[1, i % 4 :] = torch.nan
        scores = torch.rand(2, 4, generator=g)
        size = torch.tensor([[2560.0, 1440.0], [2560.0, 1440.0]])
        batches.append(((preds, target), {"image_size": size, "scores": scores}))
    return MetricCase({}, batches, cast_float_args, grad_arg=0)


@register(PSLD)
def _psld_case(cls: type[Metric]) -> MetricCase:
    g = _generator(4)
    z = default_z_samples(torch.float32)
    batches = []
    for i in range(NUM_BATCHES):
        target = 0.002 * (z - 5.0) ** 2 * (1 + 0.5 * torch.randn(3, 1, generator=g))
        preds = target + 0.2 * (i + 1) * torch.randn(3, 1, generator=g) + 0.01 * z
        batches.append(((preds, target), {"speed": 10.0 + i}))
    # the closed-loop rollout runs in the input's float type: float32 is good to ~1e-3 relative
    return MetricCase({}, batches, cast_float_args, grad_arg=0, float64_rtol=1e-2)


# ----------------------------------------------------------------------------------------------------------------
# graph


def _grid_graph(g: torch.Generator, n: int = 3, step: float = 100.0, jitter: float = 0.0, drop: int = 0) -> nx.Graph:
    graph = nx.grid_2d_graph(n, n)
    noise = torch.randn(n * n, 2, generator=g) * jitter
    pos = {
        node: (node[0] * step + float(noise[k, 0]), node[1] * step + float(noise[k, 1])) for k, node in enumerate(graph)
    }
    graph = nx.convert_node_labels_to_integers(graph, label_attribute="cell")
    nx.set_node_attributes(graph, {i: pos[graph.nodes[i]["cell"]] for i in graph}, "pos")
    for _ in range(drop):
        edges = list(graph.edges)
        graph.remove_edge(*edges[int(torch.randint(len(edges), (1,), generator=g))])
    return graph


def _graph_batches(seed: int) -> list[Batch]:
    g = _generator(seed)
    batches = []
    for i in range(NUM_BATCHES):
        target = _grid_graph(g)
        preds = _grid_graph(g, jitter=2.0 + 4.0 * i, drop=i)
        if i % 2:  # a stub on a corner: a spurious junction
            preds.add_node(100, pos=(-60.0, -60.0))
            preds.add_edge(0, 100)
        batches.append(((preds, target), {}))
    return batches


_GRAPH_OPTIONS: dict[type[Metric], dict[str, Any]] = {
    OptJMetrics: {},
    OptPMetrics: {"spacing": 20.0},
    OptGMetrics: {"n_samples": 6, "spacing": 20.0},
    APLSMetrics: {"max_sources": 12},
    JunctionMetrics: {},
    SubgraphMetrics: {"n_subgraphs": 12, "spacing": 20.0},
    TLTSMetrics: {"n_paths": 20},
}


@register(
    OptJMetrics, OptJPrecision, OptJRecall, OptJF1Score,
    OptPMetrics, OptPPrecision, OptPRecall, OptPF1Score,
    OptGMetrics, OptGPrecision, OptGRecall, OptGF1Score,
    APLSMetrics, APLSScore,
    JunctionMetrics, JunctionFCorrect, JunctionFError,
    SubgraphMetrics, SubgraphF1Score,
    TLTSMetrics, TLTSAccuracy,
)  # fmt: skip
def _graph_case(cls: type[Metric]) -> MetricCase:
    family = next(c for c in cls.__mro__ if c in _GRAPH_OPTIONS)
    return MetricCase(dict(_GRAPH_OPTIONS[family]), _graph_batches(5))


@register(CCQMetrics, CCQCorrectness, CCQCompleteness, CCQQuality)
def _ccq_case(cls: type[Metric]) -> MetricCase:
    g = _generator(6)
    batches = []
    for i in range(NUM_BATCHES):
        target = torch.zeros(2, 24, 24, dtype=torch.bool)
        target[:, 12, 2:22] = True
        target[:, 3:21, 6 + i] = True
        preds = torch.roll(target, shifts=(i - 1, 0), dims=(1, 2)) & (torch.rand(2, 24, 24, generator=g) > 0.2)
        batches.append(((preds, target), {}))
    return MetricCase({"slack": 1.5}, batches)


# ----------------------------------------------------------------------------------------------------------------
# detection


def _kitti_frame(g: torch.Generator, cars: int, jitter: float, pred: bool) -> dict[str, Tensor]:
    """A frame of ``cars`` cars in a row (dict inputs of KittiObjectMetrics), boxes jittered by ``jitter``."""
    x = (
        torch.arange(cars, dtype=torch.float64) * 4.0
        - 4.0
        + jitter * torch.randn(cars, generator=g, dtype=torch.float64)
    )
    z = 12.0 + 3.0 * torch.arange(cars, dtype=torch.float64)
    left = 300.0 + 150.0 * torch.arange(cars, dtype=torch.float64) + 10 * jitter * torch.rand(cars, generator=g)
    frame = {
        "labels": torch.zeros(cars, dtype=torch.long),  # Car
        "boxes": torch.stack([left, torch.full_like(left, 150.0), left + 80.0, torch.full_like(left, 210.0)], 1),
        "dimensions": torch.tensor([[1.5, 1.6, 3.9]], dtype=torch.float64).expand(cars, 3).clone(),
        "location": torch.stack([x, torch.full_like(x, 1.6), z], 1),
        "rotation_y": 0.1 * torch.randn(cars, generator=g, dtype=torch.float64),
        "alpha": torch.zeros(cars, dtype=torch.float64),
    }
    if pred:
        frame["scores"] = torch.rand(cars, generator=g, dtype=torch.float64)
    else:
        frame["truncated"] = torch.zeros(cars, dtype=torch.float64)
        frame["occluded"] = torch.zeros(cars, dtype=torch.long)
    return frame


@register(KittiObjectMetrics, KittiObjectAveragePrecision)
def _kitti_object_case(cls: type[Metric]) -> MetricCase:
    g = _generator(11)
    batches = []
    for i in range(NUM_BATCHES):
        target = [_kitti_frame(_generator(100 + 2 * i + k), 2 + k + i % 2, 0.0, False) for k in range(2)]
        preds = [_kitti_frame(_generator(100 + 2 * i + k), 2 + k + i % 2, 0.3 * (i + 1), True) for k in range(2)]
        preds[0]["scores"] = torch.rand(len(preds[0]["scores"]), generator=g, dtype=torch.float64)
        batches.append(((preds, target), {}))
    kwargs: dict[str, Any] = {"metric": "bev"} if cls is KittiObjectAveragePrecision else {}
    # dict-of-tensor frames: no float tensor argument to cast or differentiate
    return MetricCase(kwargs, batches, None, grad_arg=None, float64_rtol=None)


# ----------------------------------------------------------------------------------------------------------------
# lane graphs


def _lane_fork(x: float, y: float, spread: float, length: float = 60.0) -> nx.DiGraph:
    """A directed lane that splits in two: 0 -> 1 -> 2 (a resampled approach) -> 3 / 4 (the two branches)."""
    import numpy as np

    g = nx.DiGraph()
    points = [(x - length, y), (x - length / 2, y), (x, y), (x + length, y + spread), (x + length, y - spread)]
    for i, point in enumerate(points):
        g.add_node(i, pos=np.array(point, dtype=np.float64))
    g.add_edges_from([(0, 1), (1, 2), (2, 3), (2, 4)])
    return g


@register(
    LaneGraphMetrics,
    LaneGraphTopoPrecision,
    LaneGraphTopoRecall,
    LaneGraphGeoPrecision,
    LaneGraphGeoRecall,
    LaneGraphAPLS,
    LaneGraphSDA20,
    LaneGraphSDA50,
    LaneGraphIoU,
)
def _lane_graph_case(cls: type[Metric]) -> MetricCase:
    batches = []
    for i in range(NUM_BATCHES):
        target = [_lane_fork(128.0, 128.0, 30.0), _lane_fork(100.0, 90.0 + 10 * i, 25.0)]
        preds = [_lane_fork(128.0 + 3.0 * i, 128.0, 30.0 - 4.0 * i), _lane_fork(100.0, 95.0 + 12 * i, 25.0, 50.0)]
        batches.append(((preds, target), {}))
    # graphs in, per-sample float64 means out: nothing to cast or differentiate
    return MetricCase({}, batches, None, grad_arg=None, float64_rtol=None)


def _lane_chain(n: int, y: float, wiggle: float) -> nx.DiGraph:
    """A directed chain of ``n`` nodes 3 px apart along x, swaying by ``wiggle`` px (long enough to plan on)."""
    import numpy as np

    g = nx.DiGraph()
    for i in range(n):
        g.add_node(i, pos=np.array([10.0 + 3.0 * i, y + wiggle * np.sin(i / 5.0)]))
    g.add_edges_from((i, i + 1) for i in range(n - 1))
    return g


@register(LaneGraphPlanningMetrics, LaneGraphPlanningMMD, LaneGraphPlanningMED, LaneGraphPlanningSuccessRate)
def _lane_planning_case(cls: type[Metric]) -> MetricCase:
    """Chains of >= 60 nodes: planning walks need 50 steps on the GT, so every batch gives finite values (checked
    in tests/lanegraph/test_lanegraph.py)."""
    batches = []
    for i in range(NUM_BATCHES):
        target = [_lane_chain(75, 100.0, 5.0), _lane_chain(80, 60.0, 0.0)]
        preds = [_lane_chain(75, 100.0 + 2.0 * i, 5.0 + i), _lane_chain(60 + 10 * i, 62.0, 2.0)]
        batches.append(((preds, target), {}))
    return MetricCase({}, batches, None, grad_arg=None, float64_rtol=None)


def _olv2_lane(y: float, shift: float, points: int = 6) -> list[list[float]]:
    return [[5.0 * k, y + shift, 0.0] for k in range(points)]


def _olv2_frame(track: str, batch: int, frame: int, pred: bool) -> dict[str, Any]:
    """A small OpenLane-V2 frame: 3 lanes 3.5 m apart (predictions shifted by 0.3-2.5 m), 2 traffic elements."""
    shifts = [0.3 * batch + 0.2 * frame, 1.5, 2.5 - 0.4 * batch] if pred else [0.0, 0.0, 0.0]
    count = 3 if not pred else 2 + (batch + frame) % 2
    conf = [0.9 - 0.1 * k - 0.01 * batch - 0.003 * frame for k in range(count)]
    lanes = []
    for k in range(count):
        centre = _olv2_lane(3.5 * k, shifts[k])
        if track == "centerline":
            item: dict[str, Any] = {"points": centre}
        else:
            item = {
                "centerline": centre,
                "left_laneline": _olv2_lane(3.5 * k + 1.75, shifts[k]),
                "right_laneline": _olv2_lane(3.5 * k - 1.75, shifts[k]),
            }
        if pred:
            item["confidence"] = conf[k]
        lanes.append(item)
    boxes = [[[100.0, 100.0], [140.0, 150.0]], [[300.0 + 8 * batch, 80.0], [330.0 + 8 * batch, 120.0]]]
    elements = []
    for k, box in enumerate(boxes):
        element: dict[str, Any] = {"points": box, "attribute": (k + batch * pred) % 3, "category": 1}
        if pred:
            element["confidence"] = 0.8 - 0.2 * k - 0.01 * frame
        elements.append(element)
    ll = [
        [(0.7 if pred else 1.0) if j == i + 1 else (0.2 if pred else 0.0) for j in range(count)] for i in range(count)
    ]
    lt = [[(0.6 if pred else 1.0) if i == k else 0.0 for k in range(2)] for i in range(count)]
    frame_dict: dict[str, Any] = {"traffic_element": elements}
    if track == "centerline":
        frame_dict.update(lane_centerline=lanes, topology_lclc=ll, topology_lcte=lt)
    else:
        area: dict[str, Any] = {"points": _olv2_lane(-6.0, shifts[0] if pred else 0.0, 5), "category": 2}
        if pred:
            area["confidence"] = 0.7 - 0.01 * batch
        frame_dict.update(lane_segment=lanes, area=[area], topology_lsls=ll, topology_lste=lt)
    return frame_dict


@register(
    OpenLaneV2Metrics,
    OpenLaneV2Score,
    OpenLaneV2UniScore,
    OpenLaneV2LaneAP,
    OpenLaneV2TrafficElementAP,
    OpenLaneV2AreaAP,
    OpenLaneV2LaneTopology,
    OpenLaneV2LaneElementTopology,
    OpenLaneV2F1Score,
    OpenLaneV2UniScoreMetrics,
)
def _openlanev2_case(cls: type[Metric]) -> MetricCase:
    """Two frames per batch, devkit dicts of lists; the lane-segment classes get the lane-segment track."""
    lanesegment = cls in (OpenLaneV2UniScore, OpenLaneV2AreaAP, OpenLaneV2UniScoreMetrics)
    track = "lanesegment" if lanesegment else "centerline"
    init_kwargs: dict[str, Any] = (
        {}
        if cls in (OpenLaneV2Score, OpenLaneV2UniScore, OpenLaneV2F1Score, OpenLaneV2AreaAP, OpenLaneV2UniScoreMetrics)
        else {"track": track}
    )
    batches = []
    for i in range(NUM_BATCHES):
        preds = [_olv2_frame(track, i, f, True) for f in range(2)]
        target = [_olv2_frame(track, i, f, False) for f in range(2)]
        batches.append(((preds, target), {}))
    # frames of nested lists in, float64 scores out: nothing to cast or differentiate
    return MetricCase(init_kwargs, batches, None, grad_arg=None, float64_rtol=None)


# ----------------------------------------------------------------------------------------------------------------
# vectormap


@register(VectorMapAPMetrics, VectorMapMeanAveragePrecision, VectorMapAveragePrecision)
def _vector_map_case(cls: type[Metric]) -> MetricCase:
    """Two frames per batch of three lines each (one per class), predictions shifted 0.2-1.2 m, one extra line;
    distances stay clear of the thresholds so that float32 and float64 inputs match the same way."""
    g = _generator(26)
    batches = []
    for i in range(NUM_BATCHES):
        start = torch.rand(2, 3, 1, 2, generator=g) * 20 - 10
        target = start + torch.linspace(0, 1, 6)[:, None] * torch.tensor([1.0, 8.0])  # (2, 3, 6, 2)
        shift = torch.tensor([0.2, 0.7, 1.2]).roll(i)[None, :, None, None] * torch.tensor([1.0, 0.0])
        preds = torch.cat([target + shift, target[:, :1] + 6.0], 1)  # (2, 4, 6, 2)
        labels = torch.tensor([[0, 1, 2], [2, 1, 0]])
        preds_labels = torch.cat([labels, torch.tensor([[1], [2]])], 1)
        scores = torch.rand(2, 4, generator=g) * 0.8 + 0.1
        batches.append(
            (({"points": preds, "labels": preds_labels, "scores": scores}, {"points": target, "labels": labels}), {})
        )
    init = {"protocol": "default"}
    if cls is VectorMapAveragePrecision:
        init = {"class_name": "divider", "threshold": 1.0, "protocol": "default"}
    return MetricCase(init, batches, cast_float_args, grad_arg=None)


@register(ConsistentMapAPMetrics, ConsistentMapMeanAveragePrecision, ConsistentMapAveragePrecision)
def _consistent_map_case(cls: type[Metric]) -> MetricCase:
    """One whole scene per batch (three frames, the ego 2 m forward per frame; scenes are never split across
    ranks): a divider and a boundary, predicted off by dyadic offsets (the same in float32 and float64), the
    boundary missing in one frame, one far false positive; dyadic scores."""
    batches = []
    offsets = torch.tensor([0.25, 0.75, 1.25, 0.5])
    for i in range(NUM_BATCHES):
        divider = torch.tensor([[-20.0, 1.0], [0.0, 1.5], [20.0, 1.0]])
        boundary = torch.tensor([[-20.0, -6.0], [0.0, -6.0], [20.0, -5.0]])
        shift = torch.tensor([[2.0 * k, 0.0] for k in range(3)])[:, None, None, :]
        target = torch.stack([divider, boundary])[None] - shift  # (3, 2, 3, 2)
        off = torch.tensor([[0.0, float(offsets[i])], [0.0, float(offsets[(i + 1) % 4])]])[None, :, None, :]
        preds = torch.cat([target + off, target[:, :1] + torch.tensor([0.0, 9.0])], 1)  # (3, 3, 3, 2)
        scores = torch.tensor([[0.875, 0.75, 0.5], [0.875, 0.25, 0.625], [0.75, 0.75, 0.5]]).roll(i, 0)
        pose = torch.eye(4).repeat(3, 1, 1)
        pose[:, 0, 3] = torch.tensor([0.0, 2.0, 4.0]) + 10.0 * i
        labels = torch.tensor([[1, 2]] * 3)
        batches.append(
            (
                (
                    {"points": preds, "labels": torch.tensor([[1, 2, 1]] * 3), "scores": scores},
                    {"points": target, "labels": labels},
                ),
                {"scene": [f"scene-{i}"] * 3, "pose": pose},
            )
        )
    init: dict[str, Any] = {"roi": "60x30"}
    if cls is ConsistentMapAveragePrecision:
        init = {"class_name": "divider", "threshold": 0.5, "roi": "60x30"}
    return MetricCase(init, batches, cast_float_args, grad_arg=None)


# ----------------------------------------------------------------------------------------------------------------
# lane3d


@register(
    OpenLane3DMetrics,
    OpenLane3DFScore,
    OpenLane3DRecall,
    OpenLane3DPrecision,
    OpenLane3DCategoryAccuracy,
    OpenLane3DXErrorClose,
    OpenLane3DXErrorFar,
    OpenLane3DZErrorClose,
    OpenLane3DZErrorFar,
)
def _openlane3d_case(cls: type[Metric]) -> MetricCase:
    """Two frames per batch of three straight GT lanes 3.5 m apart (the last one half hidden), predictions shifted
    0.1-1.9 m sideways and 0.1 m up, one extra lane; distances stay clear of the 1.5 m threshold and of the integer
    cost steps so that float32 and float64 inputs match the same way."""
    y = torch.linspace(4.0, 90.0, 12)
    batches = []
    for i in range(NUM_BATCHES):
        x = torch.tensor([-3.5, 0.0, 3.5])[:, None].expand(3, 12)
        target = torch.stack([x, y.expand(3, -1), torch.zeros(3, 12)], -1)[None].repeat(2, 1, 1, 1)  # (2, 3, 12, 3)
        visibility = torch.ones(2, 3, 12)
        visibility[:, 2, 6:] = 0.0
        shift = torch.tensor([0.1, 0.6, 1.9]).roll(i)[None, :, None, None] * torch.tensor([1.0, 0.0, 0.0])
        preds = torch.cat([target + shift + torch.tensor([0.0, 0.0, 0.1]), target[:, :1] + 7.2], 1)  # (2, 4, 12, 3)
        target_category = torch.tensor([[1, 2, 20], [21, 2, 1]])
        preds_category = torch.tensor([[1, 2, 21, 1], [20, 1, 1, 2]]).roll(i, 1)
        batches.append(
            (
                (
                    {"points": preds, "labels": preds_category},
                    {"points": target, "labels": target_category, "visibility": visibility},
                ),
                {},
            )
        )
    return MetricCase({}, batches, cast_float_args, grad_arg=None)


@register(
    Apollo3DMetrics,
    Apollo3DAveragePrecision,
    Apollo3DMaxFScore,
    Apollo3DXErrorClose,
    Apollo3DXErrorFar,
    Apollo3DZErrorClose,
    Apollo3DZErrorFar,
)
def _apollo3d_case(cls: type[Metric]) -> MetricCase:
    """Two frames per batch of three straight GT lanes 3.5 m apart (the last one half hidden), predictions shifted
    0.1-1.9 m sideways and 0.1 m up with probabilities spread over the sweep, one extra lane."""
    y = torch.linspace(4.0, 90.0, 12)
    batches = []
    for i in range(NUM_BATCHES):
        x = torch.tensor([-3.5, 0.0, 3.5])[:, None].expand(3, 12)
        target = torch.stack([x, y.expand(3, -1), torch.zeros(3, 12)], -1)[None].repeat(2, 1, 1, 1)
        visibility = torch.ones(2, 3, 12)
        visibility[:, 2, 6:] = 0.0
        shift = torch.tensor([0.1, 0.6, 1.9]).roll(i)[None, :, None, None] * torch.tensor([1.0, 0.0, 0.0])
        preds = torch.cat([target + shift + torch.tensor([0.0, 0.0, 0.1]), target[:, :1] + 7.2], 1)
        scores = torch.tensor([[0.93, 0.62, 0.27, 0.41], [0.18, 0.77, 0.52, 0.88]]).roll(i, 1)
        batches.append((({"points": preds, "scores": scores}, {"points": target, "visibility": visibility}), {}))
    return MetricCase({}, batches, cast_float_args, grad_arg=None)


@register(ONCE3DMetrics, ONCE3DF1Score, ONCE3DPrecision, ONCE3DRecall, ONCE3DDistanceError)
def _once3d_case(cls: type[Metric]) -> MetricCase:
    """Two frames per batch of three straight GT lanes 3.6 m apart in the camera frame (z 3-40 m), predictions
    shifted 0.05-0.5 m sideways with scores spread over the table, one extra lane; distances clear of 0.3 m."""
    z = torch.linspace(3.0, 40.0, 12)
    batches = []
    for i in range(NUM_BATCHES):
        x = torch.tensor([-3.6, 0.0, 3.6])[:, None].expand(3, 12)
        target = torch.stack([x, torch.full((3, 12), 1.6), z.expand(3, -1)], -1)[None].repeat(2, 1, 1, 1)
        shift = torch.tensor([0.05, 0.15, 0.5]).roll(i)[None, :, None, None] * torch.tensor([1.0, 0.0, 0.0])
        preds = torch.cat([target + shift, target[:, :1] + torch.tensor([7.2, 0.0, 0.0])], 1)
        scores = torch.tensor([[0.97, 0.62, 0.27, 0.41], [0.18, 0.96, 0.52, 0.88]]).roll(i, 1)
        batches.append((({"points": preds, "scores": scores}, {"points": target}), {}))
    return MetricCase({"score_threshold": 0.5}, batches, cast_float_args, grad_arg=None)
