"""python -m luminal_c: the package's command line.

    python -m luminal_c info             the C library, its version, the cache folder
    python -m luminal_c cache            the cache's folder, entries and size
    python -m luminal_c cache --clear    removes every cached program
    python -m luminal_c export MODULE:FACTORY OUT   (see --help)
"""
import argparse
import os
import sys


def _size(d):
    n = 0
    for root, _, files in os.walk(d):
        for f in files:
            try:
                n += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return n


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m luminal_c",
                                 description="luminal-c's Python package: PyTorch models in, "
                                             "compiled programs out (docs/python.md).")
    sub = ap.add_subparsers(dest="cmd")
    sub.add_parser("info", help="the C library's path and version, the cache folder")
    c = sub.add_parser("cache", help="the on-disk cache of compiled programs")
    c.add_argument("--clear", action="store_true", help="remove every cached program")
    a = ap.parse_args(argv)
    from . import _lib
    from .compiler import cache_dir, clear_cache
    if a.cmd == "info":
        L = _lib.lib()
        print("library: %s" % L.path)
        print("version: %s" % _lib.version())
        print("cache: %s" % cache_dir())
        return 0
    if a.cmd == "cache":
        d = cache_dir()
        if a.clear:
            print("cleared %d cached programs from %s" % (clear_cache(), d))
            return 0
        entries = [e for e in os.listdir(d) if os.path.isdir(os.path.join(d, e))] if os.path.isdir(d) else []
        print("cache: %s: %d programs, %.1f MiB" % (d, len(entries), _size(d) / 2 ** 20))
        return 0
    ap.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
