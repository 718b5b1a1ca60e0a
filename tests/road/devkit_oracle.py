"""An independent numpy transcription of the KITTI-ROAD devkit's pixel evaluation, used as the test oracle.

Written from the algorithm's description (shared/reference/kitti_road.md section 1): per-image histograms of the
positive and negative confidences over the bin edges ``[-inf, t_0, ..., t_{T-1}, inf]``, cumulative sums for FN
and FP, pooling by summation, then the F-maximisation with the devkit's epsilons, the 11-point AP loop at
``np.arange(0, 1.1, 0.1)``, the first-maximum argmax and the float32 working-point values.
"""

from __future__ import annotations

import numpy as np


def devkit_eval_image(gt: np.ndarray, prob: np.ndarray, thresh: np.ndarray, valid: np.ndarray | None = None):
    """``evalExp``: (FN, FP, posNum, negNum) of one H x W image."""
    edges = np.concatenate(([-np.inf], thresh, [np.inf]))
    valid = np.ones(gt.shape, bool) if valid is None else valid.astype(bool)
    gt = gt.astype(bool)
    pos_hist = np.histogram(prob[gt & valid], bins=edges)[0]
    neg_hist = np.histogram(prob[~gt & valid], bins=edges)[0]
    fn = np.cumsum(pos_hist)[: len(thresh)]
    fp = np.flipud(np.cumsum(np.flipud(neg_hist)))[1 : 1 + len(thresh)]
    return fn, fp, int(np.sum(gt & valid)), int(np.sum(~gt & valid))


def devkit_maximize_f(pos_num, neg_num, total_fn, total_fp, thresh, beta: float = 1.0) -> dict:
    """``pxEval_maximizeFMeasure`` + ``calcEvalMeasures`` (working point in float32), as plain numpy."""
    total_fn = np.asarray(total_fn, np.float64)
    total_fp = np.asarray(total_fp, np.float64)
    total_tp = pos_num - total_fn
    total_tn = neg_num - total_fp
    recall = total_tp / float(pos_num)
    precision = total_tp / (total_tp + total_fp + 1e-10)
    drop = (recall == 0) & (precision == 0)
    recall = recall[~drop]
    precision = precision[~drop]
    avg_prec = 0.0
    counter = 0
    for level in np.arange(0, 1.1, 0.1):
        avg_prec += max(precision[recall >= level])
        counter += 1
    avg_prec = avg_prec / counter
    betasq = beta**2
    f = (1 + betasq) * (precision * recall) / ((betasq * precision) + recall + 1e-10)
    index = int(f.argmax())
    packed = np.zeros((1, 4), "u4")
    packed[0] = [total_tp[index], total_tn[index], total_fp[index], total_fn[index]]
    tp, tn, fp, fn = (packed[:, i].astype("f4") for i in range(4))
    p = tp + fn
    n = tn + fp
    return {
        "max_f": f[index],
        "average_precision": avg_prec,
        "best_threshold": thresh[index],
        "index": index,
        "precision": precision,
        "recall": recall,
        "total_positives": pos_num,
        "total_negatives": neg_num,
        # float32 working point, exactly as the devkit
        "precision_wp32": (tp / (tp + fp))[0],
        "recall_wp32": (tp / p)[0],
        "fpr_wp32": (fp / n)[0],
        "fnr_wp32": (fn / p)[0],
        "accuracy_wp32": ((tp + tn) / (p + n))[0],
        "iou_wp32": (tp / (tp + fp + fn))[0],
        # the same ratios in float64 from the exact counts
        "TP": total_tp[index],
        "FP": total_fp[index],
        "FN": total_fn[index],
        "TN": total_tn[index],
    }


def devkit_pooled(gts, probs, thresh, valids=None, beta: float = 1.0) -> dict:
    """The driver's loop: sum FN, FP, posNum, negNum over images, then one maximisation."""
    total_fn = np.zeros(len(thresh))
    total_fp = np.zeros(len(thresh))
    pos = neg = 0
    for i, (gt, prob) in enumerate(zip(gts, probs, strict=True)):
        fn, fp, p, n = devkit_eval_image(gt, prob, thresh, None if valids is None else valids[i])
        total_fn += fn
        total_fp += fp
        pos += p
        neg += n
    return devkit_maximize_f(pos, neg, total_fn, total_fp, thresh, beta=beta)
