// Projected job answers: squeue asks for the JobRecord (and JobSpec) fields its format prints
// (JobQueryRequest.fields / spec_fields) and the controller encodes only those, straight from
// the live record. The fields squeue uses have hand-written encoders; a request naming any other
// field takes the general path (the whole record serialized, then its wire form filtered), so
// every field can be asked for. An empty `fields` means whole records (scontrol, REST, --json).
#pragma once

#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shoal.pb.h"

namespace shoal::ctld {

// Values a query shows in place of the stored ones (a pending job's expected start as its
// start_time, COMPLETING while epilogs run).
struct JobShownValues {
  std::optional<int64_t> start_time;
  bool completing = false;  // forces completing = true
  // Encoded JobRecord fields that follow the record's bytes (a packed job's overlay,
  // packed_job.h); read by AppendSerialized only.
  std::string_view overlay;
};

class JobProjection {
 public:
  // Field numbers beyond this are not in JobRecord/JobSpec (and are ignored).
  static constexpr size_t kMaxField = 128;

  static JobProjection From(const pb::JobQueryRequest& req);
  // Projection onto the given fields; an empty `fields` and `spec_fields` means whole records.
  static JobProjection Of(std::initializer_list<uint32_t> fields,
                          std::initializer_list<uint32_t> spec_fields = {});

  bool whole() const { return whole_; }
  // Whether every projected field has a hand-written encoder (else the general path is taken).
  bool fast() const { return fast_; }

  // Appends `job` as length-delimited field `field` of an enclosing message, projected.
  // `payload` (serialized JobSpec script/environment, see job_payload.h) is included when a
  // projected spec field needs it.
  void Append(std::string& out, uint32_t field, const pb::JobRecord& job,
              const std::string& payload, const JobShownValues& shown) const;
  // The general path alone (exposed so tests can check the fast one against it).
  void AppendFiltered(std::string& out, uint32_t field, const pb::JobRecord& job,
                      const std::string& payload, const JobShownValues& shown) const;
  // The same answer as Append on `record` parsed, from the serialized JobRecord itself (a
  // packed job, packed_job.h): its wire form filtered, nothing decoded.
  void AppendSerialized(std::string& out, uint32_t field, std::string_view record,
                        const std::string& payload, const JobShownValues& shown) const;

 private:
  void Init();
  void EncodeRecord(std::string& out, const pb::JobRecord& job, const JobShownValues& shown) const;
  void EncodeSpec(std::string& out, const pb::JobSpec& spec) const;
  // Encoded fields that replace stored values (JobShownValues), appended after the record's.
  std::string Overrides(const JobShownValues& shown) const;
  // Whether the script and environment (the job's payload) are part of the answer.
  bool PayloadWanted() const;
  bool SpecWanted() const { return fields_.test(2) || spec_fields_.any(); }
  bool SpecFieldWanted(uint32_t f) const {
    return spec_fields_.none() || (f < kMaxField && spec_fields_.test(f));
  }

  bool whole_ = true;
  bool fast_ = false;
  std::bitset<kMaxField> fields_;
  std::bitset<kMaxField> spec_fields_;
  std::vector<uint8_t> record_list_;  // fields_ and spec_fields_ as lists (fast path)
  std::vector<uint8_t> spec_list_;
  mutable std::string record_scratch_;
  mutable std::string spec_scratch_;
};

// Keeps, of one serialized message, the fields in `keep` (all when `keep` is empty); within
// field `nested` (a message), only `nested_keep` (all when empty). Pure wire-format walk; false
// on malformed input.
bool FilterWireFields(std::string_view in, const std::bitset<JobProjection::kMaxField>& keep,
                      uint32_t nested, const std::bitset<JobProjection::kMaxField>& nested_keep,
                      std::string& out);

}  // namespace shoal::ctld
