#include "ctld/packed_job.h"

namespace shoal::ctld {

bool Packable(const pb::JobRecord& job) {
  return job.state() == pb::JOB_PENDING && job.held() && job.priority() == 0 && !job.completing() &&
         job.prolog_pending_nodes_size() == 0 && job.epilog_pending_nodes_size() == 0;
}

PackedJob Pack(const pb::JobRecord& job) {
  PackedJob p;
  job.SerializeToString(&p.record);
  p.record.shrink_to_fit();  // the string's growth room would be a third of what packing saves
  p.expected_start = job.expected_start();
  p.uid = job.spec().uid();
  return p;
}

bool Unpack(const PackedJob& packed, pb::JobRecord* job) {
  return job->ParseFromString(packed.record);
}

}  // namespace shoal::ctld
