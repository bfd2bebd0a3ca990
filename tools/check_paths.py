#!/usr/bin/env python3
"""Every source path that the docs and the code's comments cite exists.

Usage: check_paths.py SOURCE_DIR

Looks for paths such as `src/coll/team.h`, `docs/engine.md` or `coll/pack.cc` (relative to
src/) in the tracked Markdown, source and build files, and prints each one that names no
file. Generated files (a `<name>.in` template beside them) and the MPI-5 standard ABI's
header (include/mpi_abi.h, which the ABI build takes from MPICH) count as existing.
Exit status 1 when something is missing: the docs lag the code.
"""
import os
import re
import subprocess
import sys

ENDINGS = ('.md', '.h', '.cc', '.cu', '.py', '.sh', '.txt', '.c', '.f90', '.cmake')
TOP = r'(?:src|mpi_tests|tests|benchmarks|scripts|tools|docs|include|cmake)'
SRC = r'(?:pmpi|coll|mem|net|cuda|base|boot|topo|kernels|api)'
SUFFIX = r'\.(?:h|cc|cu|md|py|sh|c|f90|cmake|txt|map|in)\b'
FULL = re.compile(r'(?<![\w/.-])(' + TOP + r'/[\w./-]*\w' + SUFFIX + ')')
SHORT = re.compile(r'(?<![\w/.-])(' + SRC + r'/[\w./-]*\w' + SUFFIX + ')')
EXTERNAL = {'include/mpi_abi.h'}


def tracked(root):
    try:
        out = subprocess.run(['git', '-C', root, 'ls-files'], capture_output=True, text=True, check=True).stdout
        return out.split()
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith(('.', 'build'))]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return files


def exists(root, path):
    return path in EXTERNAL or any(os.path.exists(os.path.join(root, p)) for p in (path, path + '.in'))


def main():
    root = sys.argv[1]
    missing = set()
    for f in tracked(root):
        if not f.endswith(ENDINGS) or f.startswith('shared/'):
            continue
        try:
            with open(os.path.join(root, f), errors='replace') as fh:
                text = fh.read()
        except OSError:
            continue
        for m in FULL.finditer(text):
            if not exists(root, m.group(1)):
                missing.add((f, m.group(1)))
        for m in SHORT.finditer(text):
            p = m.group(1)
            if not exists(root, 'src/' + p) and not exists(root, p):
                missing.add((f, p))
    for f, p in sorted(missing):
        print(f'{f}: cites {p}, which does not exist')
    return 1 if missing else 0


if __name__ == '__main__':
    sys.exit(main())
