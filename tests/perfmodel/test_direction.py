"""The direction caveat (perfmodel.factory.direction_notes): where the predictor's held-back record puts speedups on
the wrong side of 1 (faster or slower than plain decoding) too often, every result says so -- a band of relative
error does not: SGLang's published-fit band is +-33% while it calls the side of 1 right in 56% of SGLang's
held-back records and predicts 5 of their 19 slowdowns below 1 (2026-12-05; ``specwise validate`` prints them)."""

from __future__ import annotations

import pytest

from specwise.catalog import resolve_gpu, resolve_model
from specwise.methods import get_method
from specwise.perfmodel.factory import (
    MIN_DIRECTION_AGREEMENT,
    MIN_SLOWDOWNS_CAUGHT,
    Deployed,
    direction_notes,
    fitted_models,
    roofline_models,
)
from specwise.perfmodel.profiles import published_fit


def _deployed(gpu: str) -> Deployed:
    target, draft = resolve_model("meta-llama/Llama-3.1-8B-Instruct"), resolve_model("meta-llama/Llama-3.2-1B-Instruct")
    return Deployed(target, resolve_gpu(gpu), 1, get_method("draft_model"), draft, 1)


def _poor(engine: str, segment: str | None, *, roofline: bool = False) -> bool:
    sign, caught, slowdowns = published_fit().direction(engine, segment, roofline=roofline)
    return (sign is not None and sign < MIN_DIRECTION_AGREEMENT) or (
        slowdowns >= 5 and caught < MIN_SLOWDOWNS_CAUGHT * slowdowns
    )


@pytest.mark.parametrize(
    ("engine", "gpu"),
    [("vllm", "H100-SXM-80GB"), ("sglang", "H100-SXM-80GB"), ("vllm", "RTX-4060-Laptop"), ("vllm", "RTX-4090")],
)
def test_the_caveat_follows_the_fit_files_record(engine: str, gpu: str) -> None:
    models = fitted_models(_deployed(gpu), engine)
    segment = resolve_gpu(gpu).segment
    assert bool(models.direction_caveat) == _poor(engine, segment)
    assert (models.direction_caveat in models.notes) if models.direction_caveat else not models.notes


def test_sglang_and_consumer_cards_carry_it_and_data_centre_vllm_does_not() -> None:
    """Today's fit file: vLLM on data-centre GPUs 97% on the right side (1 of 2 slowdowns); SGLang 44% (5 of 14);
    vLLM on consumer cards 50% (4 of 18)."""
    assert not fitted_models(_deployed("H100-SXM-80GB"), "vllm").direction_caveat
    sglang = fitted_models(_deployed("H100-SXM-80GB"), "sglang").direction_caveat
    sign, caught, slowdowns = published_fit().direction("sglang", "datacenter")
    assert sign is not None
    assert f"put {sign:.0%} of its speedups on the measured side of 1" in sglang
    assert f"predicted {caught} of {slowdowns} measured slowdowns below 1" in sglang
    assert "on the held-back sglang measurements on data-centre GPUs the published fit" in sglang
    laptop = fitted_models(_deployed("RTX-4060-Laptop"), "vllm").direction_caveat
    assert "on consumer GPUs" in laptop and laptop.endswith("a guess until measured (specwise bench)")
    assert not roofline_models(*_roofline_args("H100-SXM-80GB")).direction_caveat


def _roofline_args(gpu: str) -> tuple[object, ...]:
    d = _deployed(gpu)
    return d.target, d.gpu, d.tp, d.method, d.draft, d.draft_tp


def test_a_good_record_says_nothing() -> None:
    class Fit:
        def direction(self, *a: object, **k: object) -> tuple[float | None, int, int]:
            return 0.9, 3, 4

        def band_segment(self, engine: str, segment: str | None, **k: object) -> str | None:
            return segment

    assert direction_notes(Fit(), "vllm", "datacenter", "x") == ()  # type: ignore[arg-type]

    class FewSlowdownsCaught(Fit):
        def direction(self, *a: object, **k: object) -> tuple[float | None, int, int]:
            return 0.9, 2, 5  # the sign is fine; 2 of 5 slowdowns is not

    class UnrecordedSign(Fit):
        def direction(self, *a: object, **k: object) -> tuple[float | None, int, int]:
            return None, 0, 6

    assert direction_notes(FewSlowdownsCaught(), "vllm", "datacenter", "x")  # type: ignore[arg-type]
    (note,) = direction_notes(UnrecordedSign(), "vllm", "datacenter", "x")  # type: ignore[arg-type]
    assert "x predicted 0 of 6 measured slowdowns below 1" in note and "%" not in note
