"""The benchmark scripts still run, and the lower bound they time computes the same tokens."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.helpers import varied_weights
from tinyk import ModelConfig, Transformer, generate

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize("script", sorted(p.name for p in BENCHMARKS.glob("bench_*.py")))
def test_benchmark_script_imports_and_parses_its_arguments(script):
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--help"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout


def test_fused_lower_bound_generates_tinyks_tokens_with_and_without_a_cache():
    spec = importlib.util.spec_from_file_location("bench_generate", BENCHMARKS / "bench_generate.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    torch.manual_seed(0)
    model = varied_weights(Transformer(ModelConfig.tiny(vocab_size=40, max_seq_len=96)))
    prompt = torch.tensor([[5, 3, 8, 1, 9, 2, 7], [4, 4, 6, 1, 2, 3, 10]])
    expected = generate(model, prompt, max_new_tokens=40, temperature=0)
    fused = bench.FusedTiny(model)
    for use_cache in (True, False):
        assert torch.equal(fused.generate(prompt, 40, use_cache), expected)
    # the comparison can fail: with one key projection negated the tokens differ
    with torch.no_grad():
        model.layers[0].attention.wk.weight.mul_(-1.0)
    assert not torch.equal(bench.FusedTiny(model).generate(prompt, 40, True), expected)
