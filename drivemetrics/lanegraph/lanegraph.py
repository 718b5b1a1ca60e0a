"""UrbanLaneGraph metrics (Zürn et al., CVPR 2023) on directed lane graphs: TOPO / GEO, APLS, SDA, graph IoU, planning.

Lane graphs are :class:`networkx.DiGraph` objects whose nodes carry ``pos = (x, y)`` in pixels (any node ids). Every
function takes ``(preds, target)`` and a ``compat`` switch:

- ``compat="default"``: the paper's definitions with the released evaluator's bugs fixed (listed below).
- ``compat="reference"``: reproduces the numbers of the released evaluator (``jzuern/lanegnn``
  ``urbanlanegraph_evaluator``, setup.py 0.11), bugs included, for comparison with the leaderboard.

Metrics (parameters are the evaluator's):

- GEO / TOPO (:func:`geo_topo`): both graphs are resampled every ~2 px along their edges (``int(L) // 2`` pieces
  per edge, undirected). GEO: greedy one-to-one matching of the resampled points closer than 8 px, in order of
  increasing distance; precision = matched / predicted points, recall = matched / GT points. TOPO: from every 10th
  matched pair (in that order), the nodes within 400 px of graph distance around the matched points are matched
  the same way; TOPO precision / recall = GEO precision / recall x the mean local precision / recall.
- APLS (:func:`lanegraph_apls`): CosmiQ's APLS with 0.15 m/px, every node a control point, 5 m snapping,
  20 m minimum path length, harmonic mean of the two directions.
- SDA@R (:func:`sda`): split nodes (out-degree >= 2) matched by the Hungarian algorithm on Euclidean distance;
  a pair closer than R px is a true positive; tp / (tp + fp + fn); NaN when the GT has no split, 0 when the
  prediction has none.
- Graph IoU (:func:`graph_iou`): both graphs drawn with 10 px wide lines, IoU of the two masks.
- Planning (:func:`planning`): start / goal pairs from random walks on the GT, shortest paths on both graphs,
  paths resampled to 100 points; MMD (mean over GT points of the distance to the closest predicted point), MED
  (distance between the end points) and SR (success rate). A failed plan counts MMD = MED = 5000 px.

Fixed in the default mode (each reproduced by ``compat="reference"``):

- GEO / TOPO: no clipping of the resampled points to ``[0, 4096)`` px (the evaluator drops everything outside,
  so full-LGP tiles lose their far side and graphs in negative coordinates vanish); the 400 px neighbourhood is the
  exact graph-distance ball plus one step (the evaluator's depth-first walk gives the same set on trees but depends
  on the visiting order on graphs with cycles); TOPO is 0, not NaN, when nothing matches. The resampling is the
  evaluator's (positions truncated to int, same points), so GEO agrees with the evaluator's true GEO precision
  and recall wherever it does not clip, except where two candidates of one point are exactly equidistant: the
  default takes the newest first, the evaluator its R-tree's order (one match apart on 1 of the 200 austin and
  miami successor samples).
- Graph IoU: the canvas covers both graphs at their float positions (the evaluator truncates coordinates to int
  and draws on a fixed ``area_size`` canvas, clipping everything outside it); a pixel is inside a lane when its
  center is within ``lane_width / 2`` of an edge (the reference mode draws with OpenCV's ``cv2.line`` as the
  evaluator, see :func:`graph_iou`).
- APLS: deterministic and computed for every graph size (the evaluator fails on Python >= 3.11 for GTs of
  2,000 nodes or more and silently reports 0); a control point that lands on a node already claimed by another
  keeps it (the evaluator relabels the node, so the first point looks missing); a control point missing from the
  other graph gets the 20 m minimum-length rule like every other pair; edges longer than 7.5 m receive control
  points every 10 m (the evaluator's ``is_curved_eps = 10**3`` silently disables them).
- Planning: shortest paths are length-weighted (the evaluator counts hops); SR counts only attempts whose GT path
  exists; a sample without any valid start / goal pair is NaN (the evaluator crashes).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import networkx as nx
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.metric import ScalarMetric, add_config_state
from drivemetrics._internal.validation import check_graph
from drivemetrics.lanegraph._metric import PerSampleMean
from drivemetrics.lanegraph.apls import lanegraph_apls
from drivemetrics.lanegraph.geo_topo import geo_topo
from drivemetrics.lanegraph.geometry import LANE_METRICS, PLANNING_METRICS, as_scalars, lane_arrays
from drivemetrics.lanegraph.iou import graph_iou
from drivemetrics.lanegraph.sda import sda

__all__ = [
    "LaneGraphAPLS",
    "LaneGraphGeoPrecision",
    "LaneGraphGeoRecall",
    "LaneGraphIoU",
    "LaneGraphMetrics",
    "LaneGraphSDA20",
    "LaneGraphSDA50",
    "LaneGraphTask",
    "LaneGraphTopoPrecision",
    "LaneGraphTopoRecall",
    "evaluate_lanegraph_pair",
    "lanegraph_pair_values",
    "missing_sample_values",
]

# ---------------------------------------------------------------------------------------------------------------
# one sample

#: The UrbanLaneGraph benchmark task of a sample: 256 x 256 successor crops or 5000 x 5000 full tiles.
LaneGraphTask = Literal["successor", "full"]


def evaluate_lanegraph_pair(
    preds: nx.DiGraph,
    target: nx.DiGraph,
    *,
    task: LaneGraphTask = "successor",
    compat: Compat = "default",
    apls_max_sources: int | None = 500,
    seed: int = 0,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Every lane-graph metric of one sample: ``{m: value for m in LANE_METRICS}`` (0-d float64, NaN where
    undefined); :func:`lanegraph_pair_values` returns the same values as floats.

    Args:
        preds, target (networkx.DiGraph): Predicted and ground-truth lane graphs, node ``pos = (x, y)`` in pixels.
        task (str): ``"successor"`` (256 x 256 crops) or ``"full"`` (5000 x 5000 tiles).
        compat (str): ``"default"`` or ``"reference"``.
        apls_max_sources (int or None): Control points per direction that start APLS paths (default mode).
        seed (int): Seed of the APLS source draw.
        validate_args: check that both are networkx graphs whose nodes carry a finite
            ``pos`` within ``max_abs_coordinate`` (the graph readers' limit); ``False`` skips it.

    Examples:
        >>> import networkx as nx, numpy as np
        >>> from drivemetrics.functional import evaluate_lanegraph_pair
        >>> g = nx.DiGraph([(0, 1), (1, 2), (1, 3)])
        >>> xy = {0: (10.0, 10.0), 1: (60.0, 10.0), 2: (120.0, 10.0), 3: (120.0, 60.0)}
        >>> nx.set_node_attributes(g, {n: np.array(p) for n, p in xy.items()}, "pos")
        >>> evaluate_lanegraph_pair(g, g)["topo_recall"]
        tensor(1., dtype=torch.float64)
    """
    if validate_args:
        check_graph(preds, "preds")
        check_graph(target, "target")
    return as_scalars(lanegraph_pair_values(preds, target, task, compat, apls_max_sources, seed))


