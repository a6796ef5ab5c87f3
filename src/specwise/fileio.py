"""Writing files so that a failure never leaves half of one: the one atomic writer (temp file beside the target,
then rename), with errors that say what went wrong with the destination."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from specwise.errors import SpecwiseError


def write_text_atomic(path: Path, text: str) -> None:
    """``path`` holds ``text`` entirely, or is left as it was; a missing, read-only or full destination is one
    line naming it."""
    if path.is_dir():
        raise SpecwiseError(f"{path}: is a directory; give a file name")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise SpecwiseError(f"{path}: cannot write ({exc.strerror or exc})") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, doc: Any) -> None:
    write_text_atomic(path, json.dumps(doc, indent=2, allow_nan=False) + "\n")
