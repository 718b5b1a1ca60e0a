"""Ragged per-frame state: rows of different counts per frame, kept by a Metric and synced in one gather.

An AP-style metric cannot reduce its frames to counters in ``update``: it pools every detection of every frame
at ``compute`` time. It keeps, per frame, a variable number of rows (detections, ground-truth objects, lanes,
matches). torchmetrics' list states (``dist_reduce_fx="cat"``) break when processes see different data: a rank
without any update sends an empty 1-D float tensor of another rank and dtype than the others (gloo aborts with "a
collective mismatch", NCCL hangs), and every list state costs its own gathers. This module keeps such state in
one place and syncs it whatever each rank saw.

For a Metric: subclass :class:`RaggedStateMixin` (before ``Metric``), declare the per-frame fields once and
append frames in ``update``; read them back, synced across processes inside ``compute``, with
:meth:`~RaggedStateMixin.ragged_frames`::

    class MyAP(RaggedStateMixin, Metric):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.add_ragged_state(dets=((5,), torch.float64), gts=((4,), torch.float64))

        def update(self, preds, target, frame_ids=None):  # one entry per frame: (N_i, 5) and (M_i, 4) tensors
            self.append_frames(keys=frame_ids, dets=preds, gts=target)

        def compute(self):
            frames = self.ragged_frames()  # every process's frames, sorted by key
            dets = frames.fields["dets"]  # RaggedRows: dets.rows (R, 5), dets.lengths (F,)
            ...

- Storage: per field, list states ``ragged_<field>_rows`` (``(R_i, *shape)`` tensors) and
  ``ragged_<field>_lengths`` (rows per frame, int64), and ``ragged_keys`` (one int64 key per frame), one element
  per ``append_frames`` call. They are ordinary torchmetrics list states: ``reset``, ``merge_state``,
  ``forward``, pickling, ``clone``, ``state_dict`` (with ``persistent(True)``) and ``.to(device)`` work as usual.
- Cost: ``append_frames`` appends to the lists and never reads what they hold (constant time per call, however
  many frames are held); the lists are concatenated once, in ``compute`` or in the sync. Nothing is written into
  a held tensor (a Metric pickled to spawned workers shares its tensors' memory with them).
- Sync (:func:`gather_ragged`): every field of every rank is packed into one byte buffer; one ``all_gather`` of a
  small header (frame and row counts per rank: the only host synchronisation, needed to size the buffer) and one
  ``all_gather`` of the padded buffers. A rank without frames sends zero bytes; ranks may hold any number of
  frames and rows; gloo (CPU) and NCCL (CUDA) alike. Other (tensor) states of the metric sync as torchmetrics
  does.
- Order: :meth:`~RaggedStateMixin.ragged_frames` returns the frames sorted by key (stable; equal keys keep rank
  order, then arrival order). The default key of a frame is its arrival index on its process, so frames of the
  strided ``DistributedSampler`` (no shuffle) come back in dataset order; pass ``keys`` (e.g. dataset indices)
  to ``append_frames`` to fix the order whatever the sharding (the key ``-2**63`` is reserved: it marks a frame
  without a key). Results must still not depend on frame order
  (the pooled AP of two processes equals the one-process AP over the same frames): sort pooled detections by a
  key that breaks score ties on content, or treat equal scores as one threshold, as the KITTI evaluation does.
- dtype: each field keeps its declared dtype (``set_dtype`` of the metric does not change it).
- A custom ``dist_sync_fn`` of the metric applies to its tensor states only; ragged states always go through
  :func:`gather_ragged`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
import torch.distributed as dist
from torch import Tensor

__all__ = ["Frames", "RaggedRows", "RaggedStateMixin", "gather_ragged", "sort_frames"]

KEYS_STATE = "ragged_keys"
#: stored key of a frame appended without one; :meth:`RaggedStateMixin._local_frames` replaces it by the frame's
#: position among the held frames (its arrival index), so ``append_frames`` never looks at the frames it holds
ARRIVAL_KEY = -(2**63)
_ALIGN = 8  # bytes: every segment of the packed buffer starts at a multiple of the largest element size


class RaggedRows(NamedTuple):
    """Rows of several frames, frame after frame: ``rows`` ``(R, *shape)``, ``lengths`` ``(F,)`` int64.

    Frame ``f`` holds ``rows[offsets[f] : offsets[f + 1]]`` (see :meth:`offsets`).

    Examples:
        >>> import torch
        >>> from drivemetrics._internal.ragged import RaggedRows
        >>> rows = [torch.ones(2, 3), torch.zeros(0, 3), torch.ones(1, 3)]
        >>> frames = RaggedRows.from_frames(rows, (3,), torch.float64)
        >>> frames.lengths.tolist(), frames.offsets().tolist(), frames.frame_index().tolist()
        ([2, 0, 1], [0, 2, 2, 3], [0, 0, 2])
    """

    rows: Tensor
    lengths: Tensor

    def offsets(self) -> Tensor:
        """``(F + 1,)`` int64 start of each frame's rows, then ``R``."""
        zero = torch.zeros(1, dtype=torch.int64, device=self.lengths.device)
        return torch.cat([zero, torch.cumsum(self.lengths, 0)])

    def frame_index(self) -> Tensor:
        """``(R,)`` int64 frame of each row (no host synchronisation)."""
        frames = torch.arange(self.lengths.numel(), device=self.lengths.device)
        return torch.repeat_interleave(frames, self.lengths, output_size=self.rows.shape[0])

    def split(self) -> list[Tensor]:
        """One ``(n_f, *shape)`` tensor per frame (reads the lengths on the host)."""
        return list(torch.split(self.rows, self.lengths.tolist()))

    @classmethod
    def from_frames(
        cls,
        frames: Sequence[Tensor | Any],
        shape: tuple[int, ...],
        dtype: torch.dtype,
        device: torch.device | str | None = None,
    ) -> RaggedRows:
        """Concatenate one ``(n_f, *shape)`` tensor (or array) per frame; ``n_f`` may be 0."""
        parts = [torch.as_tensor(f).reshape(-1, *shape) for f in frames]
        rows = torch.cat(parts).to(dtype) if parts else torch.zeros((0, *shape), dtype=dtype)
        lengths = torch.tensor([p.shape[0] for p in parts], dtype=torch.int64)
        return cls(rows.to(device), lengths.to(device))


