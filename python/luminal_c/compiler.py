"""luminal_c.compile: an exported model searched, compiled and loaded in this process.

    run = luminal_c.compile(model, (x,))        # or compile(luminal_c.export(...))
    y = run(x)

The search runs through the C library (luminal.h's luminal_compile, which is what
`luminal_search --graph G --out D` runs), its progress on stderr as the CLI prints it; the
program is loaded through program.h with the weights set once and kept resident. Torch
tensors on the GPU go to the program as device pointers (no copy); without a GPU the
program runs on llir's CPU executor, and the first such program says so on stderr.

Compiled programs are cached on disk, keyed by the graph's bytes, the compiler's version
and rules, and the search's options: $LUMINAL_C_CACHE, else $XDG_CACHE_HOME/luminal_c,
else ~/.cache/luminal_c. `python -m luminal_c cache --clear` (or clear_cache()) empties it.
"""
import ctypes
import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading

import torch
import torch.utils._pytree as pytree

from . import _lib
from ._lib import LmErr, LuminalError, TensorInfo, check
from .export import Exported, export, _TORCH_DTYPES

__all__ = ["compile", "CompiledModel", "cache_dir", "clear_cache"]

PG_BACKEND_AUTO, PG_BACKEND_GPU, PG_BACKEND_CPU = 0, 1, 2
_EVALUATORS = {"auto": 0, "cost_model": 1, "cost-model": 1, "gpu": 2}
_said_cpu = False
_lock = threading.Lock()


def cache_dir():
    """Where compiled programs are kept: $LUMINAL_C_CACHE, else $XDG_CACHE_HOME/luminal_c,
    else ~/.cache/luminal_c."""
    d = os.environ.get("LUMINAL_C_CACHE")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "luminal_c")


def clear_cache():
    """Removes every cached program. Returns how many entries there were."""
    d = cache_dir()
    if not os.path.isdir(d):
        return 0
    n = 0
    for e in os.listdir(d):
        p = os.path.join(d, e)
        if os.path.isdir(p):
            shutil.rmtree(p, ignore_errors=True)
            n += 1
    return n


def _worker_exe():
    here = os.path.dirname(os.path.abspath(__file__))
    exe = os.path.join(here, "bin", "luminal_search")
    if os.path.exists(exe):
        return exe
    return os.environ.get("LUMINAL_WORKER_EXE")


def _cache_key(graph_text, limit, seed, evaluator, time_limit):
    L = _lib.lib()
    h = hashlib.sha256()
    h.update(b"luminal_c cache v1\0")
    h.update(L.luminal_version() + b"\0")
    h.update(hashlib.sha256(L.luminal_rules_builtin()).digest())
    h.update(("%d %d %d %r\0" % (limit, seed, evaluator, time_limit)).encode())
    h.update(graph_text.encode())
    return h.hexdigest()[:40]


def _compile_dir(graph_text, limit, seed, evaluator, time_limit, quiet, cache):
    """The program directory for graph_text, from the cache or compiled into it.
    Returns (dir, hit, summary)."""
    key = _cache_key(graph_text, limit, seed, evaluator, time_limit)
    root = cache_dir() if cache else tempfile.mkdtemp(prefix="luminal_c.")
    entry = os.path.join(root, key) if cache else root
    prog = os.path.join(entry, "program")
    if cache and os.path.exists(os.path.join(prog, "plan.json")):
        try:
            with open(os.path.join(entry, "summary.json")) as f:
                summary = json.load(f)
        except (OSError, ValueError):
            summary = {}
        return prog, True, summary
    os.makedirs(root, exist_ok=True)
    work = tempfile.mkdtemp(prefix=key[:12] + ".tmp.", dir=root) if cache else entry
    gpath = os.path.join(work, "input.json")
    with open(gpath, "w") as f:
        f.write(graph_text)
    L = _lib.lib()
    o = _lib.CompileOptions()
    L.luminal_compile_options_default(ctypes.byref(o))
    o.limit = limit
    o.seed = seed
    o.time_limit_s = time_limit
    o.evaluator = evaluator
    o.quiet = 1 if quiet else 0
    exe = _worker_exe()
    o.worker_exe = exe.encode() if exe else None
    err = LmErr()
    out = ctypes.c_void_p()
    rc = L.luminal_compile(gpath.encode(), work.encode(), ctypes.byref(o), ctypes.byref(out),
                           ctypes.byref(err))
    summary = {}
    if out.value:
        try:
            summary = json.loads(ctypes.string_at(out.value).decode())
        finally:
            L.luminal_free(out)
    if rc != 0:
        if cache:
            shutil.rmtree(work, ignore_errors=True)
        raise LuminalError(err, "luminal_c.compile")
    with open(os.path.join(work, "summary.json"), "w") as f:
        json.dump(summary, f)
    if cache:
        try:
            os.rename(work, entry)
        except OSError:
            # another process put the same program there first: use theirs
            shutil.rmtree(work, ignore_errors=True)
    return prog, False, summary


