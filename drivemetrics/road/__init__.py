"""Road: KITTI-ROAD pixel metrics (perspective and BEV), the soft F-measure loss and the driving corridor.

Metric, loss and result classes are exported here (lazily); the functional kernels are in
:mod:`drivemetrics.functional`; file reading in ``drivemetrics.road.io``, dataset evaluation in
``drivemetrics.road.evaluate``.
"""

from drivemetrics._internal.lazy import lazy_exports

#: Metric and loss classes, exported by ``drivemetrics`` too (its stub: python -m drivemetrics._internal.stubs).
_METRICS = {
    "DrivingCorridorHitRate": "drivemetrics.road.corridor",
    "DrivingCorridorLateralPrecision": "drivemetrics.road.corridor",
    "DrivingCorridorLongitudinalF1Score": "drivemetrics.road.corridor",
    "DrivingCorridorMetrics": "drivemetrics.road.corridor",
    "RoadPixelAveragePrecision": "drivemetrics.road.pixel",
    "RoadPixelMaxFScore": "drivemetrics.road.pixel",
    "RoadPixelMetrics": "drivemetrics.road.pixel",
    "SoftFMeasureLoss": "drivemetrics.road.soft_f_measure",
}
_EXPORTS = {
    **_METRICS,
    "CorridorConfig": "drivemetrics.road.corridor_config",
    "CorridorFit": "drivemetrics.road.corridor",
    "KittiRoadLayout": "drivemetrics.road.io",
    "PixelCounts": "drivemetrics.road.pixel",
    "corridor_example_inputs": "drivemetrics.road.examples",
    "road_pixel_example_inputs": "drivemetrics.road.examples",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
