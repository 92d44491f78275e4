"""The tiny-model builder: deterministic, keyed by content, no heavy import at module level."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from live import tiny_model


def test_importing_it_pulls_in_no_torch() -> None:
    heavy = "{'torch', 'transformers', 'tokenizers'}"
    code = f"import sys, live.tiny_model; print(sorted({heavy} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_corpus_and_key_are_deterministic() -> None:
    assert list(tiny_model.corpus(50)) == list(tiny_model.corpus(50))
    assert list(tiny_model.corpus(50, seed=1)) != list(tiny_model.corpus(50))
    assert tiny_model.content_hash() == tiny_model.content_hash()
    assert tiny_model.content_hash(1024) != tiny_model.content_hash()


def test_recipe_has_the_cpu_backend_constraints() -> None:
    config = tiny_model.CONFIG
    assert config["head_dim"] >= 32, "the CPU attention backend needs head_dim >= 32"
    assert int(str(config["max_position_embeddings"])) >= 4096, "long enough for abort tests"


def test_ensure_reuses_a_built_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Path] = []

    def fake_build(out: Path, vocab: int = tiny_model.VOCAB) -> dict[str, object]:
        calls.append(out)
        (out / "config.json").write_text("{}")
        return {"vocab_size": vocab}

    monkeypatch.setattr(tiny_model, "build", fake_build)
    first = tiny_model.ensure(tmp_path)
    second = tiny_model.ensure(tmp_path)
    assert first == second and len(calls) == 1
    assert first.name == f"tiny-qwen3-{tiny_model.content_hash()}"
    assert (first / tiny_model.MARKER).exists()
    assert [p.name for p in tmp_path.joinpath("models").iterdir()] == [first.name]


def test_build_with_the_real_libraries(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    facts = tiny_model.build(tmp_path)
    assert facts["vocab_size"] == tiny_model.VOCAB and facts["eos_token_id"] == 2
    assert (tmp_path / "model.safetensors").exists() and (tmp_path / "tokenizer.json").exists()
