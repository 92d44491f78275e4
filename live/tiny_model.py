"""A tiny random-weight Qwen3 model with a locally trained byte-level BPE tokenizer. No hub.

vllm-cpu.md: hidden 64, 2 layers, 4 heads / 2 KV heads, head_dim 32 (the CPU attention backend
needs head_dim >= 32), tied embeddings, float32; specials `<|endoftext|>`=0, `<|im_start|>`=1,
`<|im_end|>`=2 (EOS); a 4096 context so an `ignore_eos` stream lasts long enough to be aborted.
The tokenizer is trained on a synthetic corpus made here from a fixed seed, so the model does not
depend on the Python installation. The output directory is keyed by a hash of everything that
determines it (this recipe, the library versions) and reused when it already exists.

torch, transformers and tokenizers exist only in the live environment: they are imported inside
`build()`, never at module import.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path

RECIPE_VERSION = 1
VOCAB = 2048
CONTEXT = 4096
SEED = 0
SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CONFIG = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "max_position_embeddings": CONTEXT,
    "tie_word_embeddings": True,
    "rope_theta": 10000.0,
}
MARKER = "tito-model.json"
LIBRARIES = ("torch", "transformers", "tokenizers")


def corpus(lines: int = 6000, seed: int = SEED) -> Iterator[str]:
    """Deterministic text with code-like and word-like structure for BPE to learn merges from."""
    rng = random.Random(seed)
    onsets = ["", "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "w"]
    onsets += ["st", "tr", "pl", "ch", "sh", "th"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ou", "ee"]
    codas = ["", "", "n", "s", "t", "r", "l", "ng", "ck"]
    keywords = ["def", "return", "if", "else", "for", "in", "import", "class", "with", "self"]
    punct = ["(", ")", ":", ",", ".", " = ", " + ", "[", "]", "\n", "    "]
    words = [
        "".join(rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas) for _ in range(n))
        for n in (rng.randint(1, 3) for _ in range(1500))
    ]
    for _ in range(lines):
        parts = []
        for _ in range(rng.randint(3, 14)):
            pick = rng.random()
            if pick < 0.15:
                parts.append(rng.choice(keywords))
            elif pick < 0.3:
                parts.append(rng.choice(punct))
            elif pick < 0.35:
                parts.append(str(rng.randint(0, 999)))
            else:
                parts.append(rng.choice(words))
        yield " ".join(parts)


def _versions() -> dict[str, str]:
    found = {}
    for name in LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "absent"
    return found


def recipe(vocab: int = VOCAB) -> dict[str, object]:
    """Everything that determines the model's bytes."""
    return {
        "recipe_version": RECIPE_VERSION,
        "vocab_target": vocab,
        "seed": SEED,
        "specials": list(SPECIALS),
        "chat_template": CHAT_TEMPLATE,
        "config": CONFIG,
        "libraries": _versions(),
    }


def content_hash(vocab: int = VOCAB) -> str:
    text = json.dumps(recipe(vocab), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def default_cache() -> Path:
    root = os.environ.get("TITO_MODEL_CACHE") or Path.home() / ".cache" / "tito-conformance"
    return Path(root)


def ensure(cache: Path | None = None, vocab: int = VOCAB) -> Path:
    """The model directory for this recipe, built once per content hash."""
    target = (cache or default_cache()) / "models" / f"tiny-qwen3-{content_hash(vocab)}"
    if (target / MARKER).exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        facts = build(work, vocab)
        (work / MARKER).write_text(json.dumps({**recipe(vocab), **facts}, indent=2))
        try:
            work.rename(target)
        except OSError:  # another builder won the race: theirs is the same model
            shutil.rmtree(work)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return target


def build(out: Path, vocab_target: int = VOCAB) -> dict[str, object]:
    """Write tokenizer and weights to `out`; return facts the suite may want (vocab, eos)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(SEED)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_target,
        special_tokens=list(SPECIALS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer)
    vocab = tok.get_vocab_size()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
        additional_special_tokens=["<|im_start|>"],
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.model_max_length = CONTEXT
    fast.save_pretrained(str(out))
    eos_id, pad_id = tok.token_to_id("<|im_end|>"), tok.token_to_id("<|endoftext|>")
    cfg = Qwen3Config(
        vocab_size=vocab,
        bos_token_id=pad_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        torch_dtype="float32",
        **CONFIG,
    )
    model = Qwen3ForCausalLM(cfg)
    for key, value in (("eos", eos_id), ("pad", pad_id), ("bos", pad_id)):
        setattr(model.generation_config, f"{key}_token_id", value)
    model.save_pretrained(str(out), safe_serialization=True)
    params = sum(p.numel() for p in model.parameters())
    return {"vocab_size": vocab, "eos_token_id": eos_id, "pad_token_id": pad_id, "params": params}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m live.tiny_model", description=__doc__)
    parser.add_argument("--cache", type=Path, help="cache root (default: $TITO_MODEL_CACHE)")
    parser.add_argument("--vocab", type=int, default=VOCAB)
    parser.add_argument("--print-hash", action="store_true", help="print the key and exit")
    args = parser.parse_args(argv)
    if args.print_hash:
        print(content_hash(args.vocab))
        return 0
    print(ensure(args.cache, args.vocab))
    return 0


if __name__ == "__main__":
    sys.exit(main())
