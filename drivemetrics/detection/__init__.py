"""Detection: the KITTI object benchmark (label / result / calibration files, exact rotated-box IoU, the official
2D / AOS / BEV / 3D average precision, R11 and R40).

Metric, loss and result classes are exported here (lazily); the functional kernels are in
:mod:`drivemetrics.functional`; file reading in ``drivemetrics.detection.io``, the AP kernel (the official
protocol) in ``drivemetrics.detection.kitti_ap``, the evaluation of a label and a result folder in
``drivemetrics.detection.evaluate``.
"""

from drivemetrics._internal.lazy import lazy_exports

#: Metric and loss classes, exported by ``drivemetrics`` too (its stub: python -m drivemetrics._internal.stubs).
_METRICS = {
    "KittiObjectAveragePrecision": "drivemetrics.detection.kitti_object",
    "KittiObjectMetrics": "drivemetrics.detection.kitti_object",
}
_EXPORTS = {
    **_METRICS,
    "KittiObjects": "drivemetrics.detection.io",
    "kitti_object_example_inputs": "drivemetrics.detection.examples",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
