"""Lane metrics and losses: TuSimple, CULane, LLAMAS and CurveLanes scores, the expected road center (attack
objective), and the closed-loop driving metrics PSLD and E2E-LD with their geometry, controllers and statistics.

Image frame: x right, y down, pixels; lanes sampled at fixed rows are ``(B, L, N)`` tensors with NaN for a missing
point. Road frame: X right, Z forward, metres.

Metric, loss and result classes are exported here (lazily); the functional kernels are in
:mod:`drivemetrics.functional`; file reading in ``drivemetrics.lane.io``, dataset evaluation in
``drivemetrics.lane.evaluate``.
"""

from drivemetrics._internal.lazy import lazy_exports

#: Metric and loss classes, exported by ``drivemetrics`` too (its stub: python -m drivemetrics._internal.stubs).
_METRICS = {
    "BEVLineIoULoss": "drivemetrics.lane.line_iou_loss",
    "ControlWeightedLoss": "drivemetrics.lane.control_weighted_loss",
    "CULaneF1Score": "drivemetrics.lane.culane",
    "CULaneMetrics": "drivemetrics.lane.culane",
    "CULanePrecision": "drivemetrics.lane.culane",
    "CULaneRecall": "drivemetrics.lane.culane",
    "CurveLanesF1Score": "drivemetrics.lane.curvelanes",
    "CurveLanesMetrics": "drivemetrics.lane.curvelanes",
    "CurveLanesPrecision": "drivemetrics.lane.curvelanes",
    "CurveLanesRecall": "drivemetrics.lane.curvelanes",
    "LlamasF1Score": "drivemetrics.lane.llamas",
    "LlamasF1Score75": "drivemetrics.lane.llamas",
    "LlamasMeanF1Score": "drivemetrics.lane.llamas",
    "LlamasMetrics": "drivemetrics.lane.llamas",
    "LlamasPrecision": "drivemetrics.lane.llamas",
    "LlamasRecall": "drivemetrics.lane.llamas",
    "ExpectedPSLDLoss": "drivemetrics.lane.expected_psld_loss",
    "LookaheadLaneLoss": "drivemetrics.lane.lookahead_loss",
    "PSLD": "drivemetrics.lane.psld",
    "PSLDLoss": "drivemetrics.lane.psld",
    "TuSimpleAccuracy": "drivemetrics.lane.tusimple",
    "TuSimpleF1Score": "drivemetrics.lane.tusimple",
    "TuSimpleFalseNegatives": "drivemetrics.lane.tusimple",
    "TuSimpleFalsePositives": "drivemetrics.lane.tusimple",
    "TuSimpleMetrics": "drivemetrics.lane.tusimple",
}
_EXPORTS = {
    **_METRICS,
    "Correlation": "drivemetrics.lane.stats",
    "LateralController": "drivemetrics.lane.control",
    "LinearMPC": "drivemetrics.lane.control",
    "PosedPath": "drivemetrics.lane.control",
    "PurePursuit": "drivemetrics.lane.control",
    "TuSimpleRecords": "drivemetrics.lane.io",
    "VehiclePath": "drivemetrics.lane.control",
    "culane_example_inputs": "drivemetrics.lane.examples",
    "curvelanes_example_inputs": "drivemetrics.lane.examples",
    "llamas_example_inputs": "drivemetrics.lane.examples",
    "tusimple_example_inputs": "drivemetrics.lane.examples",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
