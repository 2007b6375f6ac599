"""The four models of the issue, each exported, compiled with the cost model, run on the
CPU executor and compared with torch eager within the dtype's tolerance."""
import torch

import luminal_c
from models import MLP, BertLayer, GPT2Block, Llama, init_fan_in
from util import assert_close

T = torch.export.Dim


def run_model(model, args, dynamic_shapes=None, dtype=torch.float32):
    model = init_fan_in(model).to(dtype)
    args = tuple(a.to(dtype) if a.is_floating_point() else a for a in args)
    with torch.no_grad():
        want = model(*args)
    ex = luminal_c.export(model, args, dynamic_shapes=dynamic_shapes)
    run = luminal_c.compile(ex, limit=8, evaluator="cost_model", quiet=True)
    assert run.backend == "cpu"
    assert run.summary.get("evaluator") == "cost-model", run.summary
    got = run(*args)
    assert_close(got, want, type(model).__name__)
    return run, ex


def test_mlp():
    torch.manual_seed(1)
    run_model(MLP(), (torch.randn(8, 64),))


def test_mlp_bf16():
    torch.manual_seed(1)
    run_model(MLP(), (torch.randn(8, 64),), dtype=torch.bfloat16)


def test_llama_decoder_dynamic_sequence():
    torch.manual_seed(2)
    ids = torch.randint(0, 96, (2, 12))
    run, ex = run_model(Llama(), (ids,), dynamic_shapes=({1: T("seq", min=2, max=32)},))
    assert [d["name"] for d in ex.dims] == ["seq"]
    assert ex.dims[0]["min"] == 2 and ex.dims[0]["max"] == 32 and ex.dims[0]["profile"] == 12
    # another length through the same program
    model = init_fan_in(Llama())
    ids2 = torch.randint(0, 96, (2, 7))
    with torch.no_grad():
        assert_close(run(ids2), model(ids2), "llama at seq=7")


def test_gpt2_block():
    torch.manual_seed(3)
    run_model(GPT2Block(), (torch.randint(0, 80, (2, 16)),))


def test_bert_layer_padding_mask():
    torch.manual_seed(4)
    x = torch.randn(2, 10, 64)
    mask = torch.ones(2, 10, dtype=torch.int64)
    mask[0, 7:] = 0
    mask[1, 4:] = 0
    run_model(BertLayer(), (x, mask))
