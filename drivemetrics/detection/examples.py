"""Small KITTI object inputs for the examples: one call gives the KITTI family's ``update`` arguments.

The family class's example builds its inputs in full, so a reader sees the format; the scalar class's example calls
the helper here (``KittiObjectAveragePrecision()(**drivemetrics.detection.kitti_object_example_inputs())``) and
shows only its value.
"""

from __future__ import annotations

from drivemetrics.detection.io import KittiObjects, parse_kitti_objects

__all__ = ["kitti_object_example_inputs"]

#: One car 15 m ahead, in KITTI's label format (pixels, metres, radians).
_CAR = "Car 0.00 0 -1.57 100.00 150.00 300.00 250.00 1.50 1.60 4.00 1.00 1.70 15.00 -1.57"


def kitti_object_example_inputs() -> dict[str, list[KittiObjects]]:
    """40 frames with one car each, each detected exactly with score 0.9: ``{"preds": [...], "target": [...]}``.

    The inputs of the :class:`~drivemetrics.detection.KittiObjectMetrics` example (one :class:`KittiObjects` per
    frame).

    Examples:
        >>> from drivemetrics.detection import kitti_object_example_inputs
        >>> inputs = kitti_object_example_inputs()
        >>> len(inputs["preds"]), inputs["preds"][0].type, inputs["preds"][0].score
        (40, ['Car'], array([0.9]))
    """
    return {"preds": [parse_kitti_objects(_CAR + " 0.9")] * 40, "target": [parse_kitti_objects(_CAR)] * 40}
