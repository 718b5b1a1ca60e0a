"""Type stub of the lazy exports of :mod:`drivemetrics.lanegraph` (kept equal to ``_EXPORTS`` by a test)."""

from drivemetrics.lanegraph.apls import lanegraph_apls as lanegraph_apls
from drivemetrics.lanegraph.evaluate import evaluate_submission as evaluate_submission
from drivemetrics.lanegraph.geo_topo import geo_topo as geo_topo
from drivemetrics.lanegraph.geometry import LANE_METRICS as LANE_METRICS
from drivemetrics.lanegraph.geometry import PLANNING_METRICS as PLANNING_METRICS
from drivemetrics.lanegraph.geometry import LaneArrays as LaneArrays
from drivemetrics.lanegraph.geometry import lane_arrays as lane_arrays
from drivemetrics.lanegraph.io import load_lanegraph_pickle as load_lanegraph_pickle
from drivemetrics.lanegraph.iou import graph_iou as graph_iou
from drivemetrics.lanegraph.lanegraph import LaneGraphAPLS as LaneGraphAPLS
from drivemetrics.lanegraph.lanegraph import LaneGraphGeoPrecision as LaneGraphGeoPrecision
from drivemetrics.lanegraph.lanegraph import LaneGraphGeoRecall as LaneGraphGeoRecall
from drivemetrics.lanegraph.lanegraph import LaneGraphIoU as LaneGraphIoU
from drivemetrics.lanegraph.lanegraph import LaneGraphMetrics as LaneGraphMetrics
from drivemetrics.lanegraph.lanegraph import LaneGraphSDA20 as LaneGraphSDA20
from drivemetrics.lanegraph.lanegraph import LaneGraphSDA50 as LaneGraphSDA50
from drivemetrics.lanegraph.lanegraph import LaneGraphTopoPrecision as LaneGraphTopoPrecision
from drivemetrics.lanegraph.lanegraph import LaneGraphTopoRecall as LaneGraphTopoRecall
from drivemetrics.lanegraph.lanegraph import evaluate_lanegraph_pair as evaluate_lanegraph_pair
from drivemetrics.lanegraph.planning import LaneGraphPlanningMED as LaneGraphPlanningMED
from drivemetrics.lanegraph.planning import LaneGraphPlanningMetrics as LaneGraphPlanningMetrics
from drivemetrics.lanegraph.planning import LaneGraphPlanningMMD as LaneGraphPlanningMMD
from drivemetrics.lanegraph.planning import LaneGraphPlanningSuccessRate as LaneGraphPlanningSuccessRate
from drivemetrics.lanegraph.planning import planning as planning
from drivemetrics.lanegraph.sda import sda as sda

__all__ = [
    "LANE_METRICS",
    "PLANNING_METRICS",
    "LaneArrays",
    "LaneGraphAPLS",
    "LaneGraphGeoPrecision",
    "LaneGraphGeoRecall",
    "LaneGraphIoU",
    "LaneGraphMetrics",
    "LaneGraphPlanningMED",
    "LaneGraphPlanningMMD",
    "LaneGraphPlanningMetrics",
    "LaneGraphPlanningSuccessRate",
    "LaneGraphSDA20",
    "LaneGraphSDA50",
    "LaneGraphTopoPrecision",
    "LaneGraphTopoRecall",
    "evaluate_lanegraph_pair",
    "evaluate_submission",
    "geo_topo",
    "graph_iou",
    "lane_arrays",
    "lanegraph_apls",
    "load_lanegraph_pickle",
    "planning",
    "sda",
]
