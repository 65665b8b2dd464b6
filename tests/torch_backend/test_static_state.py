"""A static KV cache filled by eager PyTorch, then a decode step through the backend.

transformers marks a StaticCache's tensors static (torch._dynamo.mark_static_address) when
they are first written outside torch.compile, so Dynamo passes them like weights; the graph
updates them in place (index_copy_), so the backend must treat them as inputs it writes back.
"""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import ktir.torch_backend as backend  # noqa: E402


def test_a_cache_filled_eagerly_is_state_not_a_weight() -> None:
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                   num_attention_heads=4, num_key_value_heads=2, use_cache=True)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).eval()
    cache = transformers.StaticCache(config=cfg, max_cache_len=8)
    with torch.no_grad():
        model(input_ids=torch.tensor([[1, 2, 3, 4, 5]]), past_key_values=cache, cache_position=torch.arange(5), use_cache=True)
        eager_cache = copy.deepcopy(cache)
        step = {"input_ids": torch.tensor([[6]]), "cache_position": torch.tensor([5]), "use_cache": True}
        want = model(past_key_values=eager_cache, **step).logits
        backend.reset()
        torch._dynamo.reset()
        compiled = torch.compile(model, backend=backend.ktir_backend, options={"strict": True, "scheduler": None})
        got = compiled(past_key_values=cache, **step).logits
    assert float((got - want).abs().max()) <= 1e-4 * max(1.0, float(want.abs().max()))
    for mine, theirs in zip(cache.layers, eager_cache.layers, strict=True):  # the new key and value were written back
        assert torch.allclose(mine.keys, theirs.keys, atol=1e-5) and torch.allclose(mine.values, theirs.values, atol=1e-5)
