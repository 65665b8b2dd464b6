"""Hugging Face models (tiny configs, random weights: benchmarks/hf_models.py) through
torch.compile(backend="ktir", options={"strict": True}) against eager: the acceptance set of
issue 32 (Llama, Granite 4 Hybrid, ViT, Whisper's encoder) and greedy decoding of 16 tokens
with a static KV cache. The whole sweep over 30 model classes is benchmarks/sweep_torch_compile.py."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import ktir.torch_backend as backend  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from hf_models import build, token_ids  # noqa: E402

OPTIONS = {"strict": True, "scheduler": None, "estimate": False}
TOL = {torch.float32: 1e-4, torch.float16: 1e-2}


@pytest.fixture(autouse=True)
def _fresh() -> None:
    torch._dynamo.reset()
    backend.reset()


def _first(out: Any) -> Any:
    for name in ("logits", "last_hidden_state"):
        value = getattr(out, name, None)
        if value is not None:
            return value
    return out[0]


@pytest.mark.slow
@pytest.mark.parametrize("name,dtype", [("Llama", torch.float32), ("Llama", torch.float16), ("GraniteMoeHybrid", torch.float32),
                                        ("ViT", torch.float32), ("WhisperEncoder", torch.float32)])
def test_model_matches_eager(name: str, dtype: Any) -> None:
    model, inputs = build(name, dtype)
    compiled = torch.compile(model, backend="ktir", options=OPTIONS)
    with torch.no_grad():
        got, want = _first(compiled(*inputs)).float(), _first(model(*inputs)).float()
    err = float((got - want).abs().max()) / max(1.0, float(want.abs().max()))
    assert err <= TOL[dtype], err
    assert len(backend.compiled_graphs()) == 1 and not any(
        type(v).__name__ == "Fallback" for g in backend.compiled_graphs() for v in g.variants.values())


def _greedy(model: Any, config: Any, prompt: torch.Tensor, steps: int) -> tuple[list[int], list[torch.Tensor]]:
    cache = transformers.StaticCache(config=config, max_cache_len=prompt.shape[1] + steps)
    out = model(input_ids=prompt, past_key_values=cache, cache_position=torch.arange(prompt.shape[1]), use_cache=True)
    logits = [out.logits[0, -1]]
    tokens = [int(logits[-1].argmax())]
    for position in range(prompt.shape[1], prompt.shape[1] + steps - 1):
        out = model(input_ids=torch.tensor([[tokens[-1]]]), past_key_values=cache, cache_position=torch.tensor([position]),
                    use_cache=True)
        logits.append(out.logits[0, -1])
        tokens.append(int(logits[-1].argmax()))
    return tokens, logits


@pytest.mark.slow
def test_greedy_decoding_with_a_static_kv_cache_gives_eagers_tokens() -> None:
    model, _ = build("Llama")
    torch.manual_seed(7)
    for p in model.parameters():  # larger weights than the default init: the tokens vary from step to step
        torch.nn.init.normal_(p, std=0.3)
    model.config.use_cache = True
    prompt = token_ids(4)
    with torch.no_grad():
        want, want_logits = _greedy(model, model.config, prompt, 16)
        compiled = torch.compile(model, backend="ktir", options=OPTIONS)
        got, got_logits = _greedy(compiled, model.config, prompt, 16)
    assert len(set(want)) > 3, "the check needs tokens that change"
    assert got == want
    for g, w in zip(got_logits, want_logits, strict=True):
        assert float((g - w).abs().max()) <= 1e-4 * max(1.0, float(w.abs().max()))
    # one program for the prompt, one for every decoding step (the cache is updated in place)
    variants = [len(g.variants) for g in backend.compiled_graphs()]
    assert variants == [1, 1], variants


@pytest.mark.slow
def test_mamba2_decodes_one_token_per_step_from_its_state() -> None:
    model, _ = build("Mamba2")
    torch.manual_seed(7)
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.2)

    def greedy(m: Any, prompt: torch.Tensor, steps: int) -> list[int]:
        out = m(input_ids=prompt, use_cache=True)
        tokens = [int(out.logits[0, -1].argmax())]
        for position in range(prompt.shape[1], prompt.shape[1] + steps - 1):
            out = m(input_ids=torch.tensor([[tokens[-1]]]), cache=out.cache, use_cache=True,
                    cache_position=torch.tensor([position]))
            tokens.append(int(out.logits[0, -1].argmax()))
        return tokens

    prompt = token_ids(8)
    with torch.no_grad():
        want = greedy(model, prompt, 6)
        got = greedy(torch.compile(model, backend="ktir", options=OPTIONS), prompt, 6)
    assert len(set(want)) > 2 and got == want
    prefill, decode = (next(iter(g.variants.values())) for g in backend.compiled_graphs())
    step = [k.kind for k in decode.program.manifest.kernels]  # type: ignore[union-attr]
    # the step updates the convolution and SSM states of one token: no chunked scan over a padded sequence
    assert "cumsum" in [k.kind for k in prefill.program.manifest.kernels] and "cumsum" not in step and "pad" not in step  # type: ignore[union-attr]
    assert any(o.updates for o in decode.program.manifest.outputs)  # type: ignore[union-attr]
