#!/usr/bin/env bash
# Installs what gcoll needs to build and test, from Debian's packages. Idempotent and
# non-interactive: packages already present are left alone; apt runs only if needed.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  openmpi-bin libopenmpi-dev gfortran
  mpich libmpich-dev
  libucx-dev libhwloc-dev
  googletest libgtest-dev
  python3 python3-venv gnuplot-nox
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: all packages present"
fi

# Open MPI and MPICH side by side: the plain names (mpicc, mpirun) are Debian
# alternatives, Open MPI's by priority. gcoll's builds use the suffixed names
# (mpicc.openmpi, mpiexec.mpich: cmake/GcollMpiFlavor.cmake) and do not depend on them.
if [ "$(readlink -f /usr/bin/mpirun 2>/dev/null)" != "$(readlink -f /usr/bin/mpirun.openmpi 2>/dev/null)" ]; then
  echo "setup: note: mpirun is not Open MPI's ($(readlink -f /usr/bin/mpirun)); gcoll's builds do not use it"
fi

# The CUDA toolkit is optional (gcoll builds without it); use it when it is installed.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: CUDA toolkit found in /usr/local/cuda (add /usr/local/cuda/bin to PATH)"
fi
