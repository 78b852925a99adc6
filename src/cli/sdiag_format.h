// sdiag's report (Slurm 22.05 layout), from the controller's DiagResponse. Pure: the caller
// supplies the answer; times print in local time as Slurm's ctime-style stamps.
#pragma once

#include <string>

#include "shoal.pb.h"

namespace shoal::cli {

enum class SdiagSort { kCount, kId, kTime, kTime2 };

// gettimeofday_latency_us: 1000 gettimeofday() calls, measured by the caller (Slurm's
// controller measures it at start; the protocol carries no such field).
std::string FormatSdiag(const pb::DiagResponse& d, SdiagSort sort, int gettimeofday_latency_us);

}  // namespace shoal::cli
