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
    prompt, steps = 9, 4
    ids = torch.randint(0, 100, (1, prompt))
    with torch.no_grad():
        want = pre(ids)
        lp = luminal_c.compile(pre, (ids,), limit=3, evaluator="cost_model", quiet=True)
        assert_close(lp(ids), want, "prefill")
        logits, k0, v0 = want
        mx = prompt + steps
        kc = torch.zeros(k0.shape[:3] + (mx, k0.shape[4]))
        vc = torch.zeros_like(kc)
        kc[:, :, :, :prompt] = k0
        vc[:, :, :, :prompt] = v0
        pos = torch.tensor([prompt])
        tok = ids[:, -1:]
        ld = luminal_c.compile(dec, (tok, pos, kc, vc), limit=3, evaluator="cost_model", quiet=True)
        assert_close(ld(tok, pos, kc, vc), dec(tok, pos, kc, vc), "decode at position 9")
        # the whole generation with the static cache, against torch's own loop
        ka, va = kc.clone(), vc.clone()
        want_toks = lb.generate(dec, logits, kc, vc, prompt, steps)
        got_toks = lb.generate(ld, logits, ka, va, prompt, steps)
        assert torch.equal(got_toks, want_toks)
        assert_close(ka, kc, "the K cache after generation")
        # the decode at a later position, on the updated caches
        pos2 = torch.tensor([prompt + 2])
        assert_close(ld(tok, pos2, kc, vc), dec(tok, pos2, kc, vc), "decode at position 11")
