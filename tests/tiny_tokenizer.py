"""A tiny word-level tokenizer built in code (no download) over the tiny Llama's vocabulary:
``<pad>`` 0, ``<s>`` 1, ``</s>`` 2, ``<unk>`` 3, then the words ``w4`` … ``w{vocab-1}``."""

from __future__ import annotations

from typing import Any


def tiny_tokenizer(vocab: int = 256) -> Any:
    """A ``PreTrainedTokenizerFast`` (left padding, whitespace words) for ``vocab`` ids."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3}
    words |= {f"w{i}": i for i in range(4, vocab)}
    core = Tokenizer(models.WordLevel(words, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.decoder = decoders.WordPiece(prefix="##")
    return PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=core,
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        padding_side="left",
    )
