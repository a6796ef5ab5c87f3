import numpy as np
import pytest
import torch

from specwise.profiler.analysis import draft_accept_probs
from specwise.profiler.distributions import greedy_accept, softmax, sum_min
from specwise.profiler.sampling import probs


def test_sum_min_on_hand_made_distributions() -> None:
    p = np.array([[0.5, 0.3, 0.2], [1.0, 0.0, 0.0], [0.25, 0.25, 0.5]])
    q = np.array([[0.2, 0.3, 0.5], [0.0, 1.0, 0.0], [0.25, 0.25, 0.5]])
    assert sum_min(p, q) == pytest.approx([0.2 + 0.3 + 0.2, 0.0, 1.0])


def test_greedy_accept_is_target_prob_of_draft_argmax() -> None:
    p = np.array([[0.5, 0.3, 0.2]])
    q = np.array([[0.1, 0.6, 0.3]])
    assert greedy_accept(p, q) == pytest.approx([0.3])


def test_self_pair_probabilistic_is_one_and_greedy_is_expected_max() -> None:
    logits = np.random.default_rng(0).normal(size=(5, 50)) * 3
    p = softmax(logits, 1.0)
    assert sum_min(p, p) == pytest.approx(np.ones(5))
    assert greedy_accept(p, p) == pytest.approx(p.max(axis=1))
    p0 = softmax(logits, 0.0)
    assert greedy_accept(p0, p0) == pytest.approx(np.ones(5))


def test_torch_and_numpy_paths_agree() -> None:
    rng = np.random.default_rng(1)
    lt, ld = rng.normal(size=(4, 30)), rng.normal(size=(4, 30))
    for t in (0.0, 0.7, 1.0):
        p, q = probs(torch.tensor(lt), t), probs(torch.tensor(ld), t)
        ref_p, ref_q = softmax(lt, t), softmax(ld, t)
        assert draft_accept_probs(p, q, "probabilistic", torch.tensor(ld)) == pytest.approx(sum_min(ref_p, ref_q))
        assert draft_accept_probs(p, q, "greedy", torch.tensor(ld)) == pytest.approx(greedy_accept(ref_p, ref_q))


def test_top_k_and_top_p() -> None:
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    assert probs(logits, 1.0, top_k=2)[0].tolist() == pytest.approx([0.625, 0.375, 0, 0])
    assert probs(logits, 1.0, top_p=0.8)[0].tolist() == pytest.approx([0.625, 0.375, 0, 0])
    assert probs(logits, 1.0, top_p=0.81)[0].tolist() == pytest.approx([0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0])
    assert probs(logits, 0.0)[0].tolist() == [1, 0, 0, 0]
