// A job's script and environment: most of its bytes, written once at submission and never
// changed. The controller keeps them out of its job records, serialized once and shared by jobs
// that carry the same ones (the tasks of an array, a user's repeated submissions of one script),
// and splices them back in only where the whole job leaves memory: the batch launch, the
// journal, the snapshot and unabridged queries. A queued job then costs its record, not its
// environment's dozens of small strings.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/slurm_conf.h"  // StringHash
#include "common/varint.h"      // AppendVarint
#include "shoal.pb.h"

namespace shoal::ctld {

// One interned payload. `id` names it in the journal and the snapshot once it has been written
// there (0 until then): job records on disk carry the id, not the bytes, so a thousand jobs
// with one script and environment store them once, and a restart parses them once.
struct Payload {
  std::string bytes;  // serialized JobSpec fields (script, environment)
  mutable uint64_t id = 0;
};
using PayloadPtr = std::shared_ptr<const Payload>;

class JobPayloads {
 public:
  // Moves the script and environment out of `spec` (which keeps neither) and returns them,
  // interned: equal payloads share one copy. nullptr when spec had neither.
  PayloadPtr Take(pb::JobSpec* spec);
  // Records `payload` as job_id's (nullptr forgets it).
  void Set(uint32_t job_id, PayloadPtr payload);
  // Gives a payload-less spec job_id's script and environment back (no-op when it has none).
  void Restore(uint32_t job_id, pb::JobSpec* spec) const;
  // job_id's payload as serialized JobSpec fields (script, environment); "" when none.
  const std::string& Bytes(uint32_t job_id) const;
  void Drop(uint32_t job_id);
  size_t jobs() const { return by_job_.size(); }
  size_t distinct() const { return pool_.size(); }

  // --- durable storage (journal and snapshot) ---
  // The id that job_id's stored record names (0: no payload). When the payload has not been
  // written since the state files began, assigns its id and appends a framed-by-caller
  // JournalRecord.payload body to `record` for the caller to write first.
  uint64_t StoreRef(uint32_t job_id, std::string* record);
  // Every live payload as Snapshot.payloads entries (field `field`), ids assigned.
  void AppendAll(std::string& out, uint32_t field);
  // Replay: a stored payload, and the job records naming it. Replayed() is nullptr for an id
  // never defined (a damaged state file); EndReplay() forgets the ids no job holds any more.
  void Define(uint64_t id, std::string bytes);
  PayloadPtr Replayed(uint64_t id) const;
  void EndReplay();

 private:
  PayloadPtr Intern(std::string bytes);
  static void AppendRecord(std::string& out, uint32_t field, const Payload& p);

  std::unordered_map<uint32_t, PayloadPtr> by_job_;
  // Keys view the pooled strings themselves; an entry goes when its last job does.
  std::unordered_map<std::string_view, std::weak_ptr<const Payload>, StringHash, std::equal_to<>>
      pool_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, PayloadPtr> replay_;
};

// `job` serialized with `payload` (serialized JobSpec fields) spliced in as a second `spec`
// field, which parsing merges into the first: the whole job without copying the record.
// AppendJobField writes it as length-delimited field `field` of an enclosing message.
// `overrides` are more encoded JobRecord fields appended inside it; a scalar parsed later wins,
// so a query answer can show a value other than the stored one without copying the record.
void AppendJobField(std::string& out, uint32_t field, const pb::JobRecord& job,
                    const std::string& payload, std::string_view overrides = {});

// The same for a JobRecord already serialized (a packed job's bytes).
void AppendJobBytes(std::string& out, uint32_t field, std::string_view record,
                    const std::string& payload, std::string_view overrides = {});
// No payload to splice in.
inline const std::string kNoPayload;
// JobRecord.payload_id = ref as an encoded field for AppendJobField's overrides ("" for 0).
std::string PayloadIdField(uint64_t ref);

// Protobuf wire-format pieces for messages encoded by hand.
void AppendVarintField(std::string& out, uint32_t field, uint64_t v);
void AppendMessageField(std::string& out, uint32_t field, const google::protobuf::MessageLite& m);

}  // namespace shoal::ctld
