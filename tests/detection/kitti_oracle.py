"""A plain per-frame port of the official ``evaluate_object.cpp`` (loops as in the C++), the oracle of the tests and
the baseline of ``benchmarks/kitti_object.py``; plus a generator of detector-like results from labels.

Deliberately written like the C++ (frame by frame, GT by GT, detection by detection, Python lists), sharing only
the overlap functions with the library (those are tested separately against an exact rational reference).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from drivemetrics.detection.box_iou import bev_overlap, box2d_overlap, box3d_overlap
from drivemetrics.detection.io import KittiObjects

CLASS_NAMES = ("car", "pedestrian", "cyclist")
MIN_HEIGHT = (40, 25, 25)
MAX_OCCLUSION = (0, 1, 2)
MAX_TRUNCATION = (0.15, 0.3, 0.5)
NO_DETECTION = -10000000.0


def overlap_matrix(det: KittiObjects, gt: KittiObjects, metric: str, criterion: int) -> np.ndarray:
    """``len(det) x len(gt)`` overlaps of one frame."""
    if metric == "2d":
        a, b = torch.from_numpy(det.bbox), torch.from_numpy(gt.bbox)
        return box2d_overlap(a[:, None], b[None], criterion=criterion).numpy()
    d3 = np.concatenate([det.location, det.dimensions, det.rotation_y[:, None]], 1)
    g3 = np.concatenate([gt.location, gt.dimensions, gt.rotation_y[:, None]], 1)
    a, b = torch.from_numpy(d3), torch.from_numpy(g3)
    if metric == "bev":
        return bev_overlap(a[:, None][..., [0, 2, 5, 4, 6]], b[None][..., [0, 2, 5, 4, 6]], criterion=criterion).numpy()
    return box3d_overlap(a[:, None], b[None], criterion=criterion).numpy()


def clean_data(cls: str, gt: KittiObjects, det: KittiObjects, difficulty: int):
    ignored_gt, dontcare, ignored_det, n_gt = [], [], [], 0
    for i in range(len(gt)):
        height = gt.bbox[i, 3] - gt.bbox[i, 1]
        kind = gt.type[i].lower()
        if kind == cls:
            valid = 1
        elif (cls == "pedestrian" and kind == "person_sitting") or (cls == "car" and kind == "van"):
            valid = 0
        else:
            valid = -1
        ignore = (
            gt.occluded[i] > MAX_OCCLUSION[difficulty]
            or gt.truncated[i] > MAX_TRUNCATION[difficulty]
            or height <= MIN_HEIGHT[difficulty]
        )
        if valid == 1 and not ignore:
            ignored_gt.append(0)
            n_gt += 1
        elif valid == 0 or (ignore and valid == 1):
            ignored_gt.append(1)
        else:
            ignored_gt.append(-1)
    for i in range(len(gt)):
        if gt.type[i].lower() == "dontcare":
            dontcare.append(i)
    for j in range(len(det)):
        valid = 1 if det.type[j].lower() == cls else -1
        height = int(abs(det.bbox[j, 1] - det.bbox[j, 3]))
        if height < MIN_HEIGHT[difficulty]:
            ignored_det.append(1)
        elif valid == 1:
            ignored_det.append(0)
        else:
            ignored_det.append(-1)
    return ignored_gt, dontcare, ignored_det, n_gt


def compute_statistics(gt, det, dontcare, ignored_gt, ignored_det, overlap, dc_overlap, min_ov, compute_fp, thresh):
    tp = fp = fn = 0
    v, delta = [], []
    assigned = [False] * len(det)
    ignored_threshold = [compute_fp and det.score[j] < thresh for j in range(len(det))]
    for i in range(len(gt)):
        if ignored_gt[i] == -1:
            continue
        det_idx, valid_detection, max_iou, assigned_ignored_det = -1, NO_DETECTION, 0.0, False
        for j in range(len(det)):
            if ignored_det[j] == -1 or assigned[j] or ignored_threshold[j]:
                continue
            ov = overlap[j, i]
            if not compute_fp and ov > min_ov and det.score[j] > valid_detection:
                det_idx, valid_detection = j, det.score[j]
            elif compute_fp and ov > min_ov and (ov > max_iou or assigned_ignored_det) and ignored_det[j] == 0:
                max_iou, det_idx, valid_detection, assigned_ignored_det = ov, j, 1, False
            elif compute_fp and ov > min_ov and valid_detection == NO_DETECTION and ignored_det[j] == 1:
                det_idx, valid_detection, assigned_ignored_det = j, 1, True
        if valid_detection == NO_DETECTION and ignored_gt[i] == 0:
            fn += 1
        elif valid_detection != NO_DETECTION and (ignored_gt[i] == 1 or ignored_det[det_idx] == 1):
            assigned[det_idx] = True
        elif valid_detection != NO_DETECTION:
            tp += 1
            delta.append(gt.alpha[i] - det.alpha[det_idx])
            v.append(det.score[det_idx])
            assigned[det_idx] = True
    similarity = 0.0
    if compute_fp:
        for j in range(len(det)):
            if not (assigned[j] or ignored_det[j] == -1 or ignored_det[j] == 1 or ignored_threshold[j]):
                fp += 1
        nstuff = 0
        for i in dontcare:
            for j in range(len(det)):
                if assigned[j] or ignored_det[j] in (-1, 1) or ignored_threshold[j]:
                    continue
                if dc_overlap[j, i] > min_ov:
                    assigned[j] = True
                    nstuff += 1
        fp -= nstuff
        similarity = sum((1.0 + math.cos(d)) / 2.0 for d in delta)
    return tp, fp, fn, v, similarity


def get_thresholds(v, n_gt):
    v = sorted(v, reverse=True)
    t, current = [], 0.0
    for i in range(len(v)):
        left = (i + 1) / n_gt
        right = (i + 2) / n_gt if i < len(v) - 1 else left
        if (right - current) < (current - left) and i < len(v) - 1:
            continue
        t.append(v[i])
        current += 1.0 / 40.0
    return t


def max_element_suffix(values):
    out = []
    for i in range(len(values)):
        best = values[i]
        for x in values[i + 1 :]:
            if best < x:
                best = x
        out.append(best)
    return out


def eval_class(gts, dets, cls, metric, min_ov, difficulty, compute_aos, overlaps=None):
    """41-point precision (and AOS) of one class / metric / difficulty, frame by frame as the C++."""
    cleaned, v, n_gt = [], [], 0
    for f, (gt, det) in enumerate(zip(gts, dets, strict=True)):
        ig_gt, dc, ig_det, n = clean_data(cls, gt, det, difficulty)
        n_gt += n
        ov, dc_ov = overlaps[f] if overlaps is not None else (None, None)
        if ov is None:
            ov, dc_ov = overlap_matrix(det, gt, metric, -1), overlap_matrix(det, gt, metric, 0)
        cleaned.append((ig_gt, dc, ig_det, ov, dc_ov))
        v += compute_statistics(gt, det, dc, ig_gt, ig_det, ov, dc_ov, min_ov, False, 0.0)[3]
    thresholds = get_thresholds(v, n_gt) if n_gt else []
    tp, fp, sim = [0] * len(thresholds), [0] * len(thresholds), [0.0] * len(thresholds)
    for gt, det, (ig_gt, dc, ig_det, ov, dc_ov) in zip(gts, dets, cleaned, strict=True):
        for k, t in enumerate(thresholds):
            a, b, _, _, s = compute_statistics(gt, det, dc, ig_gt, ig_det, ov, dc_ov, min_ov, True, t)
            tp[k] += a
            fp[k] += b
            sim[k] += s
    precision, aos = [0.0] * 41, [0.0] * 41
    for k in range(len(thresholds)):
        den = tp[k] + fp[k]
        precision[k] = tp[k] / den if den else math.nan
        aos[k] = sim[k] / den if den else math.nan
    return max_element_suffix(precision), (max_element_suffix(aos) if compute_aos else None)


def evaluate(gts, dets, overlaps=(0.7, 0.5, 0.5), classes=CLASS_NAMES, metrics=("2d", "bev", "3d")):
    """``{class: {metric: [easy, moderate, hard curves]}}`` for every class / metric (no C++ class selection)."""
    compute_aos = not any((d.alpha == -10).any() for d in dets)
    out = {}
    for ci, cls in enumerate(classes):
        out[cls] = {}
        for metric in metrics:
            cache = [
                (overlap_matrix(d, g, metric, -1), overlap_matrix(d, g, metric, 0))
                for g, d in zip(gts, dets, strict=True)
            ]
            curves = [
                eval_class(gts, dets, cls, metric, overlaps[ci], diff, compute_aos and metric == "2d", cache)
                for diff in range(3)
            ]
            out[cls][metric] = [c[0] for c in curves]
            if compute_aos and metric == "2d":
                out[cls]["aos"] = [c[1] for c in curves]
    return out


def jitter_detections(labels: list[KittiObjects], seed: int = 0, tiny: bool = True) -> list[KittiObjects]:
    """Detector-like results from labels: jittered boxes, random scores, 15 % missed, 10 % heading flipped, 5 % class
    confusion, Van -> Car and Person_sitting -> Pedestrian, boxes on half of the DontCare regions, random false
    positives (some 10-30 px tall)."""
    gen = np.random.default_rng(seed)
    types_all = ["Car", "Pedestrian", "Cyclist"]
    out = []
    for lab in labels:
        rows, types = [], []
        arr = lab.to_array()
        for i, name in enumerate(lab.type):
            row = arr[i, :14].copy()
            if name == "DontCare":
                if gen.random() < 0.5:
                    w, h = row[5] - row[3], row[6] - row[4]
                    row[3:7] += gen.normal(0, 0.1, 4) * [w, h, w, h]
                    row[2] = gen.uniform(-math.pi, math.pi)
                    row[7:10], row[10:13], row[13] = [1.5, 1.6, 3.9], [0.0, 1.6, 20.0], 0.0
                    types.append(types_all[gen.integers(3)])
                    rows.append(np.append(row, gen.random()))
                continue
            if gen.random() < 0.15:
                continue
            name = {"Van": "Car", "Person_sitting": "Pedestrian"}.get(name, name)
            if gen.random() < 0.05:
                name = types_all[gen.integers(3)]
            w, h = row[5] - row[3], row[6] - row[4]
            row[3:7] += gen.normal(0, 0.06, 4) * [w, h, w, h]
            row[7:10] *= 1 + gen.normal(0, 0.05, 3)
            row[10:13] += gen.normal(0, 0.15, 3)
            row[13] += gen.normal(0, 0.1) + (math.pi if gen.random() < 0.1 else 0.0)
            row[2] = row[13] - math.atan2(row[10], row[12]) + gen.normal(0, 0.05)
            types.append(name)
            rows.append(np.append(row, gen.random()))
        for _ in range(gen.poisson(2)):
            x1, y1 = gen.uniform(0, 1100), gen.uniform(100, 300)
            height = gen.uniform(10, 30) if tiny and gen.random() < 0.3 else gen.uniform(30, 150)
            width = height * gen.uniform(0.5, 2.0)
            row = np.array(
                [
                    -1,
                    -1,
                    gen.uniform(-3, 3),
                    x1,
                    y1,
                    x1 + width,
                    y1 + height,
                    1.5,
                    1.6,
                    3.9,
                    gen.uniform(-15, 15),
                    1.6,
                    gen.uniform(5, 60),
                    gen.uniform(-3, 3),
                    gen.random(),
                ]
            )
            types.append(types_all[gen.integers(3)])
            rows.append(row)
        values = np.array(rows).reshape(len(rows), 15)
        values[:, 0:2] = -1
        out.append(KittiObjects.from_array(types, values))
    return out
