// Buffers kept across calls, because allocating them costs milliseconds (cudaHostAlloc,
// cudaMalloc): the smallest idle buffer that fits, else a new one of a whole power of two
// from 64 KiB (so that a few buffers serve every size). At most 1 GiB stays idle; the
// smallest idle buffers are freed first (the largest serve all). One class for both of
// gcoll's pools (mem/pinned.h): pinned host staging buffers and device scratch per GPU.
// Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

namespace gcoll {

class BufferPool {
 public:
  // Allocates `bytes` for `key` (the GPU, or -1): true and *p on success; *tag is the
  // allocator's own note (pinned or pageable), handed back to its free.
  using AllocFn = bool (*)(int key, std::size_t bytes, void **p, bool *tag);
  using FreeFn = void (*)(int key, void *p, bool tag);
  static constexpr std::size_t kMaxIdle = std::size_t{1} << 30;

  BufferPool(AllocFn alloc, FreeFn free) : alloc_(alloc), free_(free) {}
  BufferPool(const BufferPool &) = delete;
  BufferPool &operator=(const BufferPool &) = delete;

  // A buffer of at least `bytes` for `key` (*got: its size), or nullptr when none can be
  // allocated. may_allocate false: an idle one or nullptr (a stream-ordered call's thread,
  // which must not allocate: mem/pinned.h).
  void *get(int key, std::size_t bytes, std::size_t *got = nullptr, bool may_allocate = true);
  // Gives back a buffer from get(). may_free false: kept idle even beyond kMaxIdle (trimmed
  // at a later put that may free).
  void put(void *p, bool may_free = true);
  // Frees every idle buffer (buffers in use stay theirs).
  void clear();

 private:
  struct Buf {
    void *p = nullptr;
    std::size_t bytes = 0;
    int key = -1;
    bool tag = false;
  };
  AllocFn alloc_;
  FreeFn free_;
  std::mutex mu_;
  std::vector<Buf> idle_;
  std::map<void *, Buf> used_;
  std::size_t idle_bytes_ = 0;
};

}  // namespace gcoll
