"""Writing files so that a failure never leaves half of one: the one atomic writer (temp file beside the target,
then rename), with errors that say what went wrong with the destination."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from specwise.errors import SpecwiseError


def write_text_atomic(path: Path, text: str) -> None:
    """``path`` holds ``text`` entirely, or is left as it was; a missing, read-only or full destination is one
    line naming it. A symlink is written through (its target gets the text; the link stays), and a device or
    pipe (a FIFO, ``/dev/null``) is written to directly: renaming a temp file over either would replace it. An
    open stream named by descriptor (``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``) is written into as it is
    open -- appended to a file redirected with ``>>``, into a pipe -- never reopened or replaced."""
    fd = stream_fd(path)
    if fd is not None:
        _write_fd(path, fd, text)
        return
    if _special(path):
        try:
            with path.open("w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise SpecwiseError(f"{path}: cannot write ({exc.strerror or exc})") from None
        return
    shown, path = path, _through_links(path)
    tmp = _tmp(path)
    try:
        _check_destination(path)
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)
    except OSError as exc:
        _discard(tmp)
        raise SpecwiseError(f"{shown}: cannot write ({exc.strerror or exc})") from None
    except BaseException:
        _discard(tmp)
        raise


_STD_STREAMS = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
_FD_DIRS = ("/dev/fd", "/proc/self/fd")


def stream_fd(path: Path) -> int | None:
    """The descriptor ``path`` names when it is one of this process's open streams (``/dev/stdout``,
    ``/dev/fd/3``, ``/proc/self/fd/1``), else None: opening such a path reopens what the descriptor points at
    (truncating a file the shell opened for appending), so it is written through the descriptor instead."""
    text = os.path.normpath(str(path))
    if text in _STD_STREAMS:
        return _STD_STREAMS[text]
    head, _, tail = text.rpartition("/")
    own = f"/proc/{os.getpid()}/fd"
    if (head in _FD_DIRS or head == own) and tail.isdigit():
        return int(tail)
    return None


def _write_fd(shown: Path, fd: int, text: str) -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()  # what was printed before comes first
    try:
        with open(fd, "w", encoding="utf-8", closefd=False) as fh:
            fh.write(text)
    except OSError as exc:
        raise SpecwiseError(f"{shown}: cannot write ({exc.strerror or exc})") from None


def _through_links(path: Path) -> Path:
    """Where writing ``path`` lands: a symlink's final target (a dangling one's too), else ``path`` itself."""
    return path.resolve() if path.is_symlink() else path


def _special(path: Path) -> bool:
    """An existing path that is not a regular file or a directory, links followed: a device, a FIFO, a socket
    or a pipe behind ``/proc/PID/fd`` (whose resolved name does not exist)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _discard(tmp: Path) -> None:
    with contextlib.suppress(OSError):
        tmp.unlink()


def write_json_atomic(path: Path, doc: Any) -> None:
    write_text_atomic(path, json.dumps(doc, indent=2, allow_nan=False) + "\n")


