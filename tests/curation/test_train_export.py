"""TRL trains on the export unchanged: 2 steps of SFT, KTO and DPO trainers on a tiny random model, offline.

Marked ``train`` (not in the default run): ``make test-train`` installs the ``train`` extra
(trl, torch CPU, transformers) and runs it. Nothing is downloaded: the tokenizer is trained on
the export itself and the model is built from a 2-layer config with random weights.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest

from curation.config import CurationConfig
from curation.export import curate_and_export
from storage.db import make_engine, make_sessionmaker, upgrade
from tests.curation.planted import GOLDEN_EVAL_SHARE, golden_population
from tests.tiny_tokenizer import byte_bpe

pytestmark = [
    pytest.mark.train,
    # Third-party training stacks warn about their own defaults; those are not our faults.
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]

# A ChatML template that renders tools, tool calls (arguments as JSON), tool results and reasoning.
CHAT_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\n# Tools\n{%- for tool in tools %}\n{{ tool | tojson }}{%- endfor %}"
    "<|im_end|>\n{%- endif %}"
    "{%- for message in messages %}"
    "<|im_start|>{{ message.role }}\n"
    "{%- if message.reasoning_content %}<think>{{ message.reasoning_content }}</think>{%- endif %}"
    "{{ message.content or '' }}"
    "{%- if message.tool_calls %}{%- for call in message.tool_calls %}"
    "<tool_call>{{ {'name': call.function.name, 'arguments': call.function.arguments} | tojson }}</tool_call>"
    "{%- endfor %}{%- endif %}"
    "<|im_end|>\n"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}"
)
SPECIAL = ["<|im_start|>", "<|im_end|>", "<pad>", "<tool_call>", "</tool_call>", "<think>", "</think>"]


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    root = tmp_path_factory.mktemp("train")
    engine = make_engine(f"sqlite:///{root / 'arena.db'}")
    upgrade(engine)
    with make_sessionmaker(engine)() as session:
        golden_population(session)
        # The golden population's miners replay one call template (miner-level axis B, set aside
        # without a converter); the miner-level verdict is off so the imitation sets are not empty.
        config = CurationConfig(eval_share=GOLDEN_EVAL_SHARE, miner_axis_sample=0)
        curate_and_export(session, root / "export", config=config)
    engine.dispose()
    return root / "export"


def _tokenizer(corpus: list[str]) -> Any:
    transformers = pytest.importorskip("transformers")
    tok = byte_bpe(corpus, vocab_size=2000, special_tokens=SPECIAL)
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<pad>",
        chat_template=CHAT_TEMPLATE,
    )


def _model(tokenizer: Any) -> Any:
    transformers = pytest.importorskip("transformers")
    config = transformers.Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=8192,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
    )
    return transformers.Qwen2ForCausalLM(config)


def _load(path: Path) -> Any:
    datasets = pytest.importorskip("datasets")
    return datasets.load_dataset("parquet", data_files=str(path), split="train")


def _common(out: Path) -> dict[str, Any]:
    return {
        "output_dir": str(out),
        "max_steps": 2,
        "per_device_train_batch_size": 2,
        "learning_rate": 1e-3,
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "none",
        "use_cpu": True,
        "max_length": 4096,
        "dataloader_num_workers": 0,
    }


def _corpus(export_dir: Path) -> list[str]:
    return [line for path in export_dir.rglob("*.jsonl") for line in path.read_text().splitlines()]


def test_sft_trainer_takes_two_steps_on_the_export(export_dir: Path, tmp_path: Path) -> None:
    trl = pytest.importorskip("trl")
    tokenizer = _tokenizer(_corpus(export_dir))
    dataset = _load(export_dir / "sft.parquet")
    trainer = trl.SFTTrainer(
        model=_model(tokenizer),
        args=trl.SFTConfig(**_common(tmp_path)),
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    assert len(trainer.train_dataset) == len(dataset)
    result = trainer.train()
    assert result.global_step == 2
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert len(losses) == 2 and all(loss > 0 for loss in losses)
    rendered = tokenizer.apply_chat_template(
        dataset[0]["messages"], tools=dataset[0]["tools"], tokenize=False
    )
    assert '<tool_call>{"name": "find_product", "arguments": {"q":' in rendered


def test_kto_trainer_takes_two_steps_on_the_export(export_dir: Path, tmp_path: Path) -> None:
    trl = pytest.importorskip("trl")
    tokenizer = _tokenizer(_corpus(export_dir))
    dataset = _load(export_dir / "kto.parquet")
    assert set(dataset["label"]) == {True, False}
    model = _model(tokenizer)
    trainer = trl.KTOTrainer(
        model=model,
        ref_model=copy.deepcopy(model),  # a model built from a config has no hub name to reload from
        args=trl.KTOConfig(**_common(tmp_path)),
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    assert len(trainer.train_dataset) == len(dataset)  # no row lost to truncation or format
    result = trainer.train()
    assert result.global_step == 2
    assert any("loss" in entry for entry in trainer.state.log_history)


def test_dpo_trainer_takes_two_steps_on_the_export(export_dir: Path, tmp_path: Path) -> None:
    trl = pytest.importorskip("trl")
    tokenizer = _tokenizer(_corpus(export_dir))
    dataset = _load(export_dir / "dpo.parquet")
    model = _model(tokenizer)
    trainer = trl.DPOTrainer(
        model=model,
        ref_model=copy.deepcopy(model),
        args=trl.DPOConfig(**{**_common(tmp_path), "per_device_train_batch_size": 1}),
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    assert len(trainer.train_dataset) == len(dataset)
    assert trainer.train().global_step == 2
