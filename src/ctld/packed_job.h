// Held jobs kept packed. A job held at priority 0 waits for a release: the scheduling pass stops
// before it (held jobs sort last), so nothing reads it until someone asks about it or changes
// it. The controller keeps such a job as its serialized record, about a quarter of the parsed
// one's memory (measured: 466 against 1,891 bytes per job; a parsed JobRecord and JobSpec are
// ~1 KB before their strings), and parses it back into the job table the moment anyone looks it
// up (Controller::FindJob). Listings read packed jobs without parsing them
// (JobProjection::AppendSerialized). Pure logic, no I/O.
#pragma once

#include <cstdint>
#include <string>

#include "shoal.pb.h"

namespace shoal::ctld {

struct PackedJob {
  std::string record;          // the JobRecord serialized, as held in memory (no payload)
  int64_t expected_start = 0;  // what a listing shows as its StartTime (0: none)
  uint32_t uid = 0;            // the owner, for listings filtered by user
};

// Whether `job` may be packed: pending and held at priority 0, with nothing in flight.
bool Packable(const pb::JobRecord& job);

PackedJob Pack(const pb::JobRecord& job);

// The record back; false when the bytes do not parse (never expected: they were ours).
bool Unpack(const PackedJob& packed, pb::JobRecord* job);

}  // namespace shoal::ctld
