// A job query answer taken apart without parsing its jobs: squeue decodes them one at a time
// into one reused record instead of building thousands of messages (about 1 KB of protobuf
// objects per job, most of squeue's page faults). Pure: bytes in, views out.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "shoal.pb.h"

namespace shoal::cli {

struct JobAnswer {
  std::vector<std::string_view> jobs;  // each a serialized JobRecord, views into the answer
  int64_t server_time = 0;
  bool more = false;       // a streamed answer's part, and more follow
  uint32_t jobs_hint = 0;  // a streamed answer's first part: about how many jobs in all
  pb::Response head;       // everything but the job query (rc, error, ...)
};

// Splits a serialized pb::Response. Fails on malformed bytes ("malformed response").
Result<JobAnswer> SplitJobAnswer(std::string_view bytes);

}  // namespace shoal::cli
