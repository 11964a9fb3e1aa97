"""Fine-tune the embedded model on rendered rows with TRL's SFTTrainer, on the CPU.

The examples are already tokenised with their assistant masks (:mod:`neurons.learning.rows`),
so TRL trains on them as they are: the loss covers the model's own turns only. ``method`` is
``full`` (every weight) or ``lora`` (peft adapters on every projection, merged back before
export). TRL's ``SFTConfig`` is built from :class:`TrainPlan` in one place.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from neurons.learning.rows import TrainingExample

logger = logging.getLogger(__name__)

Method = Literal["full", "lora"]


@dataclass(frozen=True)
class TrainPlan:
    """How to train: method, optimisation, and the budget (epochs, or a step cap)."""

    method: Method = "full"
    learning_rate: float = 5e-5
    epochs: float = 1.0
    max_steps: int = -1  # > 0 caps the optimiser steps whatever the epochs
    gradient_accumulation: int = 4
    warmup_ratio: float = 0.05
    weight_decay: float = 0.0
    lora_rank: int = 32
    lora_alpha: int = 64
    seed: int = 0
    # Recompute activations in the backward pass (TRL's default): less memory, about a third
    # slower. 135M parameters at 3k tokens fit in memory, so it is off.
    activation_checkpointing: bool = False
    threads: int | None = None  # torch intra-op threads; None keeps torch's default

    def __post_init__(self) -> None:
        if self.learning_rate <= 0 or self.epochs <= 0 or self.gradient_accumulation < 1:
            raise ValueError("learning_rate, epochs and gradient_accumulation must be positive")


@dataclass(frozen=True)
class TrainReport:
    """What training did: steps, tokens seen, wall time, throughput and the loss per logged step."""

    plan: dict[str, Any]
    examples: int
    steps: int
    tokens: int
    trained_tokens: int
    seconds: float
    losses: tuple[float, ...] = field(default_factory=tuple)

    @property
    def tokens_per_second(self) -> float:
        """Tokens (prompt and target) processed per second of training."""
        return round(self.tokens / self.seconds, 2) if self.seconds else 0.0


def sft_config(plan: TrainPlan, output_dir: Path) -> Any:
    """TRL's SFTConfig for ``plan``: CPU, batch 1, no checkpoints, no reporting."""
    from trl import SFTConfig

    return SFTConfig(
        output_dir=str(output_dir),
        use_cpu=True,
        per_device_train_batch_size=1,
        gradient_accumulation_steps=plan.gradient_accumulation,
        learning_rate=plan.learning_rate,
        num_train_epochs=plan.epochs,
        max_steps=plan.max_steps,
        warmup_steps=plan.warmup_ratio,  # a float below 1 is a share of the steps
        weight_decay=plan.weight_decay,
        lr_scheduler_type="cosine",
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=plan.seed,
        max_length=None,  # rows were sized when rendered; never truncate an answer away
        dataloader_num_workers=0,
        bf16=False,
        fp16=False,
        disable_tqdm=True,
        activation_checkpointing=plan.activation_checkpointing,
    )


def train(model: Any, tokenizer: Any, examples: Sequence[TrainingExample], plan: TrainPlan,
          output_dir: Path) -> tuple[Any, TrainReport]:  # fmt: skip
    """Train ``model`` on ``examples``; returns the trained model (adapters merged) and the report."""
    import torch
    from datasets import Dataset
    from trl import SFTTrainer

    if not examples:
        raise ValueError("no training examples")
    if plan.threads:
        torch.set_num_threads(plan.threads)
    torch.manual_seed(plan.seed)
    dataset = Dataset.from_list(
        [{"input_ids": list(e.input_ids), "assistant_masks": list(e.assistant_masks)} for e in examples]
    )
    peft_config = None
    if plan.method == "lora":
        from peft import LoraConfig

        peft_config = LoraConfig(
            r=plan.lora_rank,
            lora_alpha=plan.lora_alpha,
            lora_dropout=0.0,
            target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
            task_type="CAUSAL_LM",
        )
    trainer = SFTTrainer(
        model=model,
        args=sft_config(plan, output_dir),
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    started = time.monotonic()
    result = trainer.train()
    seconds = time.monotonic() - started
    losses = tuple(round(float(entry["loss"]), 4) for entry in trainer.state.log_history if "loss" in entry)
    trained = trainer.model
    if plan.method == "lora":
        trained = trained.merge_and_unload()
    epochs_seen = (
        min(plan.epochs, result.global_step * plan.gradient_accumulation / len(examples)) or plan.epochs
    )
    tokens = int(sum(len(e.input_ids) for e in examples) * epochs_seen)
    report = TrainReport(
        plan=asdict(plan),
        examples=len(examples),
        steps=result.global_step,
        tokens=tokens,
        trained_tokens=int(sum(e.trained_tokens for e in examples) * epochs_seen),
        seconds=round(seconds, 1),
        losses=losses,
    )
    logger.info("train method=%s examples=%d steps=%d tokens=%d seconds=%.0f tokens_per_s=%.1f loss=%s",
                plan.method, report.examples, report.steps, report.tokens, report.seconds,
                report.tokens_per_second, losses[-1] if losses else None)  # fmt: skip
    return trained, report
