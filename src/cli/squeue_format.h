// squeue's output: filtering, sorting, array grouping and the -o/-O/-l layouts, byte for byte as
// Slurm 22.05 prints them. Pure: records, options and `now` in, text out (no I/O).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "shoal.pb.h"

namespace shoal::cli {

inline constexpr char kSqueueDefaultFormat[] = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R";
inline constexpr char kSqueueLongFormat[] = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R";
inline constexpr char kSqueueStartFormat[] = "%.18i %.9P %.8j %.8u %.2t  %.19S %.6D %20Y %R";
inline constexpr char kSqueueDefaultSort[] = "P,t,-p";

struct SqueueFormatOptions {
  std::string format;               // -o; empty = default (or -l)
  std::string long_format;          // -O; used when format is empty
  bool long_output = false;         // -l
  bool no_header = false;           // -h
  bool array_one_per_line = false;  // -r: no grouping of pending array tasks
  bool noconvert = false;           // --noconvert: memory stays in MB
  std::string sort;                 // -S; empty = "P,t,-p"
  // uid/gid -> name; "" (or unset) prints the number. user_name is used when JobSpec.user_name
  // is empty.
  std::function<std::string(uint32_t)> user_name;
  std::function<std::string(uint32_t)> group_name;
};

// Job states given to -t. Slurm names that Shoal never produces (CONFIGURING, RESIZING, ...)
// are accepted and match nothing.
struct SqueueStateFilter {
  bool all = false;                  // "all"
  std::vector<pb::JobState> states;  // base states asked for
  bool completing = false;           // CG / COMPLETING asked for
};

// "-j 12,13_4": job ids, optionally with an array task.
struct JobIdSpec {
  uint32_t job_id = 0;
  std::optional<uint32_t> task;
};

struct SqueueFilter {
  std::vector<JobIdSpec> jobs;              // -j
  std::vector<uint32_t> uids;               // -u / --me
  std::vector<std::string> partitions;      // -p
  std::vector<std::string> names;           // -n
  std::vector<std::string> accounts;        // -A
  std::vector<std::string> qos;             // -q
  std::vector<std::string> nodes;           // -w, expanded
  std::optional<SqueueStateFilter> states;  // -t; unset = default states (or all with -j)
};

// Parses -t. Error text is what squeue prints after "squeue: error: " (two lines: the invalid
// state, then "Valid job states include: ...").
Result<SqueueStateFilter> ParseSqueueStates(std::string_view text);
// Parses -j. Error: "Invalid job id: x".
Result<std::vector<JobIdSpec>> ParseSqueueJobIds(std::string_view text);

// The server-side part of a filter (omit_script always set).
pb::JobQueryRequest BuildJobQuery(const SqueueFilter& filter);
// The complete filter, applied client-side as well (the server may answer more).
bool JobMatches(const pb::JobRecord& job, const SqueueFilter& filter);

// The JobRecord and JobSpec field numbers that the format (-o/-O/-l/--start), the sort keys and
// the client-side filter read, for JobQueryRequest.fields/spec_fields: the controller then
// encodes only those. Both empty: every field (a column whose needs are not listed). Fails as
// FormatSqueue does on an unknown -O field.
struct SqueueFields {
  std::vector<uint32_t> fields;
  std::vector<uint32_t> spec_fields;
};
Result<SqueueFields> SqueueQueryFields(const SqueueFormatOptions& options,
                                       const SqueueFilter& filter);

// Formats jobs (already filtered) with header (unless no_header). Fails on an unknown -O field:
// "Invalid job format specification: Foo".
Result<std::string> FormatSqueue(const std::vector<const pb::JobRecord*>& jobs,
                                 const SqueueFormatOptions& options, int64_t now);

// FormatSqueue one job at a time: Add() does not keep the record (pending array tasks, grouped
// into one line per array, are copied), so a caller can decode jobs into one reused message.
class SqueueFormatter {
 public:
  // Fails as FormatSqueue does on an unknown -O field.
  static Result<SqueueFormatter> Make(const SqueueFormatOptions& options, int64_t now);
  SqueueFormatter(SqueueFormatter&&) noexcept;
  SqueueFormatter& operator=(SqueueFormatter&&) noexcept;
  ~SqueueFormatter();
  void Reserve(size_t jobs);
  void Add(const pb::JobRecord& job);  // a job already filtered
  void FinishInto(std::string& out);   // appends header and sorted lines; call once
  void FinishTo(std::FILE* f);         // writes them to `f` instead; call once

 private:
  SqueueFormatter();
  std::vector<uint32_t> SortedRows();  // the rows in output order (array groups added first)
  void AppendHeader(std::string& out) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// --json: a slurmrestd v0.0.44 "openapi_job_info_resp" document.
std::string FormatSqueueJson(const std::vector<const pb::JobRecord*>& jobs,
                             const SqueueFormatOptions& options, int64_t now,
                             std::string_view cluster_name);

// Helpers exposed for tests.
std::string SqueueStateLong(const pb::JobRecord& job);   // "RUNNING", "COMPLETING", ...
std::string SqueueStateShort(const pb::JobRecord& job);  // "R", "CG", ...

}  // namespace shoal::cli
