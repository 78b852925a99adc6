#include "ctld/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <asio.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace shoal::ctld {
namespace {

constexpr char kSnapshotFile[] = "/snapshot.pb";
constexpr char kJournalFile[] = "/journal.log";
// The journal is kept zero-filled this far past its last record. Appends then overwrite blocks
// that are already allocated and written, so fdatasync flushes data only: no file-size or extent
// change has to go through the filesystem's journal (one-record commits on a journaled ext4:
// 7.7 ms appending, 2-2.8 ms overwriting zeros; see docs/performance.md). As databases do with
// their logs.
constexpr off_t kZeroAhead = 4 << 20;

uint32_t Crc32cTable(int i) {
  uint32_t c = static_cast<uint32_t>(i);
  for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
  return c;
}

void PutU32(std::string& s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

uint32_t GetU32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t(u[0]) | (uint32_t(u[1]) << 8) | (uint32_t(u[2]) << 16) | (uint32_t(u[3]) << 24);
}

Result<std::string> ReadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::string();
    return Error(ErrorCode::kIoError, path + ": " + std::strerror(errno));
  }
  struct stat st {};
  ::fstat(fd, &st);
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::read(fd, data.data() + off, data.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  ::close(fd);
  data.resize(off);
  return data;
}

Status WriteAllFd(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error(ErrorCode::kIoError, std::strerror(errno));
    off += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status PWriteAll(int fd, std::string_view data, off_t at) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::pwrite(fd, data.data() + off, data.size() - off, at + static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error(ErrorCode::kIoError, std::strerror(errno));
    off += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

namespace {

#if defined(__x86_64__)
// SSE4.2 has a CRC-32C instruction: 8 bytes per step instead of one table lookup per byte,
// which matters when a restart replays a large journal.
__attribute__((target("sse4.2"))) uint32_t Crc32cHardware(const unsigned char* p, size_t n) {
  uint64_t c = 0xffffffffu;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32 ^ 0xffffffffu;
}
#endif

}  // namespace

uint32_t Crc32c(const void* data, size_t n) {
#if defined(__x86_64__)
  static const bool hw = __builtin_cpu_supports("sse4.2");
  if (hw) return Crc32cHardware(static_cast<const unsigned char*>(data), n);
#endif
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (int i = 0; i < 256; ++i) t[i] = Crc32cTable(i);
    return t;
  }();
  uint32_t c = 0xffffffffu;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

Journal::Journal(asio::io_context& io, std::string dir) : io_(io), dir_(std::move(dir)) {}

Journal::~Journal() {
  Stop();
  if (fd_ >= 0) ::close(fd_);
}

std::string Journal::Frame(std::string_view record_bytes) {
  std::string out(8, '\0');
  out.append(record_bytes);
  PutU32(out, 0, static_cast<uint32_t>(record_bytes.size()));
  PutU32(out, 4, Crc32c(out.data() + 8, record_bytes.size()));
  return out;
}

std::string Journal::Encode(const pb::JournalRecord& record) {
  size_t n = record.ByteSizeLong();
  std::string out(8 + n, '\0');
  record.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out.data() + 8));
  PutU32(out, 0, static_cast<uint32_t>(n));
  PutU32(out, 4, Crc32c(out.data() + 8, n));
  return out;
}

Status Journal::Open(const RecordVisitor& visit) {
  ::mkdir(dir_.c_str(), 0700);
  auto snap = ReadFile(dir_ + kSnapshotFile);
  if (!snap) return snap.status();
  pb::Snapshot snapshot;
  if (!snap->empty() && !snapshot.ParseFromString(*snap))
    return Error(ErrorCode::kIoError, dir_ + kSnapshotFile + ": corrupt snapshot");
  // The snapshot is the state before the journal's first record: hand it over as records.
  {
    pb::JournalRecord rec;
    // Payloads first: job records name them.
    for (auto& payload : *snapshot.mutable_payloads()) {
      rec.mutable_payload()->Swap(&payload);
      visit(rec);
    }
    if (snapshot.next_job_id()) {
      rec.set_next_job_id(snapshot.next_job_id());
      visit(rec);
    }
    for (auto& job : *snapshot.mutable_jobs()) {
      rec.mutable_job()->Swap(&job);
      visit(rec);
    }
    for (auto& node : *snapshot.mutable_nodes()) {
      rec.mutable_node()->Swap(&node);
      visit(rec);
    }
    // After the nodes: a reservation names nodes, dynamic ones included.
    for (auto& resv : *snapshot.mutable_reservations()) {
      rec.mutable_reservation()->Swap(&resv);
      visit(rec);
    }
    if (snapshot.next_resv_id()) {
      rec.set_next_resv_id(snapshot.next_resv_id());
      visit(rec);
    }
  }
  auto log = ReadFile(dir_ + kJournalFile);
  if (!log) return log.status();
  size_t off = 0;
  pb::JournalRecord record;
  while (off + 8 <= log->size()) {
    uint32_t n = GetU32(log->data() + off);
    uint32_t crc = GetU32(log->data() + off + 4);
    if (n == 0) break;  // the zero-filled space ahead of the next record
    if (off + 8 + n > log->size() || Crc32c(log->data() + off + 8, n) != crc) break;
    if (!record.ParseFromArray(log->data() + off + 8, static_cast<int>(n))) break;
    visit(record);
    off += 8 + n;
  }
  fd_ = ::open((dir_ + kJournalFile).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) return Error(ErrorCode::kIoError, dir_ + kJournalFile + ": " + std::strerror(errno));
  // Drop a torn tail (and the zeros after it) so new records follow the last good one.
  if (off < log->size() && ::ftruncate(fd_, static_cast<off_t>(off)) != 0)
    return Error(ErrorCode::kIoError, "truncate journal: " + std::string(std::strerror(errno)));
  write_pos_ = static_cast<off_t>(off);
  zeroed_end_ = write_pos_;
  journal_bytes_ = off;
  writer_ = std::thread([this] { WriterLoop(); });
  return Status::Ok();
}

