// What the CUDA driver does with legacy IPC handles, on a real GPU, in the cases gcoll's
// IPC caches depend on (2 ranks on one node; rank 0 exports, rank 1 imports). No gcoll:
// plain CUDA and MPI. Prints one line per case; exits 1 when data read through a mapping
// is not what the exporter wrote at that place (the offset rule gcoll uses: the mapping of
// the handle of an allocation's base, from cuMemGetAddressRange, plus the buffer's offset
// in that allocation), 77 without a GPU.
//
// Cases, per allocation size: two cudaMalloc allocations A and B made one after the other
// (small ones may come out of one larger driver allocation): are their handles equal, does
// each open, is the data right; a second open of A's handle while A is mapped (what two
// communicators of one process would do); A freed by the exporter while mapped, a new
// allocation of the same size: same address, same handle, does it open.
#include <cuda.h>
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

// The driver's entry points through the runtime (no link to libcuda: the program must
// start, and skip, on machines without a driver).
decltype(&cuMemGetAddressRange) p_range;
decltype(&cuPointerGetAttribute) p_attr;
decltype(&cuIpcGetMemHandle) p_get;
decltype(&cuIpcOpenMemHandle) p_open;
decltype(&cuIpcCloseMemHandle) p_close;

template <class Fn>
bool entry(const char *name, Fn *fn) {
  void *p = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess || !p)
    return false;
  *fn = reinterpret_cast<Fn>(p);
  return true;
}

struct Export {
  CUipcMemHandle ha, hb, ha2;
  unsigned long long base_a, base_b, base_a2, ptr_a, ptr_b, ptr_a2;
  unsigned long long size_a, size_b, id_a, id_b, id_a2;
};

void range(CUdeviceptr p, unsigned long long *base, unsigned long long *size, unsigned long long *id) {
  CUdeviceptr b = 0;
  size_t s = 0;
  p_range(&b, &s, p);
  *base = b;
  *size = s;
  unsigned long long bid = 0;
  p_attr(&bid, CU_POINTER_ATTRIBUTE_BUFFER_ID, p);
  *id = bid;
}

