"""Fast 8-bit PNG decoding: libspng (``pyspng``) where it is installed, Pillow otherwise.

Decoding PNGs dominates an end-to-end KITTI-ROAD evaluation. libspng decodes the 8-bit greyscale, RGB and RGBA
PNGs of KITTI-ROAD in about 55 % of Pillow's time (measured on the fixture frames: 3.9 against 7.0 ms per
1242 x 375 image; ``imagecodecs`` 4.2 ms), so it is used where a wheel exists (``pyspng`` is a dependency on
x86-64 Linux, Windows and macOS; aarch64 Linux has no wheel and keeps Pillow).

:func:`png_header` reads the size and pixel format from the ``IHDR`` chunk (the first 33 bytes) without decoding.
:func:`decode_png_array` returns the image as a ``uint8`` array, exactly what ``numpy.asarray(PIL.Image.open(path))``
gives for the formats the fast path takes (8-bit greyscale ``(H, W)``, RGB ``(H, W, 3)``, RGBA ``(H, W, 4)``), and
``None`` for every other format (palette, 16-bit, grey + alpha, not a PNG), which the caller decodes with Pillow.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from drivemetrics._internal.extras import available

if TYPE_CHECKING:
    import numpy as np

__all__ = ["PNG_SIGNATURE", "PngHeader", "decode_png_array", "fast_decoder", "png_header"]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: PNG colour types the fast path decodes, with the array's channel count: greyscale, RGB, RGBA.
_FAST_COLOUR_TYPES = {0: 1, 2: 3, 6: 4}


class PngHeader(NamedTuple):
    """A PNG's ``IHDR`` fields: size in pixels, bits per sample, colour type (0 grey, 2 RGB, 3 palette, ...)."""

    width: int
    height: int
    bit_depth: int
    colour_type: int


def png_header(data: bytes) -> PngHeader | None:
    """The ``IHDR`` of PNG bytes (at least the first 26), or ``None`` if ``data`` does not start like a PNG.

    Examples:
        >>> from drivemetrics._internal.png import png_header
        >>> from drivemetrics._internal.png import PNG_SIGNATURE
        >>> png_header(PNG_SIGNATURE + b"\\x00\\x00\\x00\\rIHDR" + bytes([0, 0, 4, 218, 0, 0, 1, 119, 8, 0, 0, 0, 0]))
        PngHeader(width=1242, height=375, bit_depth=8, colour_type=0)
        >>> png_header(b"GIF89a") is None
        True
    """
    if len(data) < 26 or not data.startswith(PNG_SIGNATURE) or data[12:16] != b"IHDR":
        return None
    width, height, bit_depth, colour_type = struct.unpack(">IIBB", data[16:26])
    return PngHeader(width, height, bit_depth, colour_type)


def fast_decoder() -> str:
    """The decoder :func:`decode_png_array` uses: ``"pyspng"`` when importable, else ``"pillow"``.

    The environment variable ``DRIVEMETRICS_PNG_DECODER=pillow`` forces Pillow (for comparisons and benchmarks).
    """
    if os.environ.get("DRIVEMETRICS_PNG_DECODER", "").lower() == "pillow":
        return "pillow"
    return "pyspng" if available("pyspng") else "pillow"


def decode_png_array(path: str | Path, data: bytes | None = None) -> np.ndarray | None:
    """The 8-bit greyscale / RGB / RGBA PNG at ``path`` as a ``uint8`` array, or ``None`` (use Pillow).

    Args:
        path: the file (named in errors; read unless ``data`` is given).
        data: the file's bytes, if already read.

    Returns:
        ``(H, W)`` for greyscale, ``(H, W, 3)`` for RGB, ``(H, W, 4)`` for RGBA, identical to Pillow's decoding;
        ``None`` when ``pyspng`` is not installed or the PNG has another format (the caller falls back to Pillow,
        which also reports damaged files).
    """
    if fast_decoder() != "pyspng":
        return None
    import pyspng

    if data is None:
        try:
            data = Path(path).read_bytes()
        except OSError:  # missing or unreadable: Pillow's reader raises the error that names the file
            return None
    header = png_header(data)
    if header is None or header.bit_depth != 8 or header.colour_type not in _FAST_COLOUR_TYPES:
        return None
    from drivemetrics._internal.limits import check_image_size

    check_image_size(path, header.width, header.height)  # before decoding (max_png_pixels)
    from PIL import Image

    if Image.MAX_IMAGE_PIXELS is not None and header.width * header.height > Image.MAX_IMAGE_PIXELS:
        return None  # Pillow applies its decompression-bomb rules and names the file
    try:
        array = pyspng.load(data)
    except Exception:  # damaged data: Pillow decodes it again and names the file in its error
        return None
    channels = _FAST_COLOUR_TYPES[header.colour_type]
    expected = (header.height, header.width) if channels == 1 else (header.height, header.width, channels)
    if array.ndim == 3 and channels == 1:
        array = array[..., 0]
    if array.shape != expected or array.dtype.name != "uint8":
        return None
    return array