void Journal::Append(std::vector<std::string> records, std::function<void()> durable) {
  for (const auto& r : records) journal_bytes_ += r.size();
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(Batch{std::move(records), std::move(durable), {}});
  }
  cv_.notify_one();
}

void Journal::Compact(std::string snapshot_bytes) {
  journal_bytes_ = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(Batch{{}, nullptr, std::move(snapshot_bytes)});
  }
  cv_.notify_one();
}

void Journal::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_one();
  if (writer_.joinable()) writer_.join();
  // A clean stop leaves no zero-filled space behind (a crash may; replay stops at it).
  if (fd_ >= 0 && zeroed_end_ > write_pos_ && ::ftruncate(fd_, write_pos_) == 0)
    zeroed_end_ = write_pos_;
}

Status Journal::ZeroAhead(size_t need) {
  if (fd_ < 0 || write_pos_ + static_cast<off_t>(need) <= zeroed_end_) return Status::Ok();
  off_t target = write_pos_ + static_cast<off_t>(need) + kZeroAhead;
  static const std::string zeros(1 << 20, '\0');
  for (off_t at = zeroed_end_; at < target; at += static_cast<off_t>(zeros.size()))
    if (Status s = PWriteAll(fd_, zeros, at); !s.ok()) return s;
  // Made durable here, once per kZeroAhead bytes, so the appends' fdatasync has no size change.
  if (::fdatasync(fd_) != 0)
    return Error(ErrorCode::kIoError, std::string("fdatasync: ") + std::strerror(errno));
  zeroed_end_ = target;
  return Status::Ok();
}

Status Journal::WriteSnapshot(const std::string& bytes) {
  std::string tmp = dir_ + kSnapshotFile + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Error(ErrorCode::kIoError, tmp + ": " + std::strerror(errno));
  Status s = WriteAllFd(fd, bytes);
  if (s.ok() && ::fdatasync(fd) != 0) s = Error(ErrorCode::kIoError, std::strerror(errno));
  ::close(fd);
  if (!s.ok()) return s;
  if (::rename(tmp.c_str(), (dir_ + kSnapshotFile).c_str()) != 0)
    return Error(ErrorCode::kIoError, std::string("rename snapshot: ") + std::strerror(errno));
  int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  // Every record so far is in the snapshot: start an empty journal.
  if (::ftruncate(fd_, 0) != 0 || ::fdatasync(fd_) != 0)
    return Error(ErrorCode::kIoError, std::string("reset journal: ") + std::strerror(errno));
  write_pos_ = 0;
  zeroed_end_ = 0;
  return Status::Ok();
}

void Journal::WriterLoop() {
  auto report = [this](const Status& status) {
    asio::post(io_, [on_error = on_error_, msg = status.message()] {
      if (on_error) on_error(msg);
    });
  };
  // Off the commit path: a batch finds zero-filled space ready (and a restart pays it once).
  auto top_up = [&] {
    if (Status s = ZeroAhead(kZeroAhead / 2); !s.ok()) report(s);
  };
  top_up();
  std::vector<Batch> work;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty() && stop_) return;
      work.swap(queue_);
    }
    std::string buf;
    std::vector<std::function<void()>> done;
    std::vector<uint64_t> commit_usec;
    Status status;
    auto flush = [&]() {
      if (buf.empty()) return;
      auto t0 = std::chrono::steady_clock::now();
      if (status.ok()) status = ZeroAhead(buf.size());
      if (status.ok()) status = PWriteAll(fd_, buf, write_pos_);
      if (status.ok()) write_pos_ += static_cast<off_t>(buf.size());
      if (status.ok() && ::fdatasync(fd_) != 0)
        status = Error(ErrorCode::kIoError, std::string("fdatasync: ") + std::strerror(errno));
      buf.clear();
      commit_usec.push_back(
          static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                    std::chrono::steady_clock::now() - t0)
                                    .count()));
    };
    for (auto& batch : work) {
      if (!batch.snapshot.empty()) {
        flush();
        if (status.ok()) status = WriteSnapshot(batch.snapshot);
        continue;
      }
      // An empty record would read as the zero-filled end of the journal; it carries nothing.
      for (auto& r : batch.records)
        if (r.size() > 8) buf += r;
      if (batch.durable) done.push_back(std::move(batch.durable));
    }
    flush();
    work.clear();
    if (!status.ok()) {
      report(status);
      continue;  // never acknowledge what was not stored
    }
    if (!done.empty() || !commit_usec.empty()) {
      asio::post(io_, [on_commit = on_commit_, done = std::move(done),
                       commit_usec = std::move(commit_usec)] {
        if (on_commit)
          for (uint64_t usec : commit_usec) on_commit(usec);
        for (const auto& fn : done) fn();
      });
    }
    top_up();
  }
}

}  // namespace shoal::ctld
