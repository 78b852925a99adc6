#include "restd/limits.h"

#include <algorithm>
#include <cstdlib>

namespace shoal::restd {

bool RateLimiter::Allow(const std::string& key, double now_s) {
  if (rate_ <= 0) return true;
  double burst = burst_ > 0 ? burst_ : 2 * rate_;
  std::lock_guard<std::mutex> lock(mu_);
  // Forget users idle long enough for their bucket to be full again, so a stream of distinct
  // (e.g. forged) identities cannot grow the table without bound.
  if (buckets_.size() > 10000) {
    for (auto it = buckets_.begin(); it != buckets_.end();) {
      if ((now_s - it->second.last) * rate_ + it->second.tokens >= burst)
        it = buckets_.erase(it);
      else
        ++it;
    }
  }
  auto [it, inserted] = buckets_.try_emplace(key, Bucket{burst, now_s});
  Bucket& b = it->second;
  if (!inserted) {
    b.tokens = std::min(burst, b.tokens + std::max(0.0, now_s - b.last) * rate_);
    b.last = now_s;
  }
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

size_t RateLimiter::tracked() const {
  std::lock_guard<std::mutex> lock(mu_);
  return buckets_.size();
}

size_t ParseByteSize(const std::string& text) {
  if (text.empty()) return 0;
  char* end = nullptr;
  unsigned long long n = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str()) return 0;
  std::string suffix(end);
  if (suffix.empty() || suffix == "B" || suffix == "b") return n;
  char c = static_cast<char>(suffix[0] & ~0x20);
  if (suffix.size() > 1 &&
      !(suffix.size() == 2 && (suffix[1] == 'B' || suffix[1] == 'b' || suffix[1] == 'i')))
    return 0;
  switch (c) {
    case 'K':
      return n << 10;
    case 'M':
      return n << 20;
    case 'G':
      return n << 30;
    default:
      return 0;
  }
}

}  // namespace shoal::restd