def lanegraph_pair_values(
    preds: nx.DiGraph,
    target: nx.DiGraph,
    task: LaneGraphTask = "successor",
    compat: Compat = "default",
    apls_max_sources: int | None = 500,
    seed: int = 0,
) -> dict[str, float]:
    """Every lane-graph metric of one sample as floats (see :func:`evaluate_lanegraph_pair`).

    ``task``: ``"successor"`` (256 x 256 crops) or ``"full"`` (5000 x 5000 tiles; only the reference mode's IoU
    canvas and SDA depend on it: the evaluator reports no SDA for full tiles, so it is NaN there). With
    ``compat="reference"`` and the successor task, ``geo_precision`` is what the evaluator reports under
    "GEO Precision": its TOPO precision.

    Examples:
        >>> import networkx as nx, numpy as np
        >>> from drivemetrics.lanegraph.lanegraph import lanegraph_pair_values
        >>> g = nx.DiGraph([(0, 1), (1, 2), (1, 3)])
        >>> xy = {0: (10.0, 10.0), 1: (60.0, 10.0), 2: (120.0, 10.0), 3: (120.0, 60.0)}
        >>> nx.set_node_attributes(g, {n: np.array(p) for n, p in xy.items()}, "pos")
        >>> lanegraph_pair_values(g, g)["topo_recall"]
        1.0
    """
    check_compat(compat)
    if task not in ("successor", "full"):
        raise ValueError(f"`task` must be 'successor' or 'full' here, got {task!r} (planning: use planning())")
    pred, gt = lane_arrays(preds, "preds"), lane_arrays(target, "target")
    area = (256, 256) if task == "successor" else (5000, 5000)
    out = {
        "sda20": sda(pred, gt, threshold=20.0, validate_args=False),
        "sda50": sda(pred, gt, threshold=50.0, validate_args=False),
    }
    out["iou"] = graph_iou(pred, gt, area_size=area, lane_width=10.0, compat=compat, validate_args=False)
    out["apls"] = lanegraph_apls(pred, gt, compat=compat, max_sources=apls_max_sources, seed=seed, validate_args=False)
    out.update(geo_topo(pred, gt, compat=compat, validate_args=False))
    if compat == "reference" and task == "successor":
        out["geo_precision"] = out["topo_precision"]
    if compat == "reference" and task == "full":  # the evaluator does not report SDA for full tiles
        out["sda20"] = out["sda50"] = math.nan
    return {k: float(out[k]) for k in LANE_METRICS}


