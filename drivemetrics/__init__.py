"""drivemetrics: driving-oriented metrics and losses for road, lane and lane-graph perception.

Domains live in sub-packages, reachable as attributes after ``import drivemetrics`` (imported on first use):
``geometry`` (calibration, homographies, BEV grids and warps), ``vehicle`` (single-track / bicycle models), ``road``
(KITTI-ROAD pixel metrics, soft F-measure loss, driving corridor), ``lane`` (TuSimple, CULane, PSLD, E2E-LD),
``lane3d`` (OpenLane 3D lanes), ``attack`` (DRP patches), ``roadnet`` (road-network metrics), ``lanegraph``
(UrbanLaneGraph), ``detection`` (KITTI objects), ``lanetopology`` (OpenLane-V2), ``polyline`` (polyline geometry
shared by the map metrics), ``vectormap`` (vectorised HD-map AP) and ``synthetic`` (seeded scene generators used by
tests and the demo). Every metric kernel and loss function is in :mod:`drivemetrics.functional`; every Metric and
loss class is importable from its domain and from here.

``import drivemetrics`` itself imports nothing heavy (no torch): the ``drivemetrics`` command starts fast.
"""

from drivemetrics._internal.lazy import lazy_exports

__version__ = "0.1.0"

#: Sub-packages, imported on first attribute access.
_SUBPACKAGES = {
    "attack": "drivemetrics.attack",
    "configs": "drivemetrics.configs",
    "detection": "drivemetrics.detection",
    "functional": "drivemetrics.functional",
    "geometry": "drivemetrics.geometry",
    "lane": "drivemetrics.lane",
    "lane3d": "drivemetrics.lane3d",
    "lanegraph": "drivemetrics.lanegraph",
    "lanetopology": "drivemetrics.lanetopology",
    "polyline": "drivemetrics.polyline",
    "road": "drivemetrics.road",
    "roadnet": "drivemetrics.roadnet",
    "synthetic": "drivemetrics.synthetic",
    "vectormap": "drivemetrics.vectormap",
    "vehicle": "drivemetrics.vehicle",
}

#: The Metric and loss classes of every domain (each domain's ``_METRICS``) are exported here too, found on first
#: use: adding a class to a domain's ``_METRICS`` exports it from ``drivemetrics`` (the stubs follow with
#: ``python -m drivemetrics._internal.stubs``); a new domain is one line in ``_SUBPACKAGES``.
__getattr__, __dir__ = lazy_exports(__name__, submodules=_SUBPACKAGES, reexport_metrics=True)
