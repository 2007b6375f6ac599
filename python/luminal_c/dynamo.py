"""torch.compile(model, backend="luminal"): the backend torch finds through the entry point
group torch_dynamo_backends (python/pyproject.toml).

Dynamo traces the model, splits it at graph breaks (torch's business) and hands each
subgraph, an fx GraphModule with example inputs, to luminal_backend, which exports it
(luminal_c.export), compiles it (luminal_c.compile, with the cache) and returns the
compiled program as the subgraph's callable. Options come through torch.compile's
options={...}: limit, seed, evaluator, time_limit, quiet, backend (luminal_c.compile's).
A subgraph that dynamo makes dynamic is compiled once per concrete shape (luminal_backend).
"""
import torch

from .compiler import compile as _compile
from .export import export as _export

__all__ = ["luminal_backend"]


def _symbolic(a):
    if isinstance(a, torch.Tensor):
        return any(isinstance(s, torch.SymInt) for s in a.shape)
    return isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool))


def luminal_backend(gm, example_inputs, **options):
    """A torch.compile backend: gm (torch.fx.GraphModule) and its example inputs in, a
    callable returning what gm returns out.

    A static subgraph is compiled at once. A subgraph dynamo made dynamic (its inputs
    hold symbolic sizes, after a call at a new shape) is compiled per concrete shape at
    its first call at that shape: the sizes become constants of that program, and each
    shape's program is kept (in memory, and on disk by the cache)."""
    opts = dict(options.get("options") or {}, **{k: v for k, v in options.items() if k != "options"})

    def build(args):
        ex = _export(gm, tuple(args), name="subgraph")
        return _compile(ex, limit=opts.get("limit", 20), seed=opts.get("seed", 0),
                        evaluator=opts.get("evaluator", "auto"),
                        time_limit=opts.get("time_limit", 600.0), quiet=opts.get("quiet", False),
                        backend=opts.get("backend", "auto"))

    def tupled(out):
        return out if isinstance(out, (tuple, list)) else (out,)

    if not any(_symbolic(a) for a in example_inputs):
        compiled = build(example_inputs)

        def run(*args):
            return tupled(compiled(*args))
        run.compiled = compiled
        return run

    programs = {}

    def run_dynamic(*args):
        key = tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else a for a in args)
        c = programs.get(key)
        if c is None:
            c = programs[key] = build(args)
        return tupled(c(*args))
    run_dynamic.programs = programs
    return run_dynamic
