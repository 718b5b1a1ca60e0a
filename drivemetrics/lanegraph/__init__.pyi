"""Type stub of the lazy exports of :mod:`drivemetrics.lanegraph` (kept equal to ``_EXPORTS`` by a test)."""

from drivemetrics.lanegraph.geometry import LaneArrays as LaneArrays
from drivemetrics.lanegraph.lanegraph import LaneGraphAPLS as LaneGraphAPLS
from drivemetrics.lanegraph.lanegraph import LaneGraphGeoPrecision as LaneGraphGeoPrecision
from drivemetrics.lanegraph.lanegraph import LaneGraphGeoRecall as LaneGraphGeoRecall
from drivemetrics.lanegraph.lanegraph import LaneGraphIoU as LaneGraphIoU
from drivemetrics.lanegraph.lanegraph import LaneGraphMetrics as LaneGraphMetrics
from drivemetrics.lanegraph.lanegraph import LaneGraphSDA20 as LaneGraphSDA20
from drivemetrics.lanegraph.lanegraph import LaneGraphSDA50 as LaneGraphSDA50
from drivemetrics.lanegraph.lanegraph import LaneGraphTopoPrecision as LaneGraphTopoPrecision
from drivemetrics.lanegraph.lanegraph import LaneGraphTopoRecall as LaneGraphTopoRecall
from drivemetrics.lanegraph.planning import LaneGraphPlanningMED as LaneGraphPlanningMED
from drivemetrics.lanegraph.planning import LaneGraphPlanningMetrics as LaneGraphPlanningMetrics
from drivemetrics.lanegraph.planning import LaneGraphPlanningMMD as LaneGraphPlanningMMD
from drivemetrics.lanegraph.planning import LaneGraphPlanningSuccessRate as LaneGraphPlanningSuccessRate

__all__ = [
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
]
