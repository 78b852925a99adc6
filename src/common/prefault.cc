#include "common/prefault.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; glibc 2.36's headers may predate it
#endif

namespace shoal {

void PrefaultForWrite(void* data, size_t bytes) {
  constexpr size_t kWorthIt = 256 << 10;
  if (data == nullptr || bytes < kWorthIt) return;
  static const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  // Whole pages inside the buffer only: the call needs an aligned start, and a page shared
  // with other data is left to fault as usual.
  uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) & ~(page - 1);
  uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(page - 1);
  if (end <= begin) return;
  // Failure (an older kernel: EINVAL) only means the pages fault in one by one as before.
  (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
}

}  // namespace shoal
