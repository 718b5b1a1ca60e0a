"""Type stub of :mod:`drivemetrics.lane` (its names are exported lazily at run time)."""

from drivemetrics.lane.control import LateralController, LinearMPC, PosedPath, PurePursuit, VehiclePath
from drivemetrics.lane.culane import (
    CULaneCounts,
    CULaneF1Score,
    CULaneMatches,
    CULaneMetrics,
    CULanePrecision,
    CULaneRecall,
)
from drivemetrics.lane.e2e import E2EResult
from drivemetrics.lane.io import TuSimpleRecords
from drivemetrics.lane.psld import PSLD, PSLDLoss
from drivemetrics.lane.stats import Correlation
from drivemetrics.lane.tusimple import (
    TuSimpleAccuracy,
    TuSimpleF1Score,
    TuSimpleFalseNegatives,
    TuSimpleFalsePositives,
    TuSimpleImageScores,
    TuSimpleMetrics,
)

__all__ = [
    "PSLD",
    "CULaneCounts",
    "CULaneF1Score",
    "CULaneMatches",
    "CULaneMetrics",
    "CULanePrecision",
    "CULaneRecall",
    "Correlation",
    "E2EResult",
    "LateralController",
    "LinearMPC",
    "PSLDLoss",
    "PosedPath",
    "PurePursuit",
    "TuSimpleAccuracy",
    "TuSimpleF1Score",
    "TuSimpleFalseNegatives",
    "TuSimpleFalsePositives",
    "TuSimpleImageScores",
    "TuSimpleMetrics",
    "TuSimpleRecords",
    "VehiclePath",
]
