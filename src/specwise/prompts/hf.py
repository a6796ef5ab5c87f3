"""Records from a local Hugging Face dataset (the ``datasets`` extra), offline.

``hf:PATH`` names a ``save_to_disk`` directory (``datasets.load_from_disk``), a directory of data files, or one
parquet/arrow/json/jsonl/csv file (``datasets.load_dataset(BUILDER, data_files=PATH)``). Hub access is switched off
(``HF_DATASETS_OFFLINE``/``HF_HUB_OFFLINE``): a dataset is never downloaded and no dataset script is run. The
``train`` split is read, or the only split there is.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from specwise.errors import SpecwiseError
from specwise.extras import require

BUILDERS = {".parquet": "parquet", ".arrow": "arrow", ".json": "json", ".jsonl": "json", ".csv": "csv"}


def _datasets() -> Any:
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ["HF_HUB_OFFLINE"] = "1"
    require("datasets", "--prompts hf:PATH")
    import datasets

    datasets.disable_progress_bars()
    return datasets


def load_hf_records(path: Path) -> Iterator[object]:
    """The rows of the dataset at ``path`` (mappings of column -> value)."""
    if not path.exists():
        raise SpecwiseError(f"hf:{path}: no such file or directory (only local datasets are read)")
    ds = _datasets()
    try:
        if path.is_dir() and ((path / "state.json").exists() or (path / "dataset_dict.json").exists()):
            loaded = ds.load_from_disk(str(path))
        elif path.is_dir():
            loaded = ds.load_dataset(str(path))
        else:
            builder = BUILDERS.get(path.suffix)
            if builder is None:
                raise SpecwiseError(f"hf:{path}: expected a directory or a {', '.join(BUILDERS)} file")
            loaded = ds.load_dataset(builder, data_files=str(path))
    except SpecwiseError:
        raise
    except Exception as exc:  # datasets raises many kinds (pyarrow, FileNotFound, DatasetGenerationError, ...)
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SpecwiseError(f"hf:{path}: cannot load the dataset ({message[:300]})") from None
    yield from _split(loaded, path)


def _split(loaded: Any, path: Path) -> Iterator[object]:
    if isinstance(loaded, Mapping):  # a DatasetDict
        names = list(loaded)
        if not names:
            raise SpecwiseError(f"hf:{path}: the dataset has no splits")
        name = "train" if "train" in names else names[0] if len(names) == 1 else None
        if name is None:
            raise SpecwiseError(f"hf:{path}: several splits ({', '.join(names)}) and none named train")
        loaded = loaded[name]
    yield from loaded
