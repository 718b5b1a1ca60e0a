"""Type stub of :mod:`drivemetrics.lane` (its names are exported lazily at run time)."""

from drivemetrics.lane.control import LateralController, LinearMPC, PosedPath, PurePursuit, VehiclePath
from drivemetrics.lane.culane import (
    CULaneF1Score,
    CULaneMetrics,
    CULanePrecision,
    CULaneRecall,
)
from drivemetrics.lane.io import TuSimpleRecords
from drivemetrics.lane.psld import PSLD, PSLDLoss
from drivemetrics.lane.stats import Correlation
from drivemetrics.lane.tusimple import (
    TuSimpleAccuracy,
    TuSimpleF1Score,
    TuSimpleFalseNegatives,
    TuSimpleFalsePositives,
    TuSimpleMetrics,
)

__all__ = [
    "PSLD",
    "CULaneF1Score",
    "CULaneMetrics",
    "CULanePrecision",
    "CULaneRecall",
    "Correlation",
    "LateralController",
    "LinearMPC",
    "PSLDLoss",
    "PosedPath",
    "PurePursuit",
    "TuSimpleAccuracy",
    "TuSimpleF1Score",
    "TuSimpleFalseNegatives",
    "TuSimpleFalsePositives",
    "TuSimpleMetrics",
    "TuSimpleRecords",
    "VehiclePath",
]
