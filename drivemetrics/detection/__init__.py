"""Detection: the KITTI object benchmark (label / result / calibration files, exact rotated-box IoU, the official
2D / AOS / BEV / 3D average precision, R11 and R40)."""

from drivemetrics._lazy import lazy_exports

_EXPORTS = {
    "bev_box_corners": "drivemetrics.detection.box_iou",
    "bev_intersection_area": "drivemetrics.detection.box_iou",
    "bev_overlap": "drivemetrics.detection.box_iou",
    "box2d_overlap": "drivemetrics.detection.box_iou",
    "box3d_corners": "drivemetrics.detection.kitti_io",
    "box3d_overlap": "drivemetrics.detection.box_iou",
    "camera_to_image": "drivemetrics.detection.kitti_io",
    "convex_polygon_intersection_area": "drivemetrics.detection.box_iou",
    "DIFFICULTIES": "drivemetrics.detection.kitti_eval",
    "evaluate_kitti_objects": "drivemetrics.detection.kitti_eval",
    "format_kitti_objects": "drivemetrics.detection.kitti_io",
    "KITTI_CLASSES": "drivemetrics.detection.kitti_eval",
    "KITTI_OBJECT_CALIB_KEYS": "drivemetrics.detection.kitti_io",
    "kitti_recall_thresholds": "drivemetrics.detection.kitti_eval",
    "KITTI_TYPES": "drivemetrics.detection.metrics",
    "KittiObjectAP": "drivemetrics.detection.metrics",
    "KittiObjectMetrics": "drivemetrics.detection.metrics",
    "KittiObjects": "drivemetrics.detection.kitti_io",
    "LOOSE_OVERLAPS": "drivemetrics.detection.kitti_eval",
    "parse_kitti_objects": "drivemetrics.detection.kitti_io",
    "polygon_area": "drivemetrics.detection.box_iou",
    "read_kitti_object_calib": "drivemetrics.detection.kitti_io",
    "read_kitti_object_folder": "drivemetrics.detection.kitti_io",
    "read_kitti_objects": "drivemetrics.detection.kitti_io",
    "STRICT_OVERLAPS": "drivemetrics.detection.kitti_eval",
    "velodyne_to_camera": "drivemetrics.detection.kitti_io",
    "velodyne_to_image": "drivemetrics.detection.kitti_io",
    "write_kitti_object_calib": "drivemetrics.detection.kitti_io",
    "write_kitti_object_folder": "drivemetrics.detection.kitti_io",
    "write_kitti_objects": "drivemetrics.detection.kitti_io",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
