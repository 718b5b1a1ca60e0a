"""UrbanLaneGraph lane-graph metrics."""

from drivemetrics._lazy import lazy_exports

_EXPORTS = {
    "evaluate_lanegraph_pair": "drivemetrics.lanegraph.lanegraph",
    "evaluate_submission": "drivemetrics.lanegraph.evaluate",
    "geo_topo": "drivemetrics.lanegraph.lanegraph",
    "graph_iou": "drivemetrics.lanegraph.lanegraph",
    "lane_arrays": "drivemetrics.lanegraph.lanegraph",
    "lanegraph_apls": "drivemetrics.lanegraph.lanegraph",
    "LaneGraphAPLS": "drivemetrics.lanegraph.lanegraph_metric",
    "LaneGraphGeoPrecision": "drivemetrics.lanegraph.lanegraph_metric",
    "LaneGraphGeoRecall": "drivemetrics.lanegraph.lanegraph_metric",
    "LaneGraphIoU": "drivemetrics.lanegraph.lanegraph_metric",
    "LaneGraphMED": "drivemetrics.lanegraph.lanegraph_metric",
    "LaneGraphMetrics": "drivemetrics.lanegraph.lanegraph_metric",
    "LaneGraphMMD": "drivemetrics.lanegraph.lanegraph_metric",
    "LaneGraphPlanning": "drivemetrics.lanegraph.lanegraph_metric",
    "LaneGraphSDA20": "drivemetrics.lanegraph.lanegraph_metric",
    "LaneGraphSDA50": "drivemetrics.lanegraph.lanegraph_metric",
    "LaneGraphSuccessRate": "drivemetrics.lanegraph.lanegraph_metric",
    "LaneGraphTopoPrecision": "drivemetrics.lanegraph.lanegraph_metric",
    "LaneGraphTopoRecall": "drivemetrics.lanegraph.lanegraph_metric",
    "load_lanegraph_pickle": "drivemetrics.lanegraph.evaluate",
    "planning": "drivemetrics.lanegraph.lanegraph",
    "sda": "drivemetrics.lanegraph.lanegraph",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
