"""torch.compile(model, backend="luminal"): the backend torch finds through the entry point
group torch_dynamo_backends (python/pyproject.toml).

Dynamo traces the model, splits it at graph breaks (torch's business) and hands each
subgraph, an fx GraphModule with example inputs, to luminal_backend, which exports it
(luminal_c.export), compiles it (luminal_c.compile, with the cache) and returns the
compiled program as the subgraph's callable. Options come through torch.compile's
options={...}: limit, seed, evaluator, time_limit, quiet, backend (luminal_c.compile's).
"""
import torch

from .compiler import compile as _compile
from .export import export as _export

__all__ = ["luminal_backend"]


def luminal_backend(gm, example_inputs, **options):
    """A torch.compile backend: gm (torch.fx.GraphModule) and its example inputs in, a
    callable returning what gm returns out."""
    if any(not isinstance(a, torch.Tensor) for a in example_inputs):
        raise NotImplementedError(
            "luminal backend: a subgraph takes symbolic ints (dynamic shapes); compile with "
            "torch.compile(..., dynamic=False) or use luminal_c.compile with dynamic_shapes")
    opts = dict(options.get("options") or {}, **{k: v for k, v in options.items() if k != "options"})
    ex = _export(gm, tuple(example_inputs), name="subgraph")
    compiled = _compile(ex, limit=opts.get("limit", 20), seed=opts.get("seed", 0),
                        evaluator=opts.get("evaluator", "auto"),
                        time_limit=opts.get("time_limit", 600.0), quiet=opts.get("quiet", False),
                        backend=opts.get("backend", "auto"))

    def run(*args):
        out = compiled(*args)
        return out if isinstance(out, (tuple, list)) else (out,)
    run.compiled = compiled
    return run
