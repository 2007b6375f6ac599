"""The GPU benchmark's decoder (python/bench/llama_bench.py) at a small size on the CPU
executor: prefill, and decode with the KV cache passed in at two past lengths (the
dynamic dim 'past'), against torch eager. So the script scripts/torch_gpu.sh runs is
checked here, where there is no GPU."""
import os
import sys

import torch

import luminal_c
from models import init_fan_in
from util import assert_close

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import llama_bench as lb  # noqa: E402


def test_bench_decoder_small():
    torch.manual_seed(0)
    m = init_fan_in(lb.Decoder(layers=2, d=64, h=4, kv=2, f=128, vocab=100))
    pre, dec = lb.Prefill(m).eval(), lb.Decode(m).eval()
    ids = torch.randint(0, 100, (1, 9))
    with torch.no_grad():
        want = pre(ids)
        lp = luminal_c.compile(pre, (ids,), limit=3, evaluator="cost_model", quiet=True)
        assert_close(lp(ids), want, "prefill")
        _, k0, v0 = want
        past = torch.export.Dim("past", min=1, max=64)
        tok = ids[:, -1:]
        ld = luminal_c.compile(dec, (tok, k0, v0), limit=3, evaluator="cost_model", quiet=True,
                               dynamic_shapes=(None, {3: past}, {3: past}))
        assert_close(ld(tok, k0, v0), dec(tok, k0, v0), "decode at past=9")
        k1, v1 = torch.cat([k0, k0[:, :, :, :2]], 3), torch.cat([v0, v0[:, :, :, :2]], 3)
        assert_close(ld(tok, k1, v1), dec(tok, k1, v1), "decode at past=11")
