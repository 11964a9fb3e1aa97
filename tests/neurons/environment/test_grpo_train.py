"""Two Dr. GRPO steps of TRL's GRPOTrainer against a compiled world, through the environment_factory, on CPU.

Marked ``train`` (``make test-train`` installs the extra and runs it, offline). The tiny model is
built here from a config with random weights and a tokenizer trained on the prompts; it is first
taught one tool call (a few hundred plain steps on one example), so the rollouts reach the
environment's tools and the reward is the environment's. The embedded SmolLM2 runs too, with
the caveat its own chat template forces: it renders ``role`` and ``content`` only (no tools, no
tool calls), and TRL refuses a template that cannot render a tool-calling exchange; the same
tokens (ChatML) with Qwen3's tool template, which TRL knows how to parse, make it trainable.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from neurons.environment.grpo import ShopperTools, factory, prompt_rows
from neurons.environment.session import Environment
from neurons.environment.tasks import EnvTasks
from tests.tiny_tokenizer import byte_bpe

pytestmark = [
    pytest.mark.train,
    # Third-party training stacks warn about their own defaults; those are not our faults.
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]
SPECIAL = ["<|im_start|>", "<|im_end|>", "<|endoftext|>"]
TAUGHT_CALL = {"name": "find_product", "arguments": {"q": "bag", "page": 1}}


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")


def _tool_schemas() -> list[dict[str, Any]]:
    transformers = pytest.importorskip("transformers")
    names = [n for n, _ in inspect.getmembers(ShopperTools, inspect.isfunction) if not n.startswith("_")]
    methods = [getattr(ShopperTools, n) for n in names if n not in ("reset", "get_reward")]
    return [transformers.utils.get_json_schema(m) for m in methods]


def _tokenizer(corpus: list[str]) -> Any:
    transformers = pytest.importorskip("transformers")
    chat_templates = pytest.importorskip("trl.chat_template_utils")
    tok = byte_bpe(corpus, vocab_size=1500, special_tokens=SPECIAL)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    fast.chat_template = chat_templates.qwen3_chat_template  # a template TRL parses tool calls from
    return fast


def _tiny_model(tok: Any) -> Any:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.Qwen3Config(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=8192,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    return transformers.Qwen3ForCausalLM(config)


def _teach_one_call(model: Any, tok: Any, prompt: list[dict[str, str]], tools: list[dict[str, Any]]) -> None:
    """Fit the completion that is exactly one find_product call (the model then calls the environment)."""
    torch = pytest.importorskip("torch")
    call = {"type": "function", "function": TAUGHT_CALL}
    head = tok.apply_chat_template(prompt, tools=tools, add_generation_prompt=True, tokenize=False)
    whole = tok.apply_chat_template(
        [*prompt, {"role": "assistant", "content": "", "tool_calls": [call]}], tools=tools, tokenize=False
    )
    ids = tok(whole, add_special_tokens=False, return_tensors="pt")["input_ids"]
    labels = ids.clone()
    labels[0, : len(tok(head, add_special_tokens=False)["input_ids"])] = -100
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    for _ in range(400):
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if loss.item() < 0.02:
            break


def _grpo(model: Any, tok: Any, env: Environment, out: Path, **options: Any) -> Any:
    trl = pytest.importorskip("trl")
    datasets = pytest.importorskip("datasets")
    rows = prompt_rows(env.tasks)[:2]
    args = trl.GRPOConfig(
        output_dir=str(out),
        loss_type="dr_grpo",
        max_steps=2,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=64,
        max_tool_calling_iterations=2,
        learning_rate=1e-5,
        use_cpu=True,
        bf16=False,
        report_to=[],
        logging_steps=1,
        save_strategy="no",
        seed=0,
        **options,
    )
    trainer = trl.GRPOTrainer(
        model=model,
        processing_class=tok,
        args=args,
        train_dataset=datasets.Dataset.from_list(rows * 4),
        environment_factory=factory(env),
    )
    trainer.train()
    return trainer


def test_two_dr_grpo_steps_against_a_compiled_world(env_tasks: EnvTasks, tmp_path: Path) -> None:
    tools = _tool_schemas()
    corpus = (
        [json.dumps(t) for t in tools] + [t.query for t in env_tasks.tasks] + [json.dumps(TAUGHT_CALL)] * 50
    )
    tok = _tokenizer(corpus)
    model = _tiny_model(tok)
    _teach_one_call(model, tok, prompt_rows(env_tasks)[0]["prompt"], tools)
    env = Environment(env_tasks)
    trainer = _grpo(model, tok, env, tmp_path / "grpo", temperature=0.3)
    steps = [h for h in trainer.state.log_history if "loss" in h]
    assert len(steps) == 2 and trainer.state.global_step == 2
    assert all("rewards/ShopperTools/mean" in h for h in steps)  # the environment owned the reward
    assert any(h["tools/call_frequency"] > 0 for h in steps)  # the rollouts called its tools
    assert env.open_sessions <= 4  # the pool's instances hold at most one open session each


def test_smollm2_trains_only_with_a_tool_template(env_tasks: EnvTasks, tmp_path: Path) -> None:
    trl = pytest.importorskip("trl")
    from neurons.learning.gguf_policy import load_policy

    try:
        from neurons.demo.local_llm import model_path

        gguf = model_path()
    except Exception as exc:  # the local-llm extra is not installed
        pytest.skip(f"the embedded SmolLM2 is not installed: {exc}")
    model, tok = load_policy(gguf)
    own = tok.chat_template
    assert not trl.chat_template_utils.supports_tool_calling(tok)  # said plainly: its template cannot
    tok.chat_template = trl.chat_template_utils.qwen3_chat_template
    assert trl.chat_template_utils.supports_tool_calling(tok) and "tool" not in own
    trainer = _grpo(model, tok, Environment(env_tasks), tmp_path / "smollm2")
    assert trainer.state.global_step == 2
