"""The package's promises beside the numbers: the documented errors, the cache, the saved
files read by the command-line tools, the torch.compile backend, the README's lines."""
import json
import os
import re
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import luminal_c
from models import MLP, init_fan_in
from util import assert_close

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def _bin(name):
    """A tool installed inside the package (pip install ./python), else a build tree's."""
    p = os.path.join(os.path.dirname(luminal_c.__file__), "bin", name)
    if os.path.exists(p):
        return p
    lib = os.environ.get("LUMINAL_C_LIBRARY")
    if lib:
        build = os.path.dirname(os.path.dirname(lib))
        p = os.path.join(build, "tools", name, name)
        if os.path.exists(p):
            return p
    pytest.fail("no %s: install the package with pip install ./python" % name)


class Unsupported(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        return torch.cumsum(y, dim=-1)  # the unsupported op's line


def test_unsupported_op_names_op_and_source_line():
    with pytest.raises(luminal_c.UnsupportedOpError) as e:
        luminal_c.export(Unsupported(), (torch.randn(3, 4),))
    msg = str(e.value)
    assert "aten.cumsum.default" in msg, msg
    assert e.value.op == "aten.cumsum.default"
    assert "test_api.py:" in msg and "torch.cumsum(y, dim=-1)" in msg, msg
    assert "docs/python.md" in msg


def test_float64_is_a_clear_error():
    with pytest.raises(luminal_c.ExportError, match="float64"):
        luminal_c.export(torch.nn.Linear(4, 4).double(), (torch.randn(2, 4, dtype=torch.float64),))


def test_second_compile_hits_the_cache():
    torch.manual_seed(0)
    m = init_fan_in(MLP(16, 32, 8), seed=5)
    x = torch.randn(3, 16)
    a = luminal_c.compile(m, (x,), limit=3, evaluator="cost_model", quiet=True)
    b = luminal_c.compile(m, (x,), limit=3, evaluator="cost_model", quiet=True)
    assert not a.cache_hit and b.cache_hit
    assert a.program_dir == b.program_dir
    assert a.program_dir.startswith(luminal_c.cache_dir())
    assert torch.equal(a(x), b(x))
    # another limit is another program
    c = luminal_c.compile(m, (x,), limit=4, evaluator="cost_model", quiet=True)
    assert not c.cache_hit
    assert luminal_c.clear_cache() >= 2
    d = luminal_c.compile(m, (x,), limit=3, evaluator="cost_model", quiet=True)
    assert not d.cache_hit


def test_search_progress_on_stderr(capfd):
    m = init_fan_in(MLP(8, 16, 8), seed=6)
    luminal_c.compile(m, (torch.randn(2, 8),), limit=3, evaluator="cost_model", cache=False)
    err = capfd.readouterr().err
    assert re.search(r"search: \[\d+/3\]", err), err[-2000:]
    assert "best" in err


def test_failed_compile_raises_with_the_c_message_and_location():
    ex = luminal_c.export(MLP(8, 16, 8).eval(), (torch.randn(2, 8),))
    bad = json.loads(ex.json())
    bad["nodes"][0]["op"] = "matmull"
    ex.graph = bad
    with pytest.raises(luminal_c.LuminalError) as e:
        luminal_c.compile(ex, limit=2, evaluator="cost_model", quiet=True, cache=False)
    err = e.value
    assert "unknown op 'matmull'" in err.message, err.message
    assert err.file.endswith("input.json") and err.line > 0 and err.col > 0, (err.file, err.line)
    assert err.code_name == "malformed text" or err.code > 0
    assert re.match(r".*input\.json:\d+:\d+: node '", err.message), err.message


def test_save_is_read_by_luminal_search_and_luminal_run(tmp_path):
    torch.manual_seed(1)
    m = init_fan_in(MLP(16, 32, 8), seed=7)
    x = torch.randn(4, 16)
    ex = luminal_c.export(m, (x,))
    d = ex.save(str(tmp_path / "model"))
    assert sorted(os.listdir(d)) == ["graph.json", "weights.safetensors"]
    out = tmp_path / "search"
    r = subprocess.run([_bin("luminal_search"), "--graph", os.path.join(d, "graph.json"), "--limit", "3",
                        "--cost-model", "--quiet", "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # the user's input as .npy; the weights from the safetensors file
    import numpy as np
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    np.save(inputs / ("%s.npy" % ex.user_inputs[0]), x.numpy())
    r = subprocess.run([_bin("luminal_run"), str(out), "--weights", os.path.join(d, "weights.safetensors"),
                        "--inputs", str(inputs), "--outputs", str(tmp_path / "outs"), "--quiet"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    y = np.load(tmp_path / "outs" / "out0.npy")
    with torch.no_grad():
        assert_close(torch.from_numpy(y), m(x), "luminal_run's output")


def test_torch_compile_backend_luminal():
    from importlib.metadata import entry_points
    eps = entry_points(group="torch_dynamo_backends")
    assert "luminal" in [e.name for e in eps], "the entry point is not installed (pip install ./python)"
    torch._dynamo.reset()
    torch.manual_seed(2)
    m = init_fan_in(MLP(16, 32, 8), seed=8)
    x = torch.randn(4, 16)

    def model(x):
        y = m(x)
        print("", end="")  # a graph break: torch's business; each side is a subgraph
        return F.softmax(y, dim=-1) * 2

    opt = torch.compile(model, backend="luminal", dynamic=False,
                        options={"limit": 3, "evaluator": "cost_model", "quiet": True})
    with torch.no_grad():
        got = opt(x)
        want = model(x)
    assert_close(got, want, "torch.compile(backend='luminal')")


def test_torch_compile_backend_new_shapes():
    """dynamo's automatic dynamic shapes: the second shape makes the subgraph dynamic; each
    shape gets its program, and every call matches eager."""
    torch._dynamo.reset()
    m = init_fan_in(MLP(16, 32, 8), seed=9)

    def model(x):
        return torch.softmax(m(x), dim=-1)

    opt = torch.compile(model, backend="luminal",
                        options={"limit": 3, "evaluator": "cost_model", "quiet": True})
    with torch.no_grad():
        for n in (3, 5, 7, 5):
            x = torch.randn(n, 16)
            assert_close(opt(x), model(x), "rows=%d" % n)


def test_readme_lines():
    """The README's three lines, run as they are written there."""
    text = open(os.path.join(REPO, "README.md")).read()
    block = re.search(r"<!-- python-example -->\s*```python\n(.*?)```", text, re.S)
    assert block, "README.md has no python-example block"
    code = block.group(1)
    lines = [ln for ln in code.strip().splitlines() if ln.strip()]
    assert len(lines) == 3, lines
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "tensor(" in r.stdout, r.stdout


def test_cli_help_and_cache():
    r = subprocess.run([sys.executable, "-m", "luminal_c", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "cache" in r.stdout
    r = subprocess.run([sys.executable, "-m", "luminal_c", "info"], capture_output=True, text=True)
    assert r.returncode == 0 and "version: %s" % luminal_c.version() in r.stdout, r.stdout + r.stderr