def write_files_atomic(files: dict[Path, bytes]) -> None:
    """Write a set of files all-or-nothing: every one goes to a temp file first; only when all are written are
    they renamed into place. On failure none of the set is left (a previous set in place stays as it was)."""
    for path in files:
        if stream_fd(path) is not None or _special(path):
            raise SpecwiseError(f"{path}: not a regular file (a device, pipe or socket); give a file name")
    files = {_through_links(path): data for path, data in files.items()}
    done: list[Path] = []
    try:
        for path in files:
            _check_destination(path)
        for path, data in files.items():
            tmp = _tmp(path)
            done.append(tmp)
            with tmp.open("wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        for path in files:
            _tmp(path).replace(path)
    except OSError as exc:
        for tmp in done:
            with contextlib.suppress(OSError):
                tmp.unlink()
        raise SpecwiseError(
            f"{exc.filename or next(iter(files)).parent}: cannot write ({exc.strerror or exc})"
        ) from None


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _check_destination(path: Path) -> None:
    """A clear line for a destination that cannot be a file: a directory, or a parent that is a file."""
    if path.is_dir():
        raise SpecwiseError(f"{path}: is a directory; give a file name")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise SpecwiseError(f"{parent}: is a file, not a directory")
            break
    path.parent.mkdir(parents=True, exist_ok=True)


def check_output_dir(path: Path) -> None:
    """Fail early (before any work) when ``path`` cannot become a directory of outputs."""
    if path.exists() and not path.is_dir():
        raise SpecwiseError(f"{path}: is a file, not a directory (give a directory for the outputs)")
    if path.is_dir():
        _check_writable(path)
        return
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise SpecwiseError(f"{parent}: is a file, not a directory")
            _check_writable(parent)
            return


def _check_writable(directory: Path) -> None:
    """One line when nothing can be created in ``directory``. ``os.access`` alone passes for root wherever the
    file system is not read-only (``/proc``, ``/sys`` refuse every new name), so a file is created there and
    removed at once."""
    if not os.access(directory, os.W_OK | os.X_OK):
        raise SpecwiseError(f"{directory}: not writable")
    try:
        fd, probe = tempfile.mkstemp(prefix=".specwise-probe-", dir=directory)
    except OSError as exc:
        raise SpecwiseError(f"{directory}: not writable (creating a file there: {exc.strerror or exc})") from None
    os.close(fd)
    _discard(Path(probe))


def read_bytes_bounded(path: Path, max_bytes: int, what: str) -> bytes:
    """The bytes of ``path`` if it is a readable file of at most ``max_bytes``; one line naming the file otherwise.
    Never reads more than ``max_bytes + 1`` (``/dev/zero`` or a stray multi-GB file is refused, not loaded)."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(max_bytes + 1)
    except FileNotFoundError:
        raise SpecwiseError(f"{path}: no such {what} file") from None
    except IsADirectoryError:
        raise SpecwiseError(f"{path}: is a directory, expected a {what} file") from None
    except OSError as exc:
        raise SpecwiseError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(raw) > max_bytes:
        limit = f"{max_bytes // 2**20} MiB" if max_bytes >= 2**20 else f"{max_bytes:,} bytes"
        raise SpecwiseError(f"{path}: larger than {limit}; not a {what} file")
    return raw


def read_text_bounded(path: Path, max_bytes: int, what: str) -> str:
    """The text of ``path`` (:func:`read_bytes_bounded`), UTF-8, without a leading byte-order mark: Windows editors
    write one, and it is no part of a TOML, JSON or CSV file's content (the JSON readers drop it alike)."""
    raw = read_bytes_bounded(path, max_bytes, what)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecwiseError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); not a {what} file") from None


def check_output_file(
    path: Path, inputs: Iterable[tuple[str, Path | str | None]] = (), flag: str | None = None
) -> None:
    """Fail early (before any work) when ``path`` cannot be written as a file, or is one of the command's
    ``inputs`` (what it reads, by the flag that names it) or lies inside an input directory (a model's): an output
    never overwrites its own input. ``flag`` (the output's) starts the message when given."""
    shown = f"{flag} {path}" if flag else str(path)
    if path.is_dir():
        raise SpecwiseError(f"{shown}: is a directory; give a file name")
    for source_flag, source in inputs:
        if source is None:
            continue
        if same_file(path, Path(source)):
            raise SpecwiseError(f"{shown}: is the {source_flag} file this command reads; write the output elsewhere")
        if inside_dir(path, Path(source)):
            raise SpecwiseError(
                f"{shown}: is in the {source_flag} directory {source}, which this command reads; write the output "
                "elsewhere"
            )
    if stream_fd(path) is not None or _special(path):
        return  # an open stream, a device or a pipe is written to as it is (write_text_atomic)
    try:
        check_output_dir(_through_links(path).parent)
    except SpecwiseError as exc:  # which output it was: two flags may name two unwritable places
        raise SpecwiseError(f"{flag} {path}: {exc}" if flag else str(exc)) from None


def refuse_a_foreign_file(out: str | Path, ours: Callable[[str], bool], flag: str = "--out") -> None:
    """An existing, non-empty regular file that the command did not write (``ours`` says of its text) is not
    overwritten: a mistyped ``export grafana --out README.md`` replaced the README without a word (review s59), and
    ``calibrate --out`` did the same to any file (review s60). A file an earlier run wrote is written again."""
    path = Path(out)
    if stream_fd(path) is not None:  # /dev/stdout and the like: a stream the shell opened, appended to as it is
        return
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return
        with path.open("rb") as fh:  # its head only: an --out that names a large file is not read whole
            text = fh.read(4 * 1024 * 1024).decode("utf-8", "replace")
    except OSError:
        return  # unreadable: check_output_file and the write say what is wrong
    if not ours(text):
        raise SpecwiseError(
            f"{flag} {out}: exists and is not a file this command wrote; remove it first or write elsewhere"
        )


def inside_dir(path: Path, directory: Path) -> bool:
    """``path`` (links followed, existing or not) lies somewhere under the existing directory ``directory``."""
    if not directory.is_dir():
        return False
    try:
        return path.resolve().is_relative_to(directory.resolve())
    except (OSError, RuntimeError):  # a symlink loop
        return False


def same_file(a: Path, b: Path) -> bool:
    """The same file, however it is named (links, relative paths); paths that do not exist compare resolved."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()
