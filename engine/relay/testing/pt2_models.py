"""Models for the PyTorch `.pt2` frontend tests: torchvision and Hugging Face architectures
with seeded random weights (nothing is downloaded), in small configurations, returning
what they return in PyTorch (a tensor, an OrderedDict, a Hugging Face `ModelOutput`).

`build(name)` gives `(module in eval mode, example inputs)`. torch, torchvision and
transformers are imported lazily.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.relay.testing.torch_models import (
    import_torchvision,
    import_transformers,
    randomize_batch_norm_statistics,
)

Built = tuple[Any, tuple[Any, ...]]
IMAGE = (1, 3, 64, 64)
TOKENS = (1, 12)
VOCAB = 100


def _image() -> tuple[Any, ...]:
    import torch

    return (torch.randn(*IMAGE, generator=torch.Generator().manual_seed(1)),)


def _vision(make: Callable[[Any], Any], inputs: Callable[[], tuple[Any, ...]] = _image
            ) -> Callable[[], Built]:
    def build() -> Built:
        import torch

        models = import_torchvision().models
        torch.manual_seed(0)
        module = make(models).eval()
        randomize_batch_norm_statistics(module)
        return module, inputs()
    return build


def _tokens() -> tuple[Any, ...]:
    import torch

    return (torch.randint(0, VOCAB, TOKENS, generator=torch.Generator().manual_seed(2)),)


def _text(config: str, model: str, **settings: Any) -> Callable[[], Built]:
    def build() -> Built:
        import torch

        transformers = import_transformers()
        torch.manual_seed(0)
        module = getattr(transformers, model)(getattr(transformers, config)(**settings))
        return module.eval(), _tokens()
    return build


def _whisper_encoder() -> Built:
    import torch

    transformers = import_transformers()
    torch.manual_seed(0)
    config = transformers.WhisperConfig(
        vocab_size=VOCAB, d_model=64, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=128,
        decoder_ffn_dim=128, num_mel_bins=16, max_source_positions=16, pad_token_id=0,
        bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    mel = torch.randn(1, 16, 32, generator=torch.Generator().manual_seed(3))
    return transformers.WhisperModel(config).get_encoder().eval(), (mel,)


_SMALL = {"vocab_size": VOCAB, "hidden_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 2, "intermediate_size": 128, "max_position_embeddings": 64}
_DECODER = {**_SMALL, "num_key_value_heads": 1, "use_cache": False}

MODELS: dict[str, Callable[[], Built]] = {
    "resnet18": _vision(lambda m: m.resnet18()),
    "mobilenet_v3_small": _vision(lambda m: m.mobilenet_v3_small()),
    "efficientnet_b0": _vision(lambda m: m.efficientnet_b0()),
    "convnext_tiny": _vision(lambda m: m.convnext_tiny()),
    "swin_t": _vision(lambda m: m.swin_t()),
    "vit": _vision(lambda m: m.VisionTransformer(image_size=64, patch_size=16, num_layers=2,
                                                 num_heads=2, hidden_dim=64, mlp_dim=128)),
    "deeplabv3": _vision(lambda m: m.segmentation.deeplabv3_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=5, aux_loss=False)),
    "bert": _text("BertConfig", "BertModel", **_SMALL),
    "distilbert": _text("DistilBertConfig", "DistilBertModel", vocab_size=VOCAB, dim=64,
                        n_layers=2, n_heads=2, hidden_dim=128, max_position_embeddings=64),
    "gpt2": _text("GPT2Config", "GPT2Model", vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=2,
                  n_positions=64, use_cache=False, bos_token_id=VOCAB - 1,
                  eos_token_id=VOCAB - 1),
    "llama": _text("LlamaConfig", "LlamaModel", **_DECODER),
    "qwen2": _text("Qwen2Config", "Qwen2Model", **_DECODER),
    "t5_encoder": _text("T5Config", "T5EncoderModel", vocab_size=VOCAB, d_model=64, d_kv=32,
                        d_ff=128, num_layers=2, num_heads=2, use_cache=False),
    "whisper_encoder": _whisper_encoder,
}


def build(name: str) -> Built:
    return MODELS[name]()
