"""Hugging Face `transformers` models built from tiny configs in code (random weights, nothing
downloaded), lowered whole through `from_torch` and run in the reference interpreter against
torch eager. Tolerance: max error <= TOL * max(1, max |eager|).

IBM Granite 4 Hybrid (GraniteMoeHybrid: Mamba2 + attention + mixture of experts) and
GraniteMoe as causal LMs in f32 and f16, the hybrid's Mamba and attention decoder layers
alone, and one-layer Llama, Granite, Qwen2, Mistral, GPT-2 and BERT.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from torch import nn  # noqa: E402

from tests.lower.torch.lowered import from_torch  # noqa: E402

TOL = {torch.float32: 1e-4, torch.float16: 2e-2}
VOCAB, SEQ = 128, 16


def hybrid_config(layers: list[str], **extra: Any) -> Any:
    """Granite 4 Hybrid in miniature: 4 Mamba2 heads of 32 (state 16, chunk 8: two chunks
    over the sequence), 4 attention heads over 2 KV heads, top-2 of 4 experts."""
    return transformers.GraniteMoeHybridConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=64, shared_intermediate_size=64, num_hidden_layers=len(layers),
        layer_types=layers, num_attention_heads=4, num_key_value_heads=2, mamba_n_heads=4, mamba_d_head=32, mamba_d_state=16,
        mamba_n_groups=1, mamba_d_conv=4, mamba_expand=2, mamba_chunk_size=8, num_local_experts=4, num_experts_per_tok=2,
        max_position_embeddings=64, use_cache=False, **extra,
    )


def moe_config() -> Any:
    return transformers.GraniteMoeConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        num_local_experts=4, num_experts_per_tok=2, max_position_embeddings=64, use_cache=False,
    )


def ids() -> Any:
    return torch.randint(0, VOCAB, (1, SEQ), generator=torch.Generator().manual_seed(1))


def first(out: Any) -> Any:
    if isinstance(out, torch.Tensor):
        return out
    return out[0]


def compare(model: Any, inputs: tuple[Any, ...], program: Any, dtype: Any) -> float:
    got = program.run(*inputs)
    got = got if isinstance(got, np.ndarray) else got[0]
    with torch.no_grad():
        want = first(model(*inputs)).float().numpy()
    assert got.shape == want.shape
    err = float(np.abs(got.astype(np.float32) - want).max())
    bound = TOL[dtype] * max(1.0, float(np.abs(want).max()))
    assert err <= bound, f"max error {err} > {bound}"
    return err


def lowered_lm(cls: Any, config: Any, dtype: Any) -> tuple[Any, tuple[Any, ...], Any]:
    torch.manual_seed(0)
    model = cls(config).eval().to(dtype)
    inputs = (ids(),)
    return model, inputs, from_torch(model, inputs)


# ------------------------------------------------------------------ Granite 4 Hybrid, GraniteMoe

DTYPES = pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["f32", "f16"])


@pytest.fixture(scope="module", params=[torch.float32, torch.float16], ids=["f32", "f16"])
def hybrid_lm(request):  # type: ignore[no-untyped-def]
    return lowered_lm(transformers.GraniteMoeHybridForCausalLM, hybrid_config(["mamba", "attention"]), request.param)


def test_granite_hybrid_causal_lm_matches_eager(hybrid_lm) -> None:  # type: ignore[no-untyped-def]
    model, inputs, program = hybrid_lm
    compare(model, inputs, program, next(model.parameters()).dtype)


def test_granite_hybrid_program_has_the_mamba_and_moe_kernels(hybrid_lm) -> None:  # type: ignore[no-untyped-def]
    _, _, program = hybrid_lm
    kinds = [k.kind for k in program.manifest.kernels]
    assert kinds.count("conv1d") == 1  # the Mamba layer's short convolution
    assert kinds.count("cumsum") >= 2  # the chunked scan's decay sums
    assert kinds.count("topk") == 2  # one router per layer
    # each layer's experts: a grouped matmul for gate_up and one for down, over token rows sorted by expert
    assert kinds.count("experts") == 4 and kinds.count("sort") == 2 * 3 and kinds.count("histc") == 2  # a sort: ranks, values, ids
    # the gathers move token rows and routing weights, never expert weights
    weights = {b.name for b in program.manifest.buffers if b.kind == "parameter"}
    gathers = [k for k in program.manifest.kernels if k.kind == "gather"]
    assert gathers and not any(set(k.reads) & weights for k in gathers), [(k.name, k.reads) for k in gathers]
    assert kinds.count("attention") == 1
    # the new kernels are split over the cores (heads, channels, rows)
    new = [k for k in program.manifest.kernels if k.kind in ("conv1d", "cumsum", "topk", "gather", "pad", "experts")
           and not re.search(r"over dim 0 of \[\d+\]$", k.description)]  # but a 1-D scan (the experts' row offsets)
    assert all(np.prod(k.grid) > 1 for k in new), [(k.name, k.grid) for k in new]
    # the user's model is left with its own experts implementation
    assert program.manifest.inputs[0].dtype == "i64"


def test_export_leaves_the_experts_implementation_as_it_was(hybrid_lm) -> None:  # type: ignore[no-untyped-def]
    model, _, _ = hybrid_lm
    assert model.config._experts_implementation == "grouped_mm"


@DTYPES
def test_granite_moe_causal_lm_matches_eager(dtype) -> None:  # type: ignore[no-untyped-def]
    model, inputs, program = lowered_lm(transformers.GraniteMoeForCausalLM, moe_config(), dtype)
    compare(model, inputs, program, dtype)
    assert [k.kind for k in program.manifest.kernels].count("topk") == 2


class AttentionLayer(nn.Module):
    """A hybrid model's attention decoder layer with its rotary tables (the model computes them once)."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.rotary = model.model.rotary_emb
        self.layer = model.model.layers[0]

    def forward(self, x: Any) -> Any:
        positions = torch.arange(x.shape[1])[None]
        return self.layer(x, position_embeddings=self.rotary(x, positions))