// 16 bytes at `off` of a mapping of `local`, compared with the fill byte `want`.
bool check(void *local, unsigned long long off, unsigned char want) {
  unsigned char got[16];
  if (cudaMemcpy(got, static_cast<char *>(local) + off, sizeof got, cudaMemcpyDeviceToHost) != cudaSuccess) return false;
  for (unsigned char g : got)
    if (g != want) return false;
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, ndev = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0 || size != 2 ||
      !entry("cuMemGetAddressRange", &p_range) || !entry("cuPointerGetAttribute", &p_attr) ||
      !entry("cuIpcGetMemHandle", &p_get) || !entry("cuIpcOpenMemHandle", &p_open) ||
      !entry("cuIpcCloseMemHandle", &p_close)) {
    if (rank == 0) std::printf("SKIPPED: ipc_probe needs a GPU and 2 ranks\n");
    MPI_Finalize();
    return 77;
  }
  cudaSetDevice(rank % ndev);
  cudaFree(nullptr);
  int bad = 0;
  for (std::size_t bytes : {std::size_t{4096}, std::size_t{524312}, std::size_t{1} << 21, std::size_t{3} << 20}) {
    Export e;
    std::memset(&e, 0, sizeof e);
    void *a = nullptr, *b = nullptr, *a2 = nullptr;
    if (rank == 0) {
      cudaMalloc(&a, bytes);
      cudaMalloc(&b, bytes);
      cudaMemset(a, 0xA1, bytes);
      cudaMemset(b, 0xB2, bytes);
      cudaDeviceSynchronize();
      range(reinterpret_cast<CUdeviceptr>(a), &e.base_a, &e.size_a, &e.id_a);
      range(reinterpret_cast<CUdeviceptr>(b), &e.base_b, &e.size_b, &e.id_b);
      e.ptr_a = reinterpret_cast<unsigned long long>(a);
      e.ptr_b = reinterpret_cast<unsigned long long>(b);
      p_get(&e.ha, static_cast<CUdeviceptr>(e.base_a));
      p_get(&e.hb, static_cast<CUdeviceptr>(e.base_b));
      MPI_Send(&e, sizeof e, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);  // rank 1 has A and B mapped
      cudaFree(a);
      cudaMalloc(&a2, bytes);
      cudaMemset(a2, 0xC3, bytes);
      cudaDeviceSynchronize();
      unsigned long long unused = 0;
      range(reinterpret_cast<CUdeviceptr>(a2), &e.base_a2, &unused, &e.id_a2);
      e.ptr_a2 = reinterpret_cast<unsigned long long>(a2);
      p_get(&e.ha2, static_cast<CUdeviceptr>(e.base_a2));
      MPI_Send(&e, sizeof e, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);
      cudaFree(a2);
      cudaFree(b);
    } else {
      MPI_Recv(&e, sizeof e, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      CUdeviceptr la = 0, lb = 0, la_again = 0, la2 = 0;
      const CUresult ra = p_open(&la, e.ha, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
      const CUresult rb = p_open(&lb, e.hb, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
      const CUresult ragain = p_open(&la_again, e.ha, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
      const bool same_handle = std::memcmp(&e.ha, &e.hb, sizeof e.ha) == 0;
      const bool ok_a = ra == CUDA_SUCCESS && check(reinterpret_cast<void *>(la), e.ptr_a - e.base_a, 0xA1);
      const bool ok_b = rb == CUDA_SUCCESS && check(reinterpret_cast<void *>(lb), e.ptr_b - e.base_b, 0xB2);
      if ((ra == CUDA_SUCCESS && !ok_a) || (rb == CUDA_SUCCESS && !ok_b)) ++bad;
      std::printf("ipc_probe %zu B: A base 0x%llx size %llu id %llu, B base 0x%llx size %llu id %llu; handles %s; "
                  "open A %d (data %s), open B %d (data %s); A again %d (%s)\n",
                  bytes, e.base_a, e.size_a, e.id_a, e.base_b, e.size_b, e.id_b, same_handle ? "EQUAL" : "differ", ra,
                  ok_a ? "ok" : "WRONG", rb, ok_b ? "ok" : "WRONG", ragain,
                  ragain == CUDA_SUCCESS ? (la_again == la ? "same pointer" : "another pointer") : "refused");
      MPI_Barrier(MPI_COMM_WORLD);
      MPI_Recv(&e, sizeof e, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      const bool same_as_a = std::memcmp(&e.ha, &e.ha2, sizeof e.ha) == 0;
      const CUresult ra2 = p_open(&la2, e.ha2, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
      const bool ok_a2 = ra2 == CUDA_SUCCESS && check(reinterpret_cast<void *>(la2), e.ptr_a2 - e.base_a2, 0xC3);
      if (ra2 == CUDA_SUCCESS && !ok_a2) ++bad;
      std::printf("ipc_probe %zu B: A freed while mapped, reallocated: base 0x%llx (%s), id %llu, handle %s A's; "
                  "open %d (data %s)\n",
                  bytes, e.base_a2, e.base_a2 == e.base_a ? "same address" : "another address", e.id_a2,
                  same_as_a ? "EQUAL to" : "differs from", ra2, ok_a2 ? "ok" : "WRONG");
      std::fflush(stdout);
      if (ragain == CUDA_SUCCESS) p_close(la_again);
      if (la2) p_close(la2);
      if (la) p_close(la);
      if (lb) p_close(lb);
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
  // A freed allocation still mapped by the importer, then a larger one whose address range
  // overlaps it (what a cache keyed by base address keeps open): does the new handle
  // open, and does it after the old mapping is closed?
  for (int round = 0; round < 3; ++round) {
    const std::size_t small = 262156, large = 524312 << round;
    Export e;
    std::memset(&e, 0, sizeof e);
    if (rank == 0) {
      void *s1 = nullptr, *s2 = nullptr;
      cudaMalloc(&s1, small);
      cudaMemset(s1, 0x11, small);
      cudaDeviceSynchronize();
      range(reinterpret_cast<CUdeviceptr>(s1), &e.base_a, &e.size_a, &e.id_a);
      e.ptr_a = reinterpret_cast<unsigned long long>(s1);
      p_get(&e.ha, static_cast<CUdeviceptr>(e.base_a));
      MPI_Send(&e, sizeof e, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);  // mapped over there
      cudaFree(s1);
      cudaMalloc(&s2, large);
      cudaMemset(s2, 0x22, large);
      cudaDeviceSynchronize();
      range(reinterpret_cast<CUdeviceptr>(s2), &e.base_b, &e.size_b, &e.id_b);
      e.ptr_b = reinterpret_cast<unsigned long long>(s2);
      p_get(&e.hb, static_cast<CUdeviceptr>(e.base_b));
      MPI_Send(&e, sizeof e, MPI_BYTE, 1, 3, MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);
      cudaFree(s2);
    } else {
      MPI_Recv(&e, sizeof e, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      CUdeviceptr l1 = 0, l2 = 0;
      const CUresult r1 = p_open(&l1, e.ha, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
      MPI_Barrier(MPI_COMM_WORLD);
      MPI_Recv(&e, sizeof e, MPI_BYTE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      const bool overlap = e.base_b < e.base_a + e.size_a && e.base_a < e.base_b + e.size_b;
      const CUresult r2 = p_open(&l2, e.hb, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
      CUresult r3 = CUDA_SUCCESS;
      if (r2 != CUDA_SUCCESS && l1) {
        p_close(l1);
        l1 = 0;
        r3 = p_open(&l2, e.hb, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
      }
      const bool ok2 = l2 && check(reinterpret_cast<void *>(l2), e.ptr_b - e.base_b, 0x22);
      if (l2 && !ok2) ++bad;
      std::printf("ipc_probe overlap %zu -> %zu B: old [0x%llx +%llu) open %d, freed; new [0x%llx +%llu) %s, "
                  "handles %s; open new %d%s%d (data %s)\n",
                  small, large, e.base_a, e.size_a, r1, e.base_b, e.size_b, overlap ? "OVERLAPS" : "apart",
                  std::memcmp(&e.ha, &e.hb, sizeof e.ha) == 0 ? "EQUAL" : "differ", r2,
                  r2 != CUDA_SUCCESS ? ", after closing the old: " : "", r2 != CUDA_SUCCESS ? r3 : 0,
                  l2 ? (ok2 ? "ok" : "WRONG") : "-");
      std::fflush(stdout);
      if (l1) p_close(l1);
      if (l2) p_close(l2);
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
  // Memory recycled at the same address while the importer still maps the old allocation
  // (opened `opens` times, closed `closes` times before the new handle is opened): what a
  // cache that closes a stale mapping and opens the new one meets when another cache of
  // the same process still holds the old mapping.
  struct Recycle {
    std::size_t s1, s2;
    int opens, closes;
  };
  for (const Recycle &c : {Recycle{524312, 262156, 1, 0}, Recycle{524312, 262156, 1, 1}, Recycle{524312, 262156, 2, 1},
                           Recycle{262156, 524312, 2, 1}, Recycle{262156, 262156, 2, 1}, Recycle{524312, 524312, 1, 1}}) {
    Export e;
    std::memset(&e, 0, sizeof e);
    if (rank == 0) {
      void *s1 = nullptr, *s2 = nullptr;
      cudaMalloc(&s1, c.s1);
      cudaMemset(s1, 0x33, c.s1);
      cudaDeviceSynchronize();
      range(reinterpret_cast<CUdeviceptr>(s1), &e.base_a, &e.size_a, &e.id_a);
      e.ptr_a = reinterpret_cast<unsigned long long>(s1);
      p_get(&e.ha, static_cast<CUdeviceptr>(e.base_a));
      MPI_Send(&e, sizeof e, MPI_BYTE, 1, 4, MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);
      cudaFree(s1);
      cudaMalloc(&s2, c.s2);
      cudaMemset(s2, 0x44, c.s2);
      cudaDeviceSynchronize();
      range(reinterpret_cast<CUdeviceptr>(s2), &e.base_b, &e.size_b, &e.id_b);
      e.ptr_b = reinterpret_cast<unsigned long long>(s2);
      p_get(&e.hb, static_cast<CUdeviceptr>(e.base_b));
      MPI_Send(&e, sizeof e, MPI_BYTE, 1, 5, MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);
      cudaFree(s2);
    } else {
      MPI_Recv(&e, sizeof e, MPI_BYTE, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      CUdeviceptr l1 = 0, l2 = 0;
      CUresult r1 = CUDA_SUCCESS;
      for (int k = 0; k < c.opens; ++k) r1 = p_open(&l1, e.ha, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
      MPI_Barrier(MPI_COMM_WORLD);
      MPI_Recv(&e, sizeof e, MPI_BYTE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      CUresult rc = CUDA_SUCCESS;
      for (int k = 0; k < c.closes; ++k) rc = p_close(l1);
      const CUresult r2 = p_open(&l2, e.hb, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
      const bool ok2 = r2 == CUDA_SUCCESS && check(reinterpret_cast<void *>(l2), e.ptr_b - e.base_b, 0x44);
      if (r2 == CUDA_SUCCESS && !ok2) ++bad;
      std::printf("ipc_probe recycle %zu -> %zu B, old opened %dx (%d) closed %dx (%d): %s address, handle %s; "
                  "open new %d (data %s%s)\n",
                  c.s1, c.s2, c.opens, r1, c.closes, rc, e.base_b == e.base_a ? "same" : "another",
                  std::memcmp(&e.ha, &e.hb, sizeof e.ha) == 0 ? "EQUAL" : "differs", r2,
                  r2 == CUDA_SUCCESS ? (ok2 ? "ok" : "WRONG") : "-", r2 == CUDA_SUCCESS && l2 == l1 ? ", old pointer" : "");
      std::fflush(stdout);
      for (int k = c.closes; k < c.opens; ++k) p_close(l1);
      if (r2 == CUDA_SUCCESS) p_close(l2);
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
  int all = 0;
  MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("ipc_probe: %s\n", all ? "FAILED (wrong data through a mapping)" : "done");
  MPI_Finalize();
  return all ? 1 : 0;
}
