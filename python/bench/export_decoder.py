#!/usr/bin/env python3
"""Exports llama_bench.py's Llama-3.2-1B-shaped decoder (random weights scaled by fan-in,
bf16) with any number of layers as a graph directory, on the CPU, for measuring the
compiler on whole models without a GPU (issue 25):

    python3 python/bench/export_decoder.py LAYERS decode|prefill OUT_DIR

decode: one token against a static KV cache of 640 positions (prompt 512 + 128); prefill:
512 tokens. OUT_DIR gets graph.json and weights.safetensors (luminal_c.export's .save).
Then, for example: luminal_search --graph OUT_DIR/graph.json --cost-model --limit 20.
Set LUMINAL_C_LIBRARY to a build tree's lib/libluminal.so when the package is not
installed.
"""
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import llama_bench as lb  # noqa: E402
import luminal_c  # noqa: E402
from models import init_fan_in  # noqa: E402


def main():
    if len(sys.argv) != 4 or sys.argv[2] not in ("decode", "prefill"):
        sys.exit(__doc__)
    layers, which, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    torch.manual_seed(0)
    t = time.time()
    m = init_fan_in(lb.Decoder(layers=layers)).to(torch.bfloat16)
    with torch.no_grad():
        if which == "decode":
            dec = lb.Decode(m).eval()
            kc = torch.zeros(layers, 1, 8, 640, 64, dtype=torch.bfloat16)
            ex = luminal_c.export(dec, (torch.zeros(1, 1, dtype=torch.int64),
                                        torch.tensor([512]), kc, torch.zeros_like(kc)))
        else:
            ex = luminal_c.export(lb.Prefill(m).eval(), (torch.zeros(1, 512, dtype=torch.int64),))
    ex.save(out)
    print(f"export_decoder: {layers} layers, {which}: {out} in {time.time() - t:.1f} s")


if __name__ == "__main__":
    main()
