import torch

from specwise.profiler.quantize import quantize_model, rtn


def test_int8_error_within_half_a_step() -> None:
    w = torch.randn(16, 256)
    deq = rtn(w, "int8")
    step = w.abs().amax(dim=1, keepdim=True) / 127
    assert torch.all((deq - w).abs() <= step / 2 + 1e-6)
    assert not torch.equal(deq, w)


def test_int4_groups_of_128_have_at_most_16_levels() -> None:
    w = torch.randn(4, 300)  # padded last group
    deq = rtn(w, "int4")
    assert deq.shape == w.shape
    for g in range(0, 256, 128):
        assert len(torch.unique(deq[0, g : g + 128])) <= 16
    assert (deq - w).abs().max() < (w.max() - w.min()) / 15


def test_fp8_is_close_and_lossy() -> None:
    w = torch.randn(8, 64)
    deq = rtn(w, "fp8")
    rel = ((deq - w).abs() / w.abs().clamp(min=1e-3)).median()
    assert 0 < rel < 0.07


def test_quantize_model_skips_the_head() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 4))

    class Wrapper(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = model

        def get_output_embeddings(self) -> torch.nn.Module:
            return model[1]

    head_before = model[1].weight.clone()
    assert quantize_model(Wrapper(), "int4") == 1
    assert torch.equal(model[1].weight, head_before)
