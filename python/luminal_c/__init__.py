"""luminal_c: PyTorch models in, compiled programs out (docs/python.md).

    import torch, luminal_c
    run = luminal_c.compile(model, (x,))     # export, search, compile, load
    y = run(x)

    ex = luminal_c.export(model, (x,))       # the graph JSON and the weights
    ex.save("out")                           # out/graph.json, out/weights.safetensors

    torch.compile(model, backend="luminal")  # each subgraph through luminal_c.compile

export() walks torch.export's graph into luminal-c's graph format; compile() runs the
search through the C library in this process and loads the program with its weights
resident; programs are cached on disk (cache_dir(), clear_cache()). LuminalError carries
the C library's message and location; UnsupportedOpError names the op and source line.
"""
from ._lib import LuminalError, version
from .export import Exported, ExportError, UnsupportedOpError, SUPPORTED_OPS, export, write_safetensors
from .compiler import CompiledModel, cache_dir, clear_cache, compile

__version__ = "0.1.0"
__all__ = ["export", "compile", "Exported", "CompiledModel", "LuminalError", "ExportError",
           "UnsupportedOpError", "SUPPORTED_OPS", "cache_dir", "clear_cache", "version",
           "write_safetensors"]