def _initialised(layers: list[str], **extra: Any) -> Any:
    """A hybrid model (its constructor initialises the weights a bare layer would leave empty)."""
    torch.manual_seed(0)
    return transformers.GraniteMoeHybridForCausalLM(hybrid_config(layers, **extra)).eval()


def test_granite_hybrid_mamba_layer_matches_eager() -> None:
    mixer = _initialised(["mamba"]).model.layers[0].mamba
    x = torch.randn(1, SEQ, 64)
    program = from_torch(mixer, (x,))
    compare(mixer, (x,), program, torch.float32)
    kinds = [k.kind for k in program.manifest.kernels]
    assert {"conv1d", "cumsum", "matmul"} <= set(kinds) and "topk" not in kinds


def test_granite_hybrid_attention_layer_matches_eager() -> None:
    layer = AttentionLayer(_initialised(["attention"], position_embedding_type="rope")).eval()  # the 2-layer LM has no RoPE
    x = torch.randn(1, SEQ, 64)
    program = from_torch(layer, (x,))
    compare(layer, (x,), program, torch.float32)
    kinds = [k.kind for k in program.manifest.kernels]
    assert "attention" in kinds and "topk" in kinds and "conv1d" not in kinds


# ------------------------------------------------------------------ other model families (they lowered before; keep them)


def _llama_like(name: str) -> Any:
    cfg = getattr(transformers, f"{name}Config")
    return cfg(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
               max_position_embeddings=64, use_cache=False)


FAMILIES = {
    "llama": lambda: (transformers.LlamaForCausalLM, _llama_like("Llama")),
    "granite": lambda: (transformers.GraniteForCausalLM, _llama_like("Granite")),
    "qwen2": lambda: (transformers.Qwen2ForCausalLM, _llama_like("Qwen2")),
    "mistral": lambda: (transformers.MistralForCausalLM, _llama_like("Mistral")),
    "gpt2": lambda: (transformers.GPT2LMHeadModel, transformers.GPT2Config(vocab_size=VOCAB, n_embd=64, n_layer=1, n_head=4, n_positions=64, use_cache=False)),
    "bert": lambda: (transformers.BertModel, transformers.BertConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=1, num_attention_heads=4,
                                                                     intermediate_size=128, max_position_embeddings=64)),
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_model_family_lowers_and_matches_eager(family: str) -> None:
    cls, config = FAMILIES[family]()
    model, inputs, program = lowered_lm(cls, config, torch.float32)
    compare(model, inputs, program, torch.float32)
