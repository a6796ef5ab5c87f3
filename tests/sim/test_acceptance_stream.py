"""AcceptanceStream hands out exactly the numbers the generator would have, counts acceptance as the per-call
draws would, and leaves the generator where drawing them one call at a time would have."""

from __future__ import annotations

import numpy as np
import pytest

from specwise.sim.drafting import AcceptanceStream

COND = np.array([[0.9, 0.7, 0.5, 0.3], [0.6, 0.6, 0.6, 0.6]])


def _leading(u: np.ndarray, c: np.ndarray) -> list[int]:
    return np.cumprod(u < c, axis=-1).sum(axis=-1).tolist()  # type: ignore[no-any-return]


@pytest.mark.parametrize("bits", [np.random.PCG64, np.random.MT19937])
def test_same_numbers_same_counts_same_state_after(bits: type[np.random.BitGenerator]) -> None:
    mine, plain = np.random.Generator(bits(7)), np.random.Generator(bits(7))
    stream = AcceptanceStream(mine, COND, 4)
    assert np.array_equal(stream.random((3, 4)), plain.random((3, 4)))
    assert np.array_equal(stream.random((2, 5, 4)), plain.random((2, 5, 4)))
    classes = [0, 1, 1, 0, 0]
    expected = [_leading(row, COND[c]) for row, c in zip(plain.random((5, 4)), classes, strict=True)]
    assert stream.accepted(classes) == expected
    big = plain.random((AcceptanceStream.BLOCK_ROWS + 11, 4))  # across a block boundary
    assert stream.accepted_window(AcceptanceStream.BLOCK_ROWS + 11, [1]).ravel().tolist() == _leading(big, COND[1])
    window = plain.random((6, 2, 4))
    assert stream.accepted_window(6, [1, 0]).tolist() == [
        [_leading(step[0], COND[1]), _leading(step[1], COND[0])] for step in window
    ]
    stream.close()
    assert mine.random() == plain.random()
    assert mine.integers(0, 1 << 30) == plain.integers(0, 1 << 30)


def test_only_k_wide_draws() -> None:
    stream = AcceptanceStream(np.random.default_rng(0), COND, 3)
    with pytest.raises(ValueError, match="3 wide"):
        stream.random((2, 4))
