#include "cli/job_answer.h"

#include <string>

#include "common/varint.h"

namespace shoal::cli {
namespace {

// One field of a message: its number, wire type, whole bytes and (length-delimited) payload.
struct WireField {
  uint64_t number = 0;
  uint32_t wire = 0;
  uint64_t varint = 0;
  std::string_view whole, payload;
};

bool NextField(std::string_view in, size_t& pos, WireField& f) {
  size_t begin = pos;
  uint64_t tag = 0;
  if (!ReadVarint(in, pos, tag)) return false;
  f.number = tag >> 3;
  f.wire = static_cast<uint32_t>(tag & 7);
  switch (f.wire) {
    case 0:
      if (!ReadVarint(in, pos, f.varint)) return false;
      break;
    case 1:
    case 5: {
      size_t n = f.wire == 1 ? 8 : 4;
      if (in.size() - pos < n) return false;
      pos += n;
      break;
    }
    case 2: {
      uint64_t len = 0;
      if (!ReadVarint(in, pos, len) || len > in.size() - pos) return false;
      f.payload = in.substr(pos, len);
      pos += len;
      break;
    }
    default:
      return false;
  }
  f.whole = in.substr(begin, pos - begin);
  return true;
}

constexpr uint64_t kJobQueryField = pb::Response::kJobQueryFieldNumber;
constexpr uint64_t kJobsField = pb::JobQueryResponse::kJobsFieldNumber;
constexpr uint64_t kServerTimeField = pb::JobQueryResponse::kServerTimeFieldNumber;
constexpr uint64_t kMoreField = pb::JobQueryResponse::kMoreFieldNumber;
constexpr uint64_t kJobsHintField = pb::JobQueryResponse::kJobsHintFieldNumber;

}  // namespace

Result<JobAnswer> SplitJobAnswer(std::string_view bytes) {
  const auto malformed = [] { return Error(ErrorCode::kProtocol, "malformed response"); };
  JobAnswer answer;
  std::string rest;  // the Response without its job query
  size_t pos = 0;
  WireField f;
  while (pos < bytes.size()) {
    if (!NextField(bytes, pos, f)) return malformed();
    if (f.number != kJobQueryField || f.wire != 2) {
      rest.append(f.whole);
      continue;
    }
    size_t inner = 0;
    WireField g;
    // Counted first so the list is allocated once: growing it by doubling touched about twice
    // its final size in fresh pages, each a page fault.
    size_t count = answer.jobs.size();
    while (inner < f.payload.size()) {
      if (!NextField(f.payload, inner, g)) return malformed();
      count += g.number == kJobsField && g.wire == 2;
    }
    answer.jobs.reserve(count);
    inner = 0;
    while (inner < f.payload.size()) {
      if (!NextField(f.payload, inner, g)) return malformed();
      if (g.number == kJobsField && g.wire == 2) {
        answer.jobs.push_back(g.payload);
      } else if (g.number == kServerTimeField && g.wire == 0) {
        answer.server_time = static_cast<int64_t>(g.varint);
      } else if (g.number == kMoreField && g.wire == 0) {
        answer.more = g.varint != 0;
      } else if (g.number == kJobsHintField && g.wire == 0) {
        answer.jobs_hint = static_cast<uint32_t>(g.varint);
      }
    }
  }
  if (!answer.head.ParseFromString(rest)) return malformed();
  return answer;
}

}  // namespace shoal::cli
