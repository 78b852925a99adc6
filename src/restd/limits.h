// Per-user request rate limiting for shoalrestd: one token bucket per user (refilled at `rate`
// tokens per second up to `burst`). Thread-safe; the clock is passed in so tests control time.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace shoal::restd {

class RateLimiter {
 public:
  // rate <= 0 disables limiting.
  RateLimiter(double rate_per_s, double burst) : rate_(rate_per_s), burst_(burst) {}
  // Takes one token from `key`'s bucket; false (answer 429) when it is empty.
  bool Allow(const std::string& key, double now_s);
  size_t tracked() const;

 private:
  struct Bucket {
    double tokens;
    double last;
  };
  double rate_, burst_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;
};

// The request limits, from the command line.
struct Limits {
  size_t max_body_bytes = 1 << 20;     // larger bodies: 413
  size_t max_header_bytes = 64 << 10;  // per-connection memory for headers (MHD)
  unsigned max_connections = 4096;
  unsigned connection_timeout_s = 60;  // idle keep-alive connections are closed after this
  double rate_per_user = 0;            // requests/s per user; 0 = unlimited
  double burst_per_user = 0;           // bucket size; 0 = 2 * rate
};

// Parses a byte size with an optional K/M/G suffix ("1M" = 1048576); 0 on error.
size_t ParseByteSize(const std::string& text);

}  // namespace shoal::restd
