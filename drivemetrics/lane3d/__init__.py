"""3D lanes: OpenLane (v1) F-score, recall, precision, category accuracy and x / z errors; Apollo 3D Lane
Synthetic AP, max F and x / z errors; ONCE-3DLanes F1, precision, recall and distance error; as their evaluators score
them, readers of their files and the ``openlane3d-eval``, ``apollo3d-eval`` and ``once3d-eval`` commands.

This package exports the Metric classes; the kernels (``openlane3d_matches``, ``openlane3d_resample``, ...) are in
:mod:`drivemetrics.lane3d.openlane` and :mod:`drivemetrics.functional`, the readers in :mod:`drivemetrics.lane3d.io`,
the folder evaluation in :mod:`drivemetrics.lane3d.evaluate`.

Coordinates: the evaluator's ground frame, metres, x right, y forward, z up, origin on the ground below the camera.
"""

from drivemetrics._internal.lazy import lazy_exports

#: Metric and loss classes, exported by ``drivemetrics`` too (its stub: python -m drivemetrics._internal.stubs).
_METRICS = {
    "Apollo3DAveragePrecision": "drivemetrics.lane3d.apollo",
    "Apollo3DMaxFScore": "drivemetrics.lane3d.apollo",
    "Apollo3DMetrics": "drivemetrics.lane3d.apollo",
    "Apollo3DXErrorClose": "drivemetrics.lane3d.apollo",
    "Apollo3DXErrorFar": "drivemetrics.lane3d.apollo",
    "Apollo3DZErrorClose": "drivemetrics.lane3d.apollo",
    "Apollo3DZErrorFar": "drivemetrics.lane3d.apollo",
    "ONCE3DDistanceError": "drivemetrics.lane3d.once",
    "ONCE3DF1Score": "drivemetrics.lane3d.once",
    "ONCE3DMetrics": "drivemetrics.lane3d.once",
    "ONCE3DPrecision": "drivemetrics.lane3d.once",
    "ONCE3DRecall": "drivemetrics.lane3d.once",
    "OpenLane3DCategoryAccuracy": "drivemetrics.lane3d.openlane",
    "OpenLane3DFScore": "drivemetrics.lane3d.openlane",
    "OpenLane3DMetrics": "drivemetrics.lane3d.openlane",
    "OpenLane3DPrecision": "drivemetrics.lane3d.openlane",
    "OpenLane3DRecall": "drivemetrics.lane3d.openlane",
    "OpenLane3DXErrorClose": "drivemetrics.lane3d.openlane",
    "OpenLane3DXErrorFar": "drivemetrics.lane3d.openlane",
    "OpenLane3DZErrorClose": "drivemetrics.lane3d.openlane",
    "OpenLane3DZErrorFar": "drivemetrics.lane3d.openlane",
}
_EXPORTS = {
    **_METRICS,
    "apollo3d_example_inputs": "drivemetrics.lane3d.examples",
    "once3d_example_inputs": "drivemetrics.lane3d.examples",
    "openlane3d_example_inputs": "drivemetrics.lane3d.examples",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