@dataclass(frozen=True)
class Frames:
    """Frames of ragged state: ``keys`` ``(F,)`` int64 and, per field, its :class:`RaggedRows` over the same
    ``F`` frames."""

    keys: Tensor
    fields: dict[str, RaggedRows]

    def __len__(self) -> int:
        return int(self.keys.numel())


def _as_bytes(tensor: Tensor) -> Tensor:
    flat = tensor.contiguous().reshape(-1)
    return flat.view(torch.uint8) if flat.dtype != torch.uint8 else flat


def _row_bytes(shape: tuple[int, ...], dtype: torch.dtype) -> int:
    numel = 1
    for size in shape:
        numel *= size
    return numel * torch.empty((), dtype=dtype).element_size()


def _aligned(size: int) -> int:
    return -(-size // _ALIGN) * _ALIGN


def gather_ragged(
    keys: Tensor, fields: Mapping[str, RaggedRows], group: Any = None
) -> tuple[Tensor, dict[str, RaggedRows]]:
    """Gather ragged frames of every process of ``group``: rank 0's frames, then rank 1's, ... on every rank.

    Every rank must call it with the same field names, trailing row shapes and dtypes; the numbers of frames and
    rows may differ, and may be zero. Two collectives: an ``all_gather`` of the ``(1 + fields,)`` int64 counts
    (read on the host, to size the buffer) and an ``all_gather`` of one padded byte buffer (skipped when every
    rank is empty). Tensors are packed on ``keys.device`` (a CUDA device for NCCL).

    Args:
        keys: ``(F,)`` int64 key of each local frame.
        fields: name -> :class:`RaggedRows` of the same ``F`` local frames.
        group: process group (default: the whole world).

    Returns:
        ``(keys, fields)`` of all frames, in rank order (see :func:`sort_frames`).
    """
    device = keys.device
    names = list(fields)
    count = keys.numel()
    for name in names:
        if fields[name].lengths.numel() != count:
            raise ValueError(f"field {name!r} holds {fields[name].lengths.numel()} frames, the keys {count}")
    world = dist.get_world_size(group)
    header = torch.tensor([count, *(fields[n].rows.shape[0] for n in names)], dtype=torch.int64)
    # on CUDA from pinned memory: the copy does not wait for the device
    header = header.pin_memory().to(device, non_blocking=True) if device.type == "cuda" else header.to(device)
    headers = [torch.empty_like(header) for _ in range(world)]
    dist.all_gather(headers, header, group=group)
    counts = torch.stack(headers).cpu().tolist()  # the one host synchronisation: sizes of every rank's data

    shapes = {n: tuple(fields[n].rows.shape[1:]) for n in names}
    dtypes = {n: fields[n].rows.dtype for n in names}

    def layout(frames: int, rows: Sequence[int]) -> list[tuple[int, int]]:
        """``(start, bytes)`` of keys, lengths per field, rows per field in one rank's buffer."""
        sizes = [frames * 8] + [frames * 8 for _ in names]
        sizes += [r * _row_bytes(shapes[n], dtypes[n]) for n, r in zip(names, rows, strict=True)]
        out, start = [], 0
        for size in sizes:
            out.append((start, size))
            start += _aligned(size)
        return out

    layouts = [layout(c[0], c[1:]) for c in counts]
    total = max(lay[-1][0] + _aligned(lay[-1][1]) for lay in layouts)  # the longest buffer
    if total == 0:  # no rank holds data: nothing to send (every rank knows it from the headers)
        empty = {n: RaggedRows(fields[n].rows[:0], fields[n].lengths[:0]) for n in names}
        return keys[:0], empty
    buffer = torch.zeros(total, dtype=torch.uint8, device=device)
    local = [keys.to(torch.int64), *(fields[n].lengths.to(torch.int64) for n in names)]
    local += [fields[n].rows for n in names]
    for (start, size), tensor in zip(layouts[dist.get_rank(group)], local, strict=True):
        buffer[start : start + size] = _as_bytes(tensor.to(device))
    buffers = [torch.empty_like(buffer) for _ in range(world)]
    dist.all_gather(buffers, buffer, group=group)

    def piece(rank: int, index: int, dtype: torch.dtype, shape: tuple[int, ...]) -> Tensor:
        start, size = layouts[rank][index]
        return buffers[rank][start : start + size].view(dtype).reshape(-1, *shape)

    all_keys = torch.cat([piece(r, 0, torch.int64, ()) for r in range(world)])
    out = {}
    for i, name in enumerate(names):
        lengths = torch.cat([piece(r, 1 + i, torch.int64, ()) for r in range(world)])
        rows = torch.cat([piece(r, 1 + len(names) + i, dtypes[name], shapes[name]) for r in range(world)])
        out[name] = RaggedRows(rows, lengths)
    return all_keys, out


def sort_frames(keys: Tensor, fields: Mapping[str, RaggedRows]) -> tuple[Tensor, dict[str, RaggedRows]]:
    """The frames reordered by key (stable: equal keys keep their order), on the device, without host sync.

    Examples:
        >>> from drivemetrics._internal.ragged import RaggedRows
        >>> import torch
        >>> from drivemetrics._internal.ragged import sort_frames
        >>> rows = RaggedRows(torch.tensor([10, 11, 20, 30, 31, 32]), torch.tensor([2, 1, 3]))
        >>> keys, fields = sort_frames(torch.tensor([5, 1, 3]), {"x": rows})
        >>> keys.tolist(), fields["x"].lengths.tolist(), fields["x"].rows.tolist()
        ([1, 3, 5], [1, 3, 2], [20, 30, 31, 32, 10, 11])
    """
    order = torch.sort(keys, stable=True).indices
    out = {}
    for name, field in fields.items():
        starts = field.offsets()[:-1]
        lengths = field.lengths[order]
        moved = RaggedRows(field.rows, lengths)
        frame = moved.frame_index()  # frame (in the new order) of each output row
        position = torch.arange(field.rows.shape[0], device=frame.device) - moved.offsets()[:-1][frame]
        out[name] = RaggedRows(field.rows[starts[order][frame] + position], lengths)
    return keys[order], out


class RaggedStateMixin:
    """Mixin for a ``torchmetrics.Metric`` keeping ragged per-frame state (see the module docstring).

    Use it first in the bases (``class MyAP(RaggedStateMixin, Metric)``), call :meth:`add_ragged_state` in
    ``__init__``, :meth:`append_frames` in ``update`` and :meth:`ragged_frames` in ``compute``.
    """

    _ragged_fields: dict[str, tuple[tuple[int, ...], torch.dtype]]

    def add_ragged_state(self, **fields: tuple[int | tuple[int, ...], torch.dtype]) -> None:
        """Declare the per-frame fields: ``name=(row shape, dtype)``, e.g. ``dets=((16,), torch.float64)``.

        Call it once, in ``__init__``; every frame has rows (possibly none) in every field.
        """
        if getattr(self, "_ragged_fields", None):
            raise RuntimeError("add_ragged_state was already called")
        if not fields:
            raise ValueError("add_ragged_state needs at least one field")
        metric: Any = self
        declared = {}
        for name, (shape, dtype) in fields.items():
            declared[name] = ((shape,) if isinstance(shape, int) else tuple(shape), dtype)
            metric.add_state(f"ragged_{name}_rows", default=[], dist_reduce_fx="cat")
            metric.add_state(f"ragged_{name}_lengths", default=[], dist_reduce_fx="cat")
        metric.add_state(KEYS_STATE, default=[], dist_reduce_fx="cat")
        self._ragged_fields = declared

    def _ragged_state_names(self) -> list[str]:
        names = [KEYS_STATE]
        for name in self._ragged_fields:
            names += [f"ragged_{name}_rows", f"ragged_{name}_lengths"]
        return names

    def append_frames(
        self, keys: Tensor | Sequence[int] | None = None, **fields: Sequence[Tensor] | RaggedRows
    ) -> None:
        """Add frames: per declared field, one ``(n_f, *shape)`` tensor per frame, or a :class:`RaggedRows`.

        Args:
            keys: one int key per frame (e.g. dataset indices) fixing the order of :meth:`ragged_frames`; default:
                the arrival index of each frame on this process (its position among the held frames, found when
                they are concatenated). ``-2**63`` is reserved for that.
            fields: every declared field, each with the same number of frames.
        """
        metric: Any = self
        if set(fields) != set(self._ragged_fields):
            raise ValueError(f"append_frames needs the fields {sorted(self._ragged_fields)}, got {sorted(fields)}")
        device = metric.device
        packed: dict[str, RaggedRows] = {}
        for name, value in fields.items():
            shape, dtype = self._ragged_fields[name]
            if isinstance(value, RaggedRows):
                rows, lengths = value.rows, value.lengths.to(device=device, dtype=torch.int64)
                if lengths.device.type == "cpu" and int(lengths.sum()) != rows.shape[0]:
                    raise ValueError(f"`{name}`: the lengths sum to {int(lengths.sum())}, not {rows.shape[0]} rows")
            else:
                rows, lengths = RaggedRows.from_frames(value, shape, dtype)
            if tuple(rows.shape[1:]) != shape:
                raise ValueError(
                    f"`{name}`: rows must have shape (n, {', '.join(map(str, shape))}), got {tuple(rows.shape)}"
                )
            packed[name] = RaggedRows(rows.to(device=device, dtype=dtype), lengths.to(device, torch.int64))
        counts = {name: value.lengths.numel() for name, value in packed.items()}
        if len(set(counts.values())) != 1:
            raise ValueError(f"every field needs the same number of frames, got {counts}")
        count = next(iter(counts.values()))
        if keys is None:  # the arrival index, filled in when the frames are concatenated (O(1) per update)
            key_tensor = torch.full((count,), ARRIVAL_KEY, dtype=torch.int64, device=device)
        else:
            key_tensor = torch.as_tensor(keys, dtype=torch.int64).to(device).reshape(-1)
            if key_tensor.numel() != count:
                raise ValueError(f"got {key_tensor.numel()} keys for {count} frames")
        getattr(metric, KEYS_STATE).append(key_tensor)
        for name, value in packed.items():
            getattr(metric, f"ragged_{name}_rows").append(value.rows)
            getattr(metric, f"ragged_{name}_lengths").append(value.lengths)

    def _local_frames(self) -> tuple[Tensor, dict[str, RaggedRows]]:
        """The held frames, concatenated in arrival order, each field in its declared dtype."""
        metric: Any = self
        device = metric.device

        def cat(state: list[Tensor] | Tensor, empty: Tensor) -> Tensor:
            if isinstance(state, list):
                return dim_zero_cat(state) if state else empty
            return state

        keys = cat(getattr(metric, KEYS_STATE), torch.zeros(0, dtype=torch.int64, device=device)).to(torch.int64)
        arrival = torch.arange(keys.numel(), dtype=torch.int64, device=keys.device)
        keys = torch.where(keys == ARRIVAL_KEY, arrival, keys)  # frames appended without a key: their position
        fields = {}
        for name, (shape, dtype) in self._ragged_fields.items():
            rows = cat(getattr(metric, f"ragged_{name}_rows"), torch.zeros((0, *shape), dtype=dtype, device=device))
            lengths = cat(getattr(metric, f"ragged_{name}_lengths"), torch.zeros(0, dtype=torch.int64, device=device))
            fields[name] = RaggedRows(rows.to(dtype).reshape(-1, *shape), lengths.to(torch.int64))
        return keys, fields

    def ragged_frames(self) -> Frames:
        """Every held frame (inside ``compute``: of every process), sorted by key (stable)."""
        keys, fields = sort_frames(*self._local_frames())
        return Frames(keys, fields)

    def _sync_dist(self, dist_sync_fn: Any = None, process_group: Any = None) -> None:
        """torchmetrics' sync for the tensor states, :func:`gather_ragged` (one gather) for the ragged ones."""
        metric: Any = self
        ragged = set(self._ragged_state_names())
        reductions = metric._reductions
        metric._reductions = {k: v for k, v in reductions.items() if k not in ragged}
        try:
            if metric._reductions:
                kwargs = {} if dist_sync_fn is None else {"dist_sync_fn": dist_sync_fn}
                super()._sync_dist(process_group=process_group, **kwargs)  # type: ignore[misc]
        finally:
            metric._reductions = reductions
        keys, fields = gather_ragged(*self._local_frames(), group=process_group or metric.process_group)
        setattr(metric, KEYS_STATE, [keys])
        for name, field in fields.items():
            setattr(metric, f"ragged_{name}_rows", [field.rows])
            setattr(metric, f"ragged_{name}_lengths", [field.lengths])


def dim_zero_cat(tensors: list[Tensor]) -> Tensor:
    """The list states concatenated along dim 0 (torchmetrics' helper of that name, here so that the dataset
    commands, which import this module through :mod:`drivemetrics._internal.distributed`, load no torchmetrics)."""
    return torch.cat([t.reshape(1) if t.ndim == 0 else t for t in tensors])
