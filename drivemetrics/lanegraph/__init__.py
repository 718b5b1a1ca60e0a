"""UrbanLaneGraph metrics (Zürn et al., CVPR 2023) on directed lane graphs (``networkx.DiGraph``, ``pos`` in pixels).

One module per family: :mod:`~drivemetrics.lanegraph.lanegraph` (every per-sample metric,
:func:`evaluate_lanegraph_pair`,
:class:`LaneGraphMetrics` and its scalar classes; the definitions are in its module doc), kernels
:mod:`~drivemetrics.lanegraph.geo_topo`, :mod:`~drivemetrics.lanegraph.sda`, :mod:`~drivemetrics.lanegraph.iou`,
:mod:`~drivemetrics.lanegraph.apls` (the road-network APLS core with the UrbanLaneGraph parameter set), and
:mod:`~drivemetrics.lanegraph.planning` (kernel and :class:`LaneGraphPlanningMetrics`). Shared helpers:
:mod:`~drivemetrics.lanegraph.geometry`; files: ``io``, ``evaluate``, ``plot``, ``cli``. This package exports the
classes; the kernels are in :mod:`drivemetrics.functional` and in their modules.
"""

from drivemetrics._internal.lazy import lazy_exports

#: Metric and loss classes, exported by ``drivemetrics`` too (its stub: python -m drivemetrics._internal.stubs).
_METRICS = {
    "LaneGraphAPLS": "drivemetrics.lanegraph.lanegraph",
    "LaneGraphGeoPrecision": "drivemetrics.lanegraph.lanegraph",
    "LaneGraphGeoRecall": "drivemetrics.lanegraph.lanegraph",
    "LaneGraphIoU": "drivemetrics.lanegraph.lanegraph",
    "LaneGraphMetrics": "drivemetrics.lanegraph.lanegraph",
    "LaneGraphPlanningMED": "drivemetrics.lanegraph.planning",
    "LaneGraphPlanningMMD": "drivemetrics.lanegraph.planning",
    "LaneGraphPlanningMetrics": "drivemetrics.lanegraph.planning",
    "LaneGraphPlanningSuccessRate": "drivemetrics.lanegraph.planning",
    "LaneGraphSDA20": "drivemetrics.lanegraph.lanegraph",
    "LaneGraphSDA50": "drivemetrics.lanegraph.lanegraph",
    "LaneGraphTopoPrecision": "drivemetrics.lanegraph.lanegraph",
    "LaneGraphTopoRecall": "drivemetrics.lanegraph.lanegraph",
}
_EXPORTS = {
    **_METRICS,
    "LaneArrays": "drivemetrics.lanegraph.geometry",
    "lanegraph_example_inputs": "drivemetrics.lanegraph.examples",
    "planning_example_inputs": "drivemetrics.lanegraph.examples",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
