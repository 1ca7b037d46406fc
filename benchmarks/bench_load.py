"""Loading SmolLM2-135M from its GGUF file: tinyk's dequantisation against the gguf package's.

    python benchmarks/bench_load.py [--rounds 5]

Every tensor of the file is dequantised to float32 by :func:`tinyk.interop.gguf_quants.dequantise` and
by ``gguf.quants.dequantize``, rounds alternating, one CPU thread; the script checks that the two
give the same bits (SmolLM2's weights hold no NaN) and prints the median seconds of each and their
ratio, then the seconds of a whole :func:`tinyk.interop.gguf.load_gguf` in a new interpreter (importing
torch and tinyk not counted), as a notebook, a grader's kernel or the verdict's process pays it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

from tinyk.interop.gguf import raw_tensors, smollm2_path
from tinyk.interop.gguf_quants import dequantise

FRESH = """
import time
import torch, tinyk
from tinyk.interop.gguf import load_gguf, smollm2_path
start = time.perf_counter()
load_gguf(smollm2_path())
print(time.perf_counter() - start)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    import gguf

    torch.set_num_threads(1)
    tensors = [(name, gguf.GGMLQuantizationType[kind], data)
               for name, (kind, data) in raw_tensors(smollm2_path()).items()]
    for name, kind, data in tensors:
        ours, theirs = dequantise(data, kind).numpy(), gguf.quants.dequantize(data, kind)
        if ours.shape != theirs.shape or not np.array_equal(ours.view(np.uint32), theirs.view(np.uint32)):
            raise SystemExit(f"{name} ({kind.name}) differs from gguf's dequantisation")
    seconds: dict[str, list[float]] = {"tinyk.interop.gguf_quants": [], "gguf.quants": []}
    for _ in range(args.rounds):
        for label, run in (("tinyk.interop.gguf_quants", dequantise),
                           ("gguf.quants", gguf.quants.dequantize)):
            start = time.perf_counter()
            for _, kind, data in tensors:
                run(data, kind)
            seconds[label].append(time.perf_counter() - start)
    median = {label: statistics.median(values) for label, values in seconds.items()}
    print(f"{len(tensors)} tensors, the same bits both ways; median of {args.rounds} rounds, one thread:")
    for label, value in median.items():
        print(f"  {label:18s} {value:6.2f} s")
    ratio = median["gguf.quants"] / median["tinyk.interop.gguf_quants"]
    print(f"  gguf.quants / tinyk.interop.gguf_quants = {ratio:.1f}x")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    fresh = [float(subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True, check=True,
                                  env=env).stdout) for _ in range(3)]
    print(f"load_gguf in a new interpreter (torch imported): median {statistics.median(fresh):.2f} s of 3")


if __name__ == "__main__":
    main()
