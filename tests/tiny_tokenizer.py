"""A byte-level BPE tokenizer trained in a test on its own corpus: no hub download, a few KB."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest


def byte_bpe(corpus: list[str], *, vocab_size: int, special_tokens: Sequence[str]) -> Any:
    """A ``tokenizers.Tokenizer`` (byte-level BPE) trained on ``corpus``, for the test to wrap."""
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token=None))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(special_tokens),
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(corpus, trainer=trainer)
    return tok
