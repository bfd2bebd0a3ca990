#!/usr/bin/env bash
# Makes a prefix for gcoll's MPI-5 standard ABI build (-DGCOLL_MPI=abi
# -DGCOLL_MPI_ABI_ROOT=<prefix>): a Python virtual environment at <prefix> with PyPI's
# mpich wheel (MPICH 5.0.2), which holds include/mpi_abi.h, lib/libmpi_abi.so(.1), and the
# launcher bin/mpiexec (hydra). Nothing outside <prefix> is touched. Idempotent: a prefix
# that already has the ABI is left alone.
#   scripts/mpi_abi.sh <prefix>        (scripts/test.sh: build-abi/mpi-abi)
# Environment: GCOLL_MPICH_WHEEL (default mpich==5.0.2): what pip installs (a version
# spec or a wheel file).
set -euo pipefail
prefix="${1:?usage: mpi_abi.sh <prefix>}"
wheel="${GCOLL_MPICH_WHEEL:-mpich==5.0.2}"
if [ -f "$prefix/include/mpi_abi.h" ] && [ -e "$prefix/lib/libmpi_abi.so" ] && [ -x "$prefix/bin/mpiexec" ]; then
  echo "mpi_abi: $prefix has the MPI standard ABI"
  exit 0
fi
echo "mpi_abi: installing $wheel into the virtual environment $prefix"
python3 -m venv "$prefix"
"$prefix/bin/pip" install --quiet --disable-pip-version-check --no-deps "$wheel"
for f in include/mpi_abi.h lib/libmpi_abi.so bin/mpiexec; do
  [ -e "$prefix/$f" ] || { echo "mpi_abi: $wheel did not install $prefix/$f" >&2; exit 1; }
done
