"""The C library through ctypes: luminal.h (compile), program.h (load, run) and base.h's
error record.

The library is the package's own libluminal.so (installed beside this file by
`pip install ./python`), or the file named by $LUMINAL_C_LIBRARY (a build tree's
build/lib/libluminal.so, for development). Every call that can fail fills an lm_err; a
failure raises LuminalError with the C message, which begins with its location.
"""
import ctypes
import glob
import os

LM_ERR_NAME = 128
LM_ERR_MSG = 2048
LM_NONE = 0xFFFFFFFF


class LmErr(ctypes.Structure):
    """base.h's lm_err, field for field (luminal_err_size checks the size)."""
    _fields_ = [
        ("code", ctypes.c_int),
        ("line", ctypes.c_uint32),
        ("col", ctypes.c_uint32),
        ("node_id", ctypes.c_uint32),
        ("file", ctypes.c_char * LM_ERR_NAME),
        ("node", ctypes.c_char * LM_ERR_NAME),
        ("field", ctypes.c_char * LM_ERR_NAME),
        ("msg", ctypes.c_char * LM_ERR_MSG),
    ]


class CompileOptions(ctypes.Structure):
    """luminal.h's luminal_compile_options."""
    _fields_ = [
        ("limit", ctypes.c_uint64),
        ("seed", ctypes.c_uint64),
        ("time_limit_s", ctypes.c_double),
        ("evaluator", ctypes.c_int32),
        ("quiet", ctypes.c_int32),
        ("rules_path", ctypes.c_char_p),
        ("worker_exe", ctypes.c_char_p),
    ]


PG_MAX_RANK = 8


class TensorInfo(ctypes.Structure):
    """program.h's pg_tensor_info."""
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("dtype", ctypes.c_char_p),
        ("elem_size", ctypes.c_uint32),
        ("ndim", ctypes.c_uint32),
        ("dims", ctypes.c_int64 * PG_MAX_RANK),
        ("numel", ctypes.c_uint64),
        ("bytes", ctypes.c_uint64),
    ]


class LuminalError(RuntimeError):
    """A failure of the C library: .code (lm_code), .code_name, .message (the C message,
    which begins with its location), .file, .line, .col, .node, .field."""

    def __init__(self, err, what=""):
        self.code = err.code
        self.code_name = _code_name(err.code)
        self.message = err.msg.decode("utf-8", "replace")
        self.file = err.file.decode("utf-8", "replace")
        self.line = err.line
        self.col = err.col
        self.node = err.node.decode("utf-8", "replace")
        self.field = err.field.decode("utf-8", "replace")
        super().__init__((what + ": " if what else "") + self.message +
                         " [%s]" % self.code_name)


_lib = None


def _find():
    env = os.environ.get("LUMINAL_C_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, "libluminal.so*")))
    if not found:
        raise ImportError(
            "luminal_c: libluminal.so is not beside %s; install the package with "
            "`pip install ./python` from the repository, or set LUMINAL_C_LIBRARY to a "
            "built build/lib/libluminal.so" % here)
    return found[0]


def lib():
    """The loaded library, its functions typed (loaded once)."""
    global _lib
    if _lib is not None:
        return _lib
    path = _find()
    L = ctypes.CDLL(path)
    P, E = ctypes.c_void_p, ctypes.POINTER(LmErr)
    u32, i64, u64, sz = ctypes.c_uint32, ctypes.c_int64, ctypes.c_uint64, ctypes.c_size_t
    cs = ctypes.c_char_p
    sig = {
        "luminal_version": (cs, []),
        "luminal_err_size": (sz, []),
        "luminal_rules_builtin": (cs, []),
        "luminal_compile_options_default": (None, [ctypes.POINTER(CompileOptions)]),
        "luminal_compile": (ctypes.c_int, [cs, cs, ctypes.POINTER(CompileOptions),
                                           ctypes.POINTER(P), E]),
        "luminal_free": (None, [P]),
        "lm_code_name": (cs, [ctypes.c_int]),
        "pg_options_default": (None, [P]),
        "pg_program_load": (P, [cs, P, E]),
        "pg_program_free": (None, [P]),
        "pg_program_backend": (ctypes.c_int, [P]),
        "pg_program_backend_note": (cs, [P]),
        "pg_program_input_count": (u32, [P]),
        "pg_program_output_count": (u32, [P]),
        "pg_program_input_find": (u32, [P, cs]),
        "pg_program_input_info": (ctypes.c_int, [P, u32, ctypes.POINTER(TensorInfo), E]),
        "pg_program_output_info": (ctypes.c_int, [P, u32, ctypes.POINTER(TensorInfo), E]),
        "pg_program_dim_count": (u32, [P]),
        "pg_program_dim_name": (cs, [P, u32]),
        "pg_program_dim_info": (ctypes.c_int, [P, u32, ctypes.POINTER(i64),
                                               ctypes.POINTER(i64), ctypes.POINTER(i64), E]),
        "pg_program_set_dim": (ctypes.c_int, [P, cs, i64, E]),
        "pg_program_set_input": (ctypes.c_int, [P, u32, P, sz, E]),
        "pg_program_set_input_device": (ctypes.c_int, [P, u32, u64, sz, E]),
        "pg_program_run": (ctypes.c_int, [P, E]),
        "pg_program_output": (ctypes.c_int, [P, u32, ctypes.POINTER(P), ctypes.POINTER(sz), E]),
        "pg_program_output_device": (ctypes.c_int, [P, u32, ctypes.POINTER(u64),
                                                    ctypes.POINTER(sz), E]),
    }
    for name, (res, args) in sig.items():
        f = getattr(L, name)
        f.restype = res
        f.argtypes = args
    if L.luminal_err_size() != ctypes.sizeof(LmErr):
        raise ImportError("luminal_c: %s's lm_err is %d bytes, this binding's %d: the library "
                          "and the package do not match" % (path, L.luminal_err_size(),
                                                            ctypes.sizeof(LmErr)))
    L.path = path
    _lib = L
    return L


def _code_name(code):
    try:
        return lib().lm_code_name(code).decode()
    except Exception:  # noqa: BLE001 - a name is a courtesy
        return "code %d" % code


def check(rc, err, what=""):
    if rc != 0 or err.code != 0:
        raise LuminalError(err, what)


def version():
    """The C library's version (luminal_version)."""
    return lib().luminal_version().decode()