class _Program:
    """A loaded program (program.h), freed with the object."""

    def __init__(self, path, backend):
        L = _lib.lib()
        self.L = L
        self.opts = ctypes.create_string_buffer(1024)  # pg_options: zeroed = the defaults
        L.pg_options_default(self.opts)
        ctypes.c_int.from_buffer(self.opts, 0).value = backend  # pg_options.backend
        err = LmErr()
        self.p = L.pg_program_load(path.encode(), self.opts, ctypes.byref(err))
        if not self.p:
            raise LuminalError(err, "luminal_c: loading %s" % path)

    def __del__(self):
        p, self.p = getattr(self, "p", None), None
        if p:
            self.L.pg_program_free(p)

    def info(self, i, output):
        err, ti = LmErr(), TensorInfo()
        f = self.L.pg_program_output_info if output else self.L.pg_program_input_info
        check(f(self.p, i, ctypes.byref(ti), ctypes.byref(err)), err)
        return ti


def _gpu_available():
    return torch.cuda.is_available()


class CompiledModel:
    """A compiled model: call it like the model (tensors in, the model's output structure
    out). .backend is 'gpu' or 'cpu', .backend_note says why, .cache_hit whether the
    program came from the cache, .summary the search's summary (luminal_search --json),
    .program_dir where the program lies, .exported the Exported it was compiled from."""

    def __init__(self, exported, program_dir, cache_hit, summary, backend="auto", device=None):
        self.exported = exported
        self.program_dir = program_dir
        self.cache_hit = cache_hit
        self.summary = summary
        want = {"auto": PG_BACKEND_AUTO, "gpu": PG_BACKEND_GPU, "cpu": PG_BACKEND_CPU}[backend]
        self._prog = _Program(program_dir, want)
        L, p = self._prog.L, self._prog.p
        self.backend = "gpu" if L.pg_program_backend(p) == PG_BACKEND_GPU else "cpu"
        self.backend_note = L.pg_program_backend_note(p).decode()
        global _said_cpu
        if self.backend == "cpu" and not _said_cpu:
            _said_cpu = True
            print("luminal_c: no GPU: running on the CPU executor (%s)" % self.backend_note,
                  file=sys.stderr)
        self._n_in = L.pg_program_input_count(p)
        self._n_out = L.pg_program_output_count(p)
        self._index = {}
        for i in range(self._n_in):
            self._index[self._prog.info(i, False).name.decode()] = i
        self._user = [self._index[n] for n in exported.user_inputs]
        self._keep = []  # tensors whose memory the program reads (device inputs)
        self._set_weights()

    def _dev(self):
        return torch.device("cuda") if self.backend == "gpu" else torch.device("cpu")

    def _set_one(self, i, t):
        L, p = self._prog.L, self._prog.p
        err = LmErr()
        if self.backend == "gpu" and t.is_cuda:
            check(L.pg_program_set_input_device(p, i, t.data_ptr(), t.numel() * t.element_size(),
                                                ctypes.byref(err)), err, "luminal_c: input")
            self._keep.append(t)
        else:
            t = t.cpu()
            check(L.pg_program_set_input(p, i, ctypes.c_void_p(t.data_ptr()),
                                         t.numel() * t.element_size(), ctypes.byref(err)),
                  err, "luminal_c: input")

    def _set_weights(self):
        # Set once and kept: the program holds the weights (host inputs are copied in; on
        # the GPU they stay in device memory, torch's or the program's)
        for name, w in self.exported.weights.items():
            t = w.detach().contiguous()
            if self.backend == "gpu" and not t.is_cuda and _gpu_available():
                t = t.cuda()
            self._set_one(self._index[name], t)
        self._wkeep = list(self._keep)

    def _dtype(self, ti):
        return _TORCH_DTYPES[ti.dtype.decode()]

    def __call__(self, *args, **kwargs):
        flat = [a for a in pytree.tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
        if len(flat) != len(self._user):
            raise TypeError("luminal_c: the compiled model takes %d tensors, got %d"
                            % (len(self._user), len(flat)))
        L, p = self._prog.L, self._prog.p
        err = LmErr()
        # dims from the inputs' shapes
        for name, (i, axis) in self.exported.dim_sources.items():
            check(L.pg_program_set_dim(p, name.encode(), int(flat[i].shape[axis]),
                                       ctypes.byref(err)), err, "luminal_c: dim %s" % name)
        self._keep = list(self._wkeep)
        out_device = flat[0].device if flat else torch.device("cpu")
        for k, t in zip(self._user, flat):
            ti = self._prog.info(k, False)
            want = self._dtype(ti)
            if tuple(t.shape) != tuple(ti.dims[:ti.ndim]):
                raise ValueError("luminal_c: input %s has shape %s; the program expects %s"
                                 % (ti.name.decode(), tuple(t.shape), tuple(ti.dims[:ti.ndim])))
            t = t.detach().to(want).contiguous()
            self._set_one(k, t)
        if self.backend == "gpu":
            torch.cuda.current_stream().synchronize()
        check(L.pg_program_run(p, ctypes.byref(err)), err, "luminal_c: run")
        outs = []
        for j in range(self._n_out):
            ti = self._prog.info(j, True)
            dt = self._dtype(ti)
            shape = tuple(ti.dims[:ti.ndim])
            if self.backend == "gpu":
                outs.append(self._out_device(j, ti, dt, shape))
                continue
            ptr, nb = ctypes.c_void_p(), ctypes.c_size_t()
            check(L.pg_program_output(p, j, ctypes.byref(ptr), ctypes.byref(nb), ctypes.byref(err)),
                  err, "luminal_c: output")
            buf = (ctypes.c_char * nb.value).from_address(ptr.value) if nb.value else bytearray()
            t = torch.frombuffer(bytearray(buf), dtype=torch.uint8)
            t = t.view(dt).reshape(shape) if nb.value else torch.empty(shape, dtype=dt)
            outs.append(t.to(out_device) if out_device.type != "cpu" else t)
        spec = self.exported.out_spec
        if spec is not None:
            return pytree.tree_unflatten(outs, spec)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _out_device(self, j, ti, dt, shape):
        """Output j on the GPU: the program's buffer wrapped (__cuda_array_interface__), then
        copied into a tensor torch owns (the buffer is the program's until the next run)."""
        L, p = self._prog.L, self._prog.p
        err = LmErr()
        dptr, nb = ctypes.c_uint64(), ctypes.c_size_t()
        check(L.pg_program_output_device(p, j, ctypes.byref(dptr), ctypes.byref(nb),
                                         ctypes.byref(err)), err, "luminal_c: output")
        raw = {1: "|u1", 2: "<i2", 4: "<i4", 8: "<i8"}[ti.elem_size]
        n = int(nb.value) // ti.elem_size

        class _Buf:
            __cuda_array_interface__ = {"shape": (n,), "typestr": raw, "data": (dptr.value, False),
                                        "version": 3, "strides": None}
        t = torch.as_tensor(_Buf(), device="cuda").clone()
        return t.view(dt).reshape(shape)

    def __repr__(self):
        return "<luminal_c.CompiledModel %s on %s (%s)>" % (self.program_dir, self.backend,
                                                           "cache hit" if self.cache_hit else "compiled")


def compile(model_or_export, example_args=None, *, limit=20, dynamic_shapes=None, seed=0,
            evaluator="auto", time_limit=600.0, quiet=False, cache=True, backend="auto"):
    """Compiles a model (with example_args, through export) or an Exported into a
    CompiledModel.

    limit: candidates measured by the search (luminal_search --limit); seed; evaluator:
    'auto' (the GPU when one is visible, else the cost model), 'cost_model' or 'gpu';
    time_limit: the search's seconds; quiet: no progress on stderr; cache: read and write
    the on-disk cache (cache_dir()); backend: 'auto', 'gpu' or 'cpu' for running it.
    A failed search raises LuminalError with the C message and its location."""
    if isinstance(model_or_export, Exported):
        ex = model_or_export
    else:
        if example_args is None:
            raise TypeError("luminal_c.compile(model, example_args): example_args is needed to "
                            "export a model")
        ex = export(model_or_export, example_args, dynamic_shapes=dynamic_shapes)
    if evaluator not in _EVALUATORS:
        raise ValueError("evaluator must be one of %s" % sorted(_EVALUATORS))
    text = ex.json()
    with _lock:
        prog, hit, summary = _compile_dir(text, int(limit), int(seed), _EVALUATORS[evaluator],
                                          float(time_limit), quiet, cache)
    return CompiledModel(ex, prog, hit, summary, backend=backend)
