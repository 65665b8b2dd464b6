"""Tiny-config Hugging Face models (random weights, nothing downloaded) for the torch.compile
backend's sweep and tests: one factory per model class, returning (model, example inputs).

Sizes are small on purpose (hidden 64, 2 layers, 4 heads over 2 KV heads, vocabulary 128,
16 tokens) so that every class lowers and runs in the reference interpreter in seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import transformers

VOCAB, SEQ, HIDDEN = 128, 16, 64

Factory = Callable[[], tuple[Any, tuple[Any, ...]]]


def token_ids(seq: int = SEQ, batch: int = 1) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, seq), generator=torch.Generator().manual_seed(1))


def _decoder(config_name: str, model_name: str, **extra: Any) -> Factory:
    def make() -> tuple[Any, tuple[Any, ...]]:
        base = dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, max_position_embeddings=64, use_cache=False)
        base.update(extra)
        config = getattr(transformers, config_name)(**base)
        return getattr(transformers, model_name)(config), (token_ids(),)

    return make


def _gpt2() -> tuple[Any, tuple[Any, ...]]:
    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=2, n_head=4, n_positions=64, use_cache=False)
    return transformers.GPT2LMHeadModel(config), (token_ids(),)


def _bert() -> tuple[Any, tuple[Any, ...]]:
    config = transformers.BertConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=128, max_position_embeddings=64)
    return transformers.BertModel(config), (token_ids(),)


def _modernbert() -> tuple[Any, tuple[Any, ...]]:
    config = transformers.ModernBertConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=4,
                                           intermediate_size=128, max_position_embeddings=64, global_attn_every_n_layers=2,
                                           local_attention=8, pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1,
                                           sep_token_id=2)
    return transformers.ModernBertModel(config), (token_ids(),)


def _opt() -> tuple[Any, tuple[Any, ...]]:
    config = transformers.OPTConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=4, ffn_dim=128,
                                    max_position_embeddings=64, word_embed_proj_dim=HIDDEN, use_cache=False)
    return transformers.OPTForCausalLM(config), (token_ids(),)


def _bloom() -> tuple[Any, tuple[Any, ...]]:
    config = transformers.BloomConfig(vocab_size=VOCAB, hidden_size=HIDDEN, n_layer=2, n_head=4, use_cache=False)
    return transformers.BloomForCausalLM(config), (token_ids(),)


def _gpt_neox() -> tuple[Any, tuple[Any, ...]]:
    config = transformers.GPTNeoXConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=4,
                                        intermediate_size=128, max_position_embeddings=64, use_cache=False)
    return transformers.GPTNeoXForCausalLM(config), (token_ids(),)


def _falcon() -> tuple[Any, tuple[Any, ...]]:
    config = transformers.FalconConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=4,
                                       max_position_embeddings=64, use_cache=False)
    return transformers.FalconForCausalLM(config), (token_ids(),)


def _mamba2() -> tuple[Any, tuple[Any, ...]]:
    config = transformers.Mamba2Config(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=2, num_heads=4, head_dim=32,
                                       state_size=16, n_groups=1, expand=2, chunk_size=8, use_cache=False)
    return transformers.Mamba2ForCausalLM(config), (token_ids(),)


def _hybrid() -> tuple[Any, tuple[Any, ...]]:
    config = transformers.GraniteMoeHybridConfig(
        vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=64, shared_intermediate_size=64, num_hidden_layers=2,
        layer_types=["mamba", "attention"], num_attention_heads=4, num_key_value_heads=2, mamba_n_heads=4, mamba_d_head=32,
        mamba_d_state=16, mamba_n_groups=1, mamba_d_conv=4, mamba_expand=2, mamba_chunk_size=8, num_local_experts=4,
        num_experts_per_tok=2, max_position_embeddings=64, use_cache=False)
    return transformers.GraniteMoeHybridForCausalLM(config), (token_ids(),)


def _bamba() -> tuple[Any, tuple[Any, ...]]:
    config = transformers.BambaConfig(
        vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=128, num_hidden_layers=2, attn_layer_indices=[1],
        num_attention_heads=4, num_key_value_heads=2, mamba_n_heads=4, mamba_d_head=32, mamba_d_state=16, mamba_n_groups=1,
        mamba_d_conv=4, mamba_expand=2, mamba_chunk_size=8, max_position_embeddings=64, use_cache=False)
    return transformers.BambaForCausalLM(config), (token_ids(),)


def _vit() -> tuple[Any, tuple[Any, ...]]:
    config = transformers.ViTConfig(hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                                    image_size=32, patch_size=8, num_channels=3)
    pixels = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    return transformers.ViTModel(config, add_pooling_layer=False), (pixels,)


def _whisper_encoder() -> tuple[Any, tuple[Any, ...]]:
    config = transformers.WhisperConfig(vocab_size=VOCAB, d_model=HIDDEN, encoder_layers=2, decoder_layers=2,
                                        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                                        decoder_ffn_dim=128, num_mel_bins=16, max_source_positions=16, max_target_positions=16,
                                        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    features = torch.randn(1, 16, 32, generator=torch.Generator().manual_seed(2))
    return transformers.WhisperModel(config).get_encoder(), (features,)


def _t5_encoder() -> tuple[Any, tuple[Any, ...]]:
    config = transformers.T5Config(vocab_size=VOCAB, d_model=HIDDEN, d_kv=16, d_ff=128, num_layers=2, num_heads=4)
    return transformers.T5EncoderModel(config), (token_ids(),)


MODELS: dict[str, Factory] = {
    "Llama": _decoder("LlamaConfig", "LlamaForCausalLM"),
    "Granite": _decoder("GraniteConfig", "GraniteForCausalLM"),
    "GraniteMoe": _decoder("GraniteMoeConfig", "GraniteMoeForCausalLM", num_local_experts=4, num_experts_per_tok=2),
    "GraniteMoeHybrid": _hybrid,
    "Qwen2": _decoder("Qwen2Config", "Qwen2ForCausalLM"),
    "Qwen3": _decoder("Qwen3Config", "Qwen3ForCausalLM", head_dim=16),
    "Mistral": _decoder("MistralConfig", "MistralForCausalLM"),
    "Mixtral": _decoder("MixtralConfig", "MixtralForCausalLM", num_local_experts=4, num_experts_per_tok=2),
    "Gemma": _decoder("GemmaConfig", "GemmaForCausalLM", head_dim=16),
    "Gemma2": _decoder("Gemma2Config", "Gemma2ForCausalLM", head_dim=16, sliding_window=8),
    "Gemma3": _decoder("Gemma3TextConfig", "Gemma3ForCausalLM", head_dim=16, sliding_window=8),
    "Phi": _decoder("PhiConfig", "PhiForCausalLM"),
    "Phi3": _decoder("Phi3Config", "Phi3ForCausalLM", pad_token_id=0),
    "OLMo2": _decoder("Olmo2Config", "Olmo2ForCausalLM"),
    "OLMoE": _decoder("OlmoeConfig", "OlmoeForCausalLM", num_experts=4, num_experts_per_tok=2),
    "GPT2": _gpt2,
    "GPTNeoX": _gpt_neox,
    "BERT": _bert,
    "ModernBERT": _modernbert,
    "OPT": _opt,
    "BLOOM": _bloom,
    "StableLM": _decoder("StableLmConfig", "StableLmForCausalLM"),
    "Mamba2": _mamba2,
    "Bamba": _bamba,
    "GPT-OSS": _decoder("GptOssConfig", "GptOssForCausalLM", num_local_experts=4, num_experts_per_tok=2, head_dim=16,
                        sliding_window=8, layer_types=["sliding_attention", "full_attention"]),
    "ViT": _vit,
    "WhisperEncoder": _whisper_encoder,
    "Falcon": _falcon,
    "T5Encoder": _t5_encoder,
    "DeepSeekV3": _decoder("DeepseekV3Config", "DeepseekV3ForCausalLM", num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2,
                           moe_intermediate_size=32, first_k_dense_replace=1, n_group=1, topk_group=1, q_lora_rank=32,
                           kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16),
}


def build(name: str, dtype: Any = torch.float32) -> tuple[Any, tuple[Any, ...]]:
    """The model `name` (eval mode, seeded random weights, in `dtype`) and its example inputs."""
    torch.manual_seed(0)
    model, inputs = MODELS[name]()
    model = model.eval().to(dtype)
    inputs = tuple(x.to(dtype) if x.is_floating_point() else x for x in inputs)
    return model, inputs
