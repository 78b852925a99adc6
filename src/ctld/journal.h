// The controller's durable state: a snapshot file plus an append-only journal of records.
//
// Record format: 4-byte LE length, 4-byte LE CRC-32C of the payload, payload (a serialized
// pb::JournalRecord). A torn or corrupt tail (crash mid-write) ends replay at the last good
// record and is truncated away; so does a zero length, which is how the space kept zero-filled
// ahead of the next record reads. Appends go to a writer thread that batches everything queued
// while the previous fdatasync ran (group commit); completion callbacks are posted back to the
// controller's io_context, so acknowledgements are sent only after the data is on disk.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "shoal.pb.h"

namespace asio {
class io_context;
}

namespace shoal::ctld {

uint32_t Crc32c(const void* data, size_t n);

class Journal {
 public:
  using RecordVisitor = std::function<void(pb::JournalRecord&)>;

  Journal(asio::io_context& io, std::string dir);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Replays the state through `visit`: the snapshot's content first (as job, node,
  // next_job_id, reservation and next_resv_id records), then the journal's records in order. Opens
  // the journal for appending.
  Status Open(const RecordVisitor& visit);

  // Queues records; `durable` runs on the io_context after they are fdatasync'd. A write
  // failure is fatal for the controller (it must not acknowledge what it could not store), so it
  // is reported through the error handler.
  void Append(std::vector<std::string> records, std::function<void()> durable);

  // Replaces snapshot + journal with `snapshot` (queued behind earlier appends).
  void Compact(std::string snapshot_bytes);

  void SetErrorHandler(std::function<void(const std::string&)> fn) { on_error_ = std::move(fn); }
  // Called on the io_context with the duration (µs) of each group commit (write + fdatasync),
  // handed over with the completions: the writer thread shares nothing else. Set before Open.
  void SetCommitObserver(std::function<void(uint64_t usec)> fn) { on_commit_ = std::move(fn); }
  uint64_t journal_bytes() const { return journal_bytes_; }
  void Stop();

  static std::string Encode(const pb::JournalRecord& record);
  // Frames an already serialized pb::JournalRecord (length, CRC, bytes).
  static std::string Frame(std::string_view record_bytes);

 private:
  struct Batch {
    std::vector<std::string> records;
    std::function<void()> durable;
    std::string snapshot;  // non-empty: compaction
  };
  void WriterLoop();
  Status WriteSnapshot(const std::string& bytes);
  // Makes sure [write_pos_, write_pos_ + need) lies in zero-filled, durable space; when it has to
  // write, it goes kZeroAhead further.
  Status ZeroAhead(size_t need);

  asio::io_context& io_;
  std::string dir_;
  int fd_ = -1;
  // Owned by the writer thread once Open returns (and by Stop after it joined it).
  off_t write_pos_ = 0;         // where the next record goes
  off_t zeroed_end_ = 0;        // the file is zero-filled from write_pos_ up to here
  uint64_t journal_bytes_ = 0;  // approximate, read on the loop thread
  std::function<void(const std::string&)> on_error_;
  std::function<void(uint64_t)> on_commit_;

  std::mutex mu_;  // guards queue_ and stop_ only; never held across I/O
  std::condition_variable cv_;
  std::vector<Batch> queue_;
  bool stop_ = false;
  std::thread writer_;
};

}  // namespace shoal::ctld
