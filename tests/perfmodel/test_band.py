"""The band printed beside a published-fit speedup: its engine's held-back error, and a caveat on a GPU that no
held-back measurement ran on."""

from __future__ import annotations

from specwise.catalog import resolve_gpu, resolve_model
from specwise.methods import get_method
from specwise.perfmodel.factory import Deployed, fitted_models
from specwise.perfmodel.profiles import published_fit


def _deployed(gpu: str) -> Deployed:
    target = resolve_model("meta-llama/Llama-3.1-8B-Instruct")
    return Deployed(target, resolve_gpu(gpu), 1, get_method("ngram"), None, 1)


def test_vllm_band_is_the_vllm_held_back_error() -> None:
    models = fitted_models(_deployed("H100-SXM-80GB"))
    fit = published_fit()
    assert models.band == fit.band("vllm") != fit.band()
    assert f"{fit.band_records('vllm')} held-back vllm measurements" in models.band_source
    assert "none of them on" not in models.band_source


def test_a_gpu_without_held_back_measurements_is_said() -> None:
    models = fitted_models(_deployed("A100-SXM-80GB"))
    assert "none of them on A100-SXM-80GB" in models.band_source
    assert "H100-SXM-80GB" in models.band_source
