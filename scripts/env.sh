# Sourced by the scripts: common environment for building and running gcoll.
GCOLL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GCOLL_BUILD="${GCOLL_BUILD:-$GCOLL_ROOT/build}"
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
# mpirun refuses root and more ranks than cores unless told otherwise.
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1

# Installs what is missing and builds (with CUDA when nvcc is there): the common start
# of the README's commands. Arguments: the CMake targets to build (default: all of them;
# the main job builds only the library and its benchmark).
gcoll_setup_and_build() {
  bash "$GCOLL_ROOT/scripts/setup.sh"
  local cuda_flag=()
  command -v nvcc >/dev/null 2>&1 && cuda_flag=(-DGCOLL_WITH_CUDA=ON)
  GCOLL_BUILD_TARGETS="$*" bash "$GCOLL_ROOT/scripts/build.sh" "${cuda_flag[@]}"
}
