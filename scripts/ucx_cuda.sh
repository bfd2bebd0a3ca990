#!/usr/bin/env bash
# UCX with CUDA transports for the GPU machine, taken from NVIDIA's PyPI wheel
# libucx-cu13 (UCX 1.22, built --with-cuda; docs/ucx-cuda.md). Debian's UCX 1.13 has no
# CUDA transports; the wheel's libraries have the same sonames (libucp.so.0, libuct.so.0,
# libucs.so.0, libucm.so.0), so they stand in for Debian's under Debian's Open MPI and
# under libgcoll.so when they come first in LD_LIBRARY_PATH.
#
#   scripts/ucx_cuda.sh [fetch] [--no-perftest]   ON A MACHINE WITH PyPI (not the GPU
#                          machine): downloads the wheel (pip download --no-deps) and
#                          unpacks what is needed into .ucx-cuda/ (git-ignored), the debug
#                          information stripped; prints the size
#   scripts/ucx_cuda.sh check                     anywhere: which UCX the libraries in
#                          .ucx-cuda/ are, what they need and what they find on this
#                          machine (ucx_info -v, memory domains and transports)
#   scripts/ucx_cuda.sh env                       prints the export lines (eval "$(...)")
#
# What .ucx-cuda/ holds (the wheel's own layout, so that the RPATHs
# $ORIGIN/../../../libucx_cu13.libs of the CUDA modules and $ORIGIN/../../libucx_cu13.libs
# of ucx_perftest still resolve):
#   libucx/lib/lib{ucp,uct,ucs,ucm}.so.0      UCX 1.22 (what Open MPI and libgcoll link)
#   libucx/lib/ucx/libuct_cuda.so.0           cuda_copy, cuda_ipc (needs the driver's
#                                             libcuda.so.1 and libnvidia-ml.so.1)
#   libucx/lib/ucx/libucm_cuda.so.0           memory hooks for CUDA frees (libcuda.so.1 and
#                                             the wheel's libcudart)
#   libucx/lib/ucx/libuct_cma.so.0            cma (host memory between processes)
#   libucx/bin/ucx_info                       ucx_info -v / -d of this UCX
#   libucx/bin/ucx_perftest, libucx/lib/ucx/libucx_perftest_cuda.so.0
#                                             (unless --no-perftest) UCX's own benchmark,
#                                             -m cuda: UCX moving device memory by itself
#   libucx_cu13.libs/libcudart-*.so.13*, libgomp-*.so.1*   bundled by the wheel
#   env.sh, MANIFEST                          source it: LD_LIBRARY_PATH; wheel, sha256, files
# UCX finds its modules in the directory "ucx" next to the libucs.so.0 it was loaded
# from, so UCX_MODULE_DIR is not needed. No InfiniBand, rdmacm or gdr_copy module is in
# the wheel (one machine: not needed).
#
# On the GPU machine (carry .ucx-cuda along with .gpu-bundle; about 12 MiB with
# ucx_perftest, 5 MiB without):
#   GCOLL_VALIDATE_UCX=cuda scripts/gpu_validate.sh test|bench|all
# or by hand, after sourcing the bundle's env.sh:
#   eval "$(scripts/ucx_cuda.sh env)"; scripts/ucx_cuda.sh check
#
# Settings (environment): GCOLL_UCX_WHEEL (pip requirement, default libucx-cu13==1.22.0),
# GCOLL_UCX_CUDA_DIR (default .ucx-cuda in the repository root). Not UCX_* names: UCX
# warns about UCX_* variables it does not know.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEST=${GCOLL_UCX_CUDA_DIR:-$ROOT/.ucx-cuda}
WHEEL_REQ=${GCOLL_UCX_WHEEL:-libucx-cu13==1.22.0}

mode=fetch
perftest=1
for a in "$@"; do
  case "$a" in
    fetch | check | env) mode=$a ;;
    --no-perftest) perftest=0 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [fetch [--no-perftest] | check | env]" >&2; exit 64 ;;
  esac
done

# shellcheck disable=SC2016  # (the line is for eval: expanded there)
env_lines() {
  printf 'export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n' "$DEST/libucx/lib"
}

