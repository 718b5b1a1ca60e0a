"""Safe file handling shared by every command: outputs never overwrite inputs, writes are atomic, images that do
not decode name their file.

- :func:`check_output_path` refuses an output that is one of the command's input files or folders, or a file inside
  an input folder named like the files read from it (after resolving links), before anything is computed.
- :class:`InputFiles` checks each output file, just before it is written, against the input files (links resolved).
- :func:`atomic_write_text`, :func:`atomic_write_bytes`, :func:`atomic_open` and :func:`atomic_save_png` write to
  a temporary file in the target folder and rename it into place (``os.replace``), so an interrupted run leaves
  either the old file or the new one, never a truncated file. The new file keeps the mode of the file it replaces
  (a new file gets ``0o666`` minus the umask, like a plain ``open``).
- :func:`read_text` reads a UTF-8 text file and turns invalid UTF-8 into a :class:`ValueError` naming the file,
  line and byte offset.
- :func:`load_image` decodes an image with Pillow and turns any decoding failure (truncated file, not an
  image, decompression bomb) into a :class:`ValueError` naming the file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

__all__ = [
    "OUTPUT_OPTIONS",
    "InputFiles",
    "atomic_open",
    "atomic_save_figure",
    "atomic_save_png",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_input_kinds",
    "check_output_against_inputs",
    "check_output_path",
    "check_outputs",
    "check_writable",
    "decode_text",
    "is_special_file",
    "load_image",
    "present_file",
    "read_text",
]

if TYPE_CHECKING:
    import numpy as np


def _resolved(path: str | Path) -> Path:
    return Path(path).expanduser().resolve()


_FD_LINK = re.compile(r"/dev/(stdout|stderr|stdin|fd/[0-9]+)|/proc/(self|thread-self|[0-9]+)/fd/[0-9]+")


def is_special_file(path: str | Path) -> bool:
    """Whether ``path`` names something to write *into*, never to replace: an existing character or block device,
    FIFO or socket (``/dev/null``, a named pipe), or a link to an open descriptor (``/dev/stdout``, ``/dev/fd/N``,
    ``/proc/self/fd/N``: a terminal, a pipe or the regular file the shell redirected to, not ours to rename over).

    Outputs of this kind are opened and written directly by :func:`atomic_open` (no temporary file, no rename:
    renaming over ``/dev/null`` as root would replace the system's null device with a regular file).
    """
    path = Path(path).expanduser()
    if _FD_LINK.fullmatch(str(path.absolute())):
        return True
    try:
        mode = os.stat(path).st_mode  # links followed
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


#: argparse ``dest`` of the options that name an output (file or folder), checked by :func:`check_outputs` in every
#: command: ``--json``, ``--figures``, ``--write-stats``, ``--out``, ``--output`` (and those declared with
#: :func:`drivemetrics._internal.options.add_output`).
OUTPUT_OPTIONS = ("json", "figures", "write_stats", "out", "output")


def _input_paths(args: Any) -> list[tuple[str, Path]]:
    """``(flag, path)`` of every input a command declared with :func:`drivemetrics._internal.options.add_input`."""
    found = []
    for dest, (flag, _) in (getattr(args, "input_kinds", None) or {}).items():
        value = getattr(args, dest, None)
        for path in value if isinstance(value, (list, tuple)) else [value]:
            if path is not None:
                found.append((flag, Path(path)))
    return found


def check_outputs(args: Any) -> None:
    """The one output rule of every command, checked before any work (:func:`drivemetrics.cli.main` calls it).

    Each output (the options of :data:`OUTPUT_OPTIONS` and those declared with ``add_output``) must not be, contain
    or sit inside any input (the files and folders declared with ``add_input``), links resolved: see
    :func:`check_output_against_inputs`. An output that is a special file (:func:`is_special_file`) is exempt.
    """
    inputs = _input_paths(args)
    flags = dict(getattr(args, "output_flags", None) or {})
    for dest in OUTPUT_OPTIONS:
        flags.setdefault(dest, "--" + dest.replace("_", "-"))
    for dest, flag in flags.items():
        value = getattr(args, dest, None)
        if isinstance(value, (str, os.PathLike)) and str(value):
            check_output_against_inputs(value, inputs, option=flag)


def check_output_against_inputs(output: str | Path, inputs: Iterable[tuple[str, str | Path]], option: str) -> None:
    """Raise ``ValueError`` (one line naming ``option`` and the input's flag and path) when ``output`` is one of the
    ``inputs`` (``(flag, path)`` pairs), the same file through a hard link, a folder that contains one of them, or a
    path inside an input folder, links resolved. A special output (``/dev/null``, a FIFO) is never refused."""
    if is_special_file(output):
        return
    out = _resolved(output)
    for flag, path in inputs:
        where = _resolved(path)
        if where == out:
            raise ValueError(f"`{option}` {output} is the input `{flag}` {path}; refusing to overwrite it")
        with contextlib.suppress(OSError):
            if out.exists() and Path(path).exists() and os.path.samefile(out, path):
                raise ValueError(
                    f"`{option}` {output} is the same file as the input `{flag}` {path}; refusing to overwrite it"
                )
        if where.is_relative_to(out):
            raise ValueError(f"`{option}` {output} contains the input `{flag}` {path}; write the output elsewhere")
        if out.is_relative_to(where) and where.is_dir():
            raise ValueError(f"`{option}` {output} is inside the input folder `{flag}` {path}; write it elsewhere")


def check_output_path(
    output: str | Path,
    *,
    input_files: Iterable[str | Path] = (),
    input_dirs: Iterable[str | Path] = (),
    read_suffixes: Iterable[str] | None = None,
    option: str = "output",
    is_folder: bool | None = None,
) -> Path:
    """``output`` resolved, after checking it is none of the inputs (links resolved).

    An output *folder* must not be an input folder; an output *file* must not be an input file, nor an input
    folder. An output file inside an input folder (at any depth) must not have a name ending in one of
    ``read_suffixes`` (the kinds of file the command reads from its folders, e.g. ``(".png", ".txt")``): it could be
    one of the inputs, or be read as one by the next run. With ``read_suffixes=None`` (kinds unknown) an existing
    file inside an input folder is refused. Raises ``ValueError`` naming ``option`` and the clashing input.

    The output must also be writable, checked before any work by :func:`check_writable` (an output file that is
    an existing folder is refused, and so is ``--json /proc/x/scores.json``), naming the path as given.
    """
    check_writable(output, option=option, is_folder=is_folder)
    out = _resolved(output)
    if is_special_file(output):
        return out
    for path in input_files:
        if path is not None and _resolved(path) == out:
            raise ValueError(f"`{option}` {output} is one of the inputs ({path}); refusing to overwrite it")
        with contextlib.suppress(OSError):
            if out.exists() and Path(path).exists() and os.path.samefile(out, path):
                raise ValueError(f"`{option}` {output} is the same file as the input {path}; refusing to overwrite it")
    suffixes = None if read_suffixes is None else tuple(s.lower() for s in read_suffixes)
    for folder in input_dirs:
        if folder is None:
            continue
        root = _resolved(folder)
        if root == out:
            raise ValueError(f"`{option}` {output} is the input folder {folder}; choose another folder")
        if not root.is_dir() or out.is_dir() or not out.is_relative_to(root):
            continue  # an output folder inside an input folder holds new files only
        if suffixes is None and out.exists():
            raise ValueError(
                f"`{option}` {output} is an existing file inside the input folder {folder}; refusing to overwrite it"
            )
        if suffixes is not None and out.name.lower().endswith(suffixes):
            raise ValueError(
                f"`{option}` {output} is inside the input folder {folder} and named like the files read from it "
                f"({', '.join(suffixes)}); write it elsewhere"
            )
    return out


def check_writable(output: str | Path, *, option: str = "output", is_folder: bool | None = None) -> None:
    """Raise ``ValueError`` naming ``option`` and ``output`` (as given) unless ``output`` can be written.

    An output file (``is_folder=False``) must not be an existing folder, an output folder (``True``) not an
    existing file (``None``: either); the nearest existing folder on the way to ``output`` must accept a new file
    (probed by creating and removing an empty temporary file there).
    """
    path = Path(output).expanduser()
    if is_special_file(path):  # /dev/null, a FIFO, /dev/stdout: written directly
        if is_folder:
            raise ValueError(f"`{option}` {output} is a special file; expected a folder")
        if not os.access(path, os.W_OK):
            raise ValueError(f"`{option}` {output}: cannot write there (permission denied)")
        return
    if is_folder is False and path.is_dir():
        raise ValueError(f"`{option}` {output} is a folder; expected a file name")
    if is_folder and path.exists() and not path.is_dir():
        raise ValueError(f"`{option}` {output} is a file; expected a folder")
    parent = (path if is_folder or (is_folder is None and path.is_dir()) else path.parent).absolute()
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"`{option}` {output}: {parent} is not a folder")
    try:
        handle, name = _create_temporary(parent / (path.name or "output"))
    except OSError as err:
        raise ValueError(f"`{option}` {output}: cannot write there ({err.strerror or type(err).__name__})") from None
    os.close(handle)
    with contextlib.suppress(OSError):
        os.unlink(name)


def _create_temporary(target: Path) -> tuple[int, str]:
    """A new, exclusively created temporary file beside ``target``: ``(descriptor, name)``.

    Its mode is the one ``target`` would get from a plain ``open``: the mode of the file it replaces, or for a new
    file ``0o666`` minus the umask (applied by the kernel at creation, so the process umask is never changed and
    default ACLs of the folder apply as usual). ``tempfile.mkstemp`` would give ``0o600`` every time.
    """
    try:
        replaced_mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        replaced_mode = None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    stem = target.name
    while len(os.fsencode(stem)) > 200:  # ".NAME.XXXXXXXX.tmp" within NAME_MAX (255 bytes) for any legal NAME
        stem = stem[:-1]
    for _ in range(100):
        name = str(target.parent / f".{stem}.{secrets.token_hex(4)}.tmp")
        try:
            handle = os.open(name, flags, 0o666)
        except FileExistsError:
            continue
        if replaced_mode is not None:
            try:
                os.chmod(handle if os.chmod in os.supports_fd else name, replaced_mode)
            except BaseException:
                os.close(handle)
                with contextlib.suppress(OSError):
                    os.unlink(name)
                raise
        return handle, name
    raise FileExistsError(f"cannot create a temporary file beside {target}")


class InputFiles:
    """The identities of a command's input files (resolved paths and device / inode numbers), to check each output
    against just before it is written: a link inside the output folder pointing at an input (``out/a.png ->
    ../in/a.png``), or an input that is a link to an output-to-be, is caught whatever the folders look like.
    """

    def __init__(self, paths: Iterable[str | Path] = ()) -> None:
        self._paths: dict[Path, Path] = {}
        self._inodes: dict[tuple[int, int], Path] = {}
        for path in paths:
            self.add(path)

    def add(self, path: str | Path) -> None:
        self._paths.setdefault(_resolved(path), Path(path))
        with contextlib.suppress(OSError):
            st = os.stat(path)
            self._inodes.setdefault((st.st_dev, st.st_ino), Path(path))

    def check(self, output: str | Path, option: str = "output") -> None:
        """Raise ``ValueError`` when ``output`` (links resolved) is one of the input files."""
        clash = self._paths.get(_resolved(output))
        if clash is None:
            with contextlib.suppress(OSError):
                st = os.stat(output)
                clash = self._inodes.get((st.st_dev, st.st_ino))
        if clash is not None:
            raise ValueError(f"{option} {output} is the input file {clash} (through a link); refusing to overwrite it")


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path`` for writing; on success it replaces ``path``, on error it is removed.

    Creates missing parent folders. ``mode`` is ``"w"`` (text; pass ``encoding``) or ``"wb"``. A special file
    (:func:`is_special_file`: ``/dev/null``, a FIFO, ``/dev/stdout``) is opened and written directly instead.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"`mode` must be 'w' or 'wb', got {mode!r}")
    target = Path(path)
    if is_special_file(target):  # /dev/null, a FIFO, /dev/stdout: written into, never replaced
        with open(target, mode, **kwargs) as stream:
            yield stream
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp_name = _create_temporary(target)
    try:
        with os.fdopen(handle, mode, **kwargs) as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically (temporary file in the same folder, then rename)."""
    with atomic_open(path, "w", encoding=encoding, newline="") as stream:
        stream.write(text)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temporary file in the same folder, then rename)."""
    with atomic_open(path, "wb") as stream:
        stream.write(data)


def atomic_save_png(path: str | Path, array: np.ndarray) -> None:
    """Save a ``uint8`` ``(H, W)`` or ``(H, W, 3)`` array as PNG, atomically."""
    from PIL import Image

    with atomic_open(path, "wb") as stream:
        Image.fromarray(array).save(stream, format="PNG")


def atomic_save_figure(fig: Any, path: str | Path, **kwargs: Any) -> None:
    """``fig.savefig`` atomically; the format comes from ``path``'s suffix."""
    fmt = Path(path).suffix.lstrip(".") or "png"
    with atomic_open(path, "wb") as stream:
        fig.savefig(stream, format=fmt, **kwargs)


def present_file(path: str | Path, what: str = "file") -> bool:
    """``True`` when ``path`` is a regular file (links followed), ``False`` when nothing is there at all; anything
    else is refused in one ``ValueError`` naming ``path``: a folder, a dangling or looping link, a device or FIFO.

    For the readers that treat a missing file as "no objects" or "category absent": a folder or a broken link in
    its place is a mistake to report, not an empty input.
    """
    name = os.fspath(path)
    try:
        mode = os.stat(name).st_mode
    except FileNotFoundError:
        if os.path.islink(name):
            raise ValueError(
                f"{name}: a dangling link (its target {os.readlink(name)} does not exist); expected a {what}"
            ) from None
        return False
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise ValueError(f"{name}: a looping link; expected a {what}") from None
        raise ValueError(f"{name}: cannot be read ({err.strerror or type(err).__name__}); expected a {what}") from None
    if stat.S_ISDIR(mode):
        raise ValueError(f"{name}: is a folder; expected a {what}")
    if not stat.S_ISREG(mode):
        raise ValueError(f"{name}: not a regular file; expected a {what}")
    return True


def read_text(path: str | Path, *, what: str = "file") -> str:
    """The UTF-8 text of ``path``, newlines translated to ``"\\n"`` as a text-mode ``open`` does.

    Invalid UTF-8 raises ``ValueError`` naming the file, the line and the byte offset (a ``UnicodeDecodeError``
    alone names neither). A missing file raises ``FileNotFoundError`` naming ``what`` and the file.
    """
    path = path if isinstance(path, Path) else Path(path)  # re-wrapping a Path parses it again
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} not found: {path}") from None
    except IsADirectoryError:
        raise ValueError(f"{path}: is a folder, expected a {what}") from None
    return decode_text(data, path, what=what)