def missing_sample_values(task: str) -> dict[str, float]:
    """What a sample without prediction scores in the reference mode: 0.0 for every metric, MMD / MED included
    (the evaluator's documentation says 5000; the default mode scores the sample as an empty prediction)."""
    keys = PLANNING_METRICS if task == "planning" else LANE_METRICS
    return dict.fromkeys(keys, 0.0)


class LaneGraphMetrics(PerSampleMean):
    """TOPO / GEO precision and recall, APLS, SDA@20, SDA@50 and graph IoU averaged over lane-graph samples.

    Args:
        task: ``"successor"`` (256 px crops) or ``"full"`` (tiles).
        compat: ``"default"`` (bugs fixed) or ``"reference"`` (the released evaluator's numbers).
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Examples:
        >>> import networkx as nx, numpy as np
        >>> from drivemetrics.lanegraph import LaneGraphMetrics
        >>> pos = lambda *xy: {n: np.array(p, dtype=float) for n, p in enumerate(xy)}  # node -> (x, y), pixels
        >>> gt, pred = nx.DiGraph([(0, 1), (1, 2), (1, 3)]), nx.DiGraph([(0, 1), (1, 2), (1, 3)])  # two forks
        >>> nx.set_node_attributes(gt, pos((0, 50), (200, 50), (400, 50), (400, 250)), "pos")
        >>> nx.set_node_attributes(pred, pos((0, 54), (210, 54), (400, 54), (300, 250)), "pos")
        >>> metric = LaneGraphMetrics()
        >>> metric.update(pred, gt)
        >>> {k: round(float(v), 4) for k, v in metric.compute().items()}
        {'topo_precision': 0.5017, 'topo_recall': 0.4174, 'geo_precision': 0.7078, 'geo_recall': 0.6374,
         'apls': 0.49, 'sda20': 1.0, 'sda50': 1.0, 'iou': 0.2848}
    """

    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0
    _keys = LANE_METRICS

    def __init__(
        self, task: LaneGraphTask = "successor", compat: Compat = "default", validate_args: bool = True, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.validate_args = bool(validate_args)
        if task not in ("successor", "full"):
            raise ValueError(f"`task` must be 'successor' or 'full', got {task!r}")
        self.task = task
        check_compat(compat)
        self.compat = compat
        # the options change the per-sample values summed in update: differently configured metrics must not share
        # a MetricCollection compute group (which they would after a first batch scoring the same)
        add_config_state(self, ("LaneGraphMetrics", task, self.compat))

    def _sample(self, pred: nx.DiGraph, gt: nx.DiGraph) -> dict[str, float]:
        return lanegraph_pair_values(pred, gt, self.task, self.compat)


class LaneGraphTopoPrecision(ScalarMetric, LaneGraphMetrics):
    """TOPO precision (the ``'topo_precision'`` value of :class:`LaneGraphMetrics`; same arguments and states).

    Examples:
        >>> from drivemetrics.lanegraph import LaneGraphTopoPrecision, lanegraph_example_inputs
        >>> LaneGraphTopoPrecision()(**lanegraph_example_inputs())
        tensor(0.5017, dtype=torch.float64)
    """

    key = "topo_precision"


class LaneGraphTopoRecall(ScalarMetric, LaneGraphMetrics):
    """TOPO recall (the ``'topo_recall'`` value of :class:`LaneGraphMetrics`; same arguments and states).

    Examples:
        >>> from drivemetrics.lanegraph import LaneGraphTopoRecall, lanegraph_example_inputs
        >>> LaneGraphTopoRecall()(**lanegraph_example_inputs())
        tensor(0.4174, dtype=torch.float64)
    """

    key = "topo_recall"


class LaneGraphGeoPrecision(ScalarMetric, LaneGraphMetrics):
    """GEO precision (the ``'geo_precision'`` value of :class:`LaneGraphMetrics`; same arguments and states).

    Examples:
        >>> from drivemetrics.lanegraph import LaneGraphGeoPrecision, lanegraph_example_inputs
        >>> LaneGraphGeoPrecision()(**lanegraph_example_inputs())
        tensor(0.7078, dtype=torch.float64)
    """

    key = "geo_precision"


class LaneGraphGeoRecall(ScalarMetric, LaneGraphMetrics):
    """GEO recall (the ``'geo_recall'`` value of :class:`LaneGraphMetrics`; same arguments and states).

    Examples:
        >>> from drivemetrics.lanegraph import LaneGraphGeoRecall, lanegraph_example_inputs
        >>> LaneGraphGeoRecall()(**lanegraph_example_inputs())
        tensor(0.6374, dtype=torch.float64)
    """

    key = "geo_recall"


class LaneGraphAPLS(ScalarMetric, LaneGraphMetrics):
    """APLS (the ``'apls'`` value of :class:`LaneGraphMetrics`; same arguments and states).

    Examples:
        >>> from drivemetrics.lanegraph import LaneGraphAPLS, lanegraph_example_inputs
        >>> LaneGraphAPLS()(**lanegraph_example_inputs())
        tensor(0.4900, dtype=torch.float64)
    """

    key = "apls"


class LaneGraphSDA20(ScalarMetric, LaneGraphMetrics):
    """SDA@20 (the ``'sda20'`` value of :class:`LaneGraphMetrics`; same arguments and states).

    Examples:
        >>> from drivemetrics.lanegraph import LaneGraphSDA20, lanegraph_example_inputs
        >>> LaneGraphSDA20()(**lanegraph_example_inputs())
        tensor(1., dtype=torch.float64)
    """

    key = "sda20"


class LaneGraphSDA50(ScalarMetric, LaneGraphMetrics):
    """SDA@50 (the ``'sda50'`` value of :class:`LaneGraphMetrics`; same arguments and states).

    Examples:
        >>> from drivemetrics.lanegraph import LaneGraphSDA50, lanegraph_example_inputs
        >>> LaneGraphSDA50()(**lanegraph_example_inputs())
        tensor(1., dtype=torch.float64)
    """

    key = "sda50"


class LaneGraphIoU(ScalarMetric, LaneGraphMetrics):
    """Graph IoU (the ``'iou'`` value of :class:`LaneGraphMetrics`; same arguments and states).

    Examples:
        >>> from drivemetrics.lanegraph import LaneGraphIoU, lanegraph_example_inputs
        >>> LaneGraphIoU()(**lanegraph_example_inputs())
        tensor(0.2848, dtype=torch.float64)
    """

    key = "iou"
