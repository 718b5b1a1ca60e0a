"""drivemetrics: driving-oriented metrics and losses for road, lane and lane-graph perception.

Domains live in sub-packages: ``geometry`` (calibration, homographies, BEV grids and warps), ``vehicle``
(single-track / bicycle models), ``road`` (KITTI-ROAD pixel and corridor metrics), ``lane`` (TuSimple, PSLD,
E2E-LD), ``attack`` (DRP patches), ``roadnet`` (road-network metrics), ``lanegraph`` (UrbanLaneGraph),
``detection`` (KITTI objects) and
``synthetic`` (seeded scene generators used by tests and the demo).
"""

__version__ = "0.1.0"