def decode_text(data: bytes, path: str | Path, *, what: str = "file") -> str:
    """:func:`read_text` of the bytes ``data`` already read from ``path`` (named in the message of invalid UTF-8)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ValueError(
            f"{path}:{line}: not valid UTF-8 (byte 0x{data[err.start]:02x} at offset {err.start}: {err.reason}); "
            f"expected a UTF-8 {what}"
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")  # universal newlines, as ``open(path)`` reads them


def load_image(path: str | Path, *, what: str = "image") -> Any:
    """The image at ``path`` as a fully decoded ``PIL.Image.Image``.

    Raises ``FileNotFoundError`` for a missing file and ``ValueError`` naming the file for anything Pillow cannot
    decode (truncated data, not an image) and for an image declaring more than ``max_png_pixels`` pixels
    (:mod:`drivemetrics._internal.limits`), refused from its header, before decoding.
    """
    from PIL import Image

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{what} file not found: {path}")
    from drivemetrics._internal.limits import check_image_size

    errors = (OSError, SyntaxError, ValueError, Image.DecompressionBombError)
    try:
        with warnings.catch_warnings():  # Pillow's DecompressionBombWarning: the size is checked below
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(path)  # reads the header only
    except errors as err:
        raise ValueError(f"{path}: cannot decode the {what} ({type(err).__name__}: {err})") from None
    try:
        check_image_size(path, *img.size)  # a decompression bomb is refused before it is decoded
    except ValueError:
        img.close()
        raise
    try:
        img.load()  # decodes everything and closes the file (single-frame images)
    except errors as err:
        raise ValueError(f"{path}: cannot decode the {what} ({type(err).__name__}: {err})") from None
    return img


def check_input_kinds(args: Any) -> None:
    """Refuse, in one line naming the option, an input that is a folder where a file is expected or a file where a
    folder is (the inputs a command declared with :func:`drivemetrics._internal.options.add_input`).

    Paths that do not exist are left to the readers, which say which file is missing.
    """
    for dest, (flag, kind) in (getattr(args, "input_kinds", None) or {}).items():
        value = getattr(args, dest, None)
        for path in value if isinstance(value, (list, tuple)) else [value]:
            if path is None or kind == "file or folder":
                continue
            path = Path(path)
            if kind == "file" and path.is_dir():
                raise ValueError(f"`{flag}` {path} is a folder; expected a file")
            if kind == "folder" and path.exists() and not path.is_dir():
                raise ValueError(f"`{flag}` {path} is not a folder; expected a folder")
