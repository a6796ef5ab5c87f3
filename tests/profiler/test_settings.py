import numpy as np
import pytest

from specwise.errors import SpecwiseError
from specwise.profiler.bootstrap import ratio_ci
from specwise.profiler.quantize_spec import label, parse_quantize
from specwise.profiler.settings import ProfileSettings, parse_k_values, parse_temperatures


def test_parse_k_values() -> None:
    assert parse_k_values("1-4") == (1, 2, 3, 4)
    assert parse_k_values("4,1,2,2") == (1, 2, 4)
    for bad in ("0", "0-3", "a", "5-2", "17", "1-3000000000", "1-99999999999999999999"):
        with pytest.raises(SpecwiseError, match="--k"):
            parse_k_values(bad)


def test_parse_temperatures() -> None:
    assert parse_temperatures("0, 0.5,1") == (0.0, 0.5, 1.0)
    with pytest.raises(SpecwiseError, match=">= 0"):
        parse_temperatures("0,-0.5")
    with pytest.raises(SpecwiseError, match="expected numbers"):
        parse_temperatures("hot")


def test_parse_quantize() -> None:
    assert parse_quantize("draft=int8,target=INT4") == {"draft": "int8", "target": "int4"}
    assert label({"target": "int4", "draft": "int8"}) == "draft=int8,target=int4"
    for bad in ("draft=int3", "model=int8", "draft=int8,draft=fp8", ""):
        with pytest.raises(SpecwiseError):
            parse_quantize(bad)


def test_settings_validation() -> None:
    with pytest.raises(SpecwiseError, match="prompt_lookup_min"):
        ProfileSettings(prompt_lookup_min=4, prompt_lookup_max=2)
    with pytest.raises(SpecwiseError, match="no draft model"):
        ProfileSettings(method="ngram", quantizations=({"draft": "int8"},))
    assert ProfileSettings(method="ngram").drafting_modes == ("greedy",)
    groups = ProfileSettings(temperatures=(1.0, 0.0), contexts="shared").continuation_temperature_groups()
    assert groups == [(0.0, (0.0, 1.0))]


def test_bootstrap_ci_brackets_the_ratio() -> None:
    rng = np.random.default_rng(0)
    num = rng.uniform(5, 10, size=30)
    den = num / rng.uniform(0.5, 0.9, size=30)
    lo, hi = ratio_ci(num, den, np.random.default_rng(1))
    assert lo < num.sum() / den.sum() < hi
    assert all(np.isnan(ratio_ci(num[:1], den[:1], rng)))