do_fetch() {
  local tmp whl x f
  tmp=$(mktemp -d /tmp/gcoll-ucx-wheel.XXXXXX)
  # shellcheck disable=SC2064  # (expand now: tmp is local)
  trap "rm -rf '$tmp'" EXIT
  echo "ucx_cuda.sh: pip download --no-deps $WHEEL_REQ"
  python3 -m pip download --no-deps --only-binary=:all: -d "$tmp" "$WHEEL_REQ" >"$tmp/pip.log" 2>&1 || {
    cat "$tmp/pip.log" >&2
    echo "ucx_cuda.sh: pip download failed (this step needs PyPI)" >&2
    return 2
  }
  whl=$(ls "$tmp"/*.whl)
  x=$tmp/x
  python3 -m zipfile -e "$whl" "$x"
  [ -f "$x/libucx/lib/libucp.so.0" ] || { echo "ucx_cuda.sh: unexpected wheel layout (no libucx/lib/libucp.so.0)" >&2; return 2; }
  rm -rf "$DEST"
  mkdir -p "$DEST/libucx/lib/ucx" "$DEST/libucx/bin"
  # The zip holds copies, not links: take the soname files only.
  for f in libucp libuct libucs libucm; do cp "$x/libucx/lib/$f.so.0" "$DEST/libucx/lib/"; done
  for f in libuct_cuda libucm_cuda libuct_cma; do cp "$x/libucx/lib/ucx/$f.so.0" "$DEST/libucx/lib/ucx/"; done
  cp "$x/libucx/bin/ucx_info" "$DEST/libucx/bin/"
  if [ "$perftest" = 1 ]; then
    cp "$x/libucx/bin/ucx_perftest" "$DEST/libucx/bin/"
    cp "$x/libucx/lib/ucx/libucx_perftest_cuda.so.0" "$DEST/libucx/lib/ucx/"
  fi
  mkdir -p "$DEST/libucx_cu13.libs"
  cp "$x"/libucx_cu13.libs/* "$DEST/libucx_cu13.libs/"
  [ "$perftest" = 1 ] || rm -f "$DEST"/libucx_cu13.libs/libgomp-*
  chmod 755 "$DEST"/libucx/bin/*
  # The wheel's UCX libraries carry their debug information (libucp.so.0: 10.8 MB, 1.3 MB
  # without); the bundled CUDA runtime is stripped already.
  if command -v strip >/dev/null 2>&1; then
    find "$DEST/libucx" -type f \( -name '*.so.0' -o -path '*/bin/*' \) -exec strip --strip-debug {} +
  else
    echo "ucx_cuda.sh: no strip: the libraries keep their debug information (larger)"
  fi
  # (relative to itself: the checkout has another path on the GPU machine)
  cat >"$DEST/env.sh" <<'ENV'
_gcoll_ucx=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export LD_LIBRARY_PATH=$_gcoll_ucx/libucx/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset _gcoll_ucx
ENV
  {
    echo "wheel: $(basename "$whl")"
    echo "sha256: $(sha256sum "$whl" | cut -d' ' -f1)"
    echo "ucx: $(cat "$x/libucx/UCX_WHEEL_VERSION.txt" 2>/dev/null) commit $(cat "$x/libucx/GIT_COMMIT" 2>/dev/null)"
    echo "fetched: $(date -u +%Y-%m-%dT%H:%M:%SZ) with '$WHEEL_REQ'"
    echo "files:"
    (cd "$DEST" && find . -type f ! -name MANIFEST | sort | xargs ls -l | awk '{ printf "  %10d %s\n", $5, $9 }')
  } >"$DEST/MANIFEST"
  grep -qx '/.ucx-cuda/' "$ROOT/.gitignore" 2>/dev/null || echo "ucx_cuda.sh: note: .ucx-cuda/ is not in .gitignore"
  echo "ucx_cuda.sh: $(head -1 "$DEST/MANIFEST" | cut -d' ' -f2-) unpacked into $DEST: $(du -sh "$DEST" | cut -f1)"
  echo "  carry it to the GPU machine with .gpu-bundle; there: GCOLL_VALIDATE_UCX=cuda scripts/gpu_validate.sh ..."
  do_check || true
}

do_check() {
  local lib=$DEST/libucx/lib info=$DEST/libucx/bin/ucx_info m
  [ -x "$info" ] || { echo "ucx_cuda.sh: no $info: run '$0 fetch' on a machine with PyPI" >&2; return 2; }
  [ -f "$DEST/MANIFEST" ] && sed -n '1,3p' "$DEST/MANIFEST"
  echo "== ucx_info -v (LD_LIBRARY_PATH=$lib first)"
  LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$info" -v 2>&1 | sed -n '1,4p'
  echo "== what the CUDA modules need on this machine"
  for m in "$lib"/ucx/libuct_cuda.so.0 "$lib"/ucx/libucm_cuda.so.0; do
    LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd "$m" 2>&1 |
      awk -v m="${m##*/}" '/libcuda\.so|libnvidia-ml|libcudart|not found/ { print "  " m ": " $0 }' | sed 's/\t/ /g'
  done
  echo "== memory domains and transports (ucx_info -d)"
  LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$info" -d 2>&1 |
    grep -E '^# *(Memory domain|Transport|Device):|memory types' | sed 's/^# */  /'
  if LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$info" -d 2>/dev/null | grep -q 'Transport: cuda_copy'; then
    echo "ucx_cuda.sh: cuda_copy present: ucp_context_query reports CUDA memory (UCX_TLS must keep cuda_copy)"
  else
    echo "ucx_cuda.sh: no cuda_copy transport here (no GPU, or libcuda.so.1 / libnvidia-ml.so.1 missing:"
    echo "  UCX_LOG_LEVEL=debug $info -d 2>&1 | grep -i cuda tells which)"
  fi
}

case "$mode" in
  fetch) do_fetch ;;
  check) do_check ;;
  env)
    [ -d "$DEST/libucx/lib" ] || { echo "ucx_cuda.sh: no $DEST" >&2; exit 2; }
    env_lines
    ;;
esac
