"""Type stub of the lazy exports of :mod:`drivemetrics.lane3d` (kept equal to ``_EXPORTS``)."""

from drivemetrics.lane3d.openlane import OpenLane3DCategoryAccuracy as OpenLane3DCategoryAccuracy
from drivemetrics.lane3d.openlane import OpenLane3DFScore as OpenLane3DFScore
from drivemetrics.lane3d.openlane import OpenLane3DMetrics as OpenLane3DMetrics
from drivemetrics.lane3d.openlane import OpenLane3DPrecision as OpenLane3DPrecision
from drivemetrics.lane3d.openlane import OpenLane3DRecall as OpenLane3DRecall
from drivemetrics.lane3d.openlane import OpenLane3DXErrorClose as OpenLane3DXErrorClose
from drivemetrics.lane3d.openlane import OpenLane3DXErrorFar as OpenLane3DXErrorFar
from drivemetrics.lane3d.openlane import OpenLane3DZErrorClose as OpenLane3DZErrorClose
from drivemetrics.lane3d.openlane import OpenLane3DZErrorFar as OpenLane3DZErrorFar

__all__ = [
    "OpenLane3DCategoryAccuracy",
    "OpenLane3DFScore",
    "OpenLane3DMetrics",
    "OpenLane3DPrecision",
    "OpenLane3DRecall",
    "OpenLane3DXErrorClose",
    "OpenLane3DXErrorFar",
    "OpenLane3DZErrorClose",
    "OpenLane3DZErrorFar",
]
