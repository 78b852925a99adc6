// Journal hot paths: encoding one job record, and an append made durable (write + fdatasync on
// the writer thread, completion posted back to the io_context) — the cost every acknowledged
// mutation in shoalctld pays. The durable benchmarks use $SHOAL_BENCH_DIR (default /tmp), so run
// them on the disk that holds StateSaveLocation; tmpfs shows the cost without the disk.
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <unistd.h>

#include <asio.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "ctld/journal.h"

namespace {

using shoal::ctld::Journal;
namespace pb = shoal::pb;

// A job record as `sbatch --wrap true` produces it: a short script, a typical environment.
pb::JournalRecord TypicalJob(uint32_t id) {
  pb::JournalRecord r;
  auto* job = r.mutable_job();
  job->set_job_id(id);
  job->set_state(pb::JOB_PENDING);
  job->set_reason("None");
  job->set_submit_time(1795323468);
  job->set_eligible_time(1795323468);
  job->set_partition("debug");
  job->set_priority(4294901759u);
  auto* spec = job->mutable_spec();
  spec->set_name("wrap");
  spec->set_script("#!/bin/sh\n# This script was created by sbatch --wrap.\n\ntrue\n");
  spec->set_work_dir("/home/user/project");
  spec->set_submit_dir("/home/user/project");
  spec->set_std_out("/dev/null");
  spec->set_user_name("user");
  for (int i = 0; i < 30; i++)
    spec->add_environment("VARIABLE_" + std::to_string(i) + "=" + std::string(40, 'v'));
  return r;
}

std::string BenchDir() {
  const char* base = getenv("SHOAL_BENCH_DIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/shoal-journal-bench-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) return "";
  return buf.data();
}

void BM_JournalEncode(benchmark::State& state) {
  pb::JournalRecord rec = TypicalJob(1);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string s = Journal::Encode(rec);
    bytes += s.size();
    benchmark::DoNotOptimize(s);
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["record_bytes"] = static_cast<double>(Journal::Encode(rec).size());
}
BENCHMARK(BM_JournalEncode);

void BM_Crc32c(benchmark::State& state) {
  std::string data(static_cast<size_t>(state.range(0)), 'x');
  for (auto _ : state) benchmark::DoNotOptimize(shoal::ctld::Crc32c(data.data(), data.size()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Crc32c)->Arg(2048);

// One Append of `range(0)` records, waited on until durable: latency per commit, and records/s
// showing what group commit buys when many mutations share one fdatasync.
void BM_JournalAppendDurable(benchmark::State& state) {
  std::string dir = BenchDir();
  if (dir.empty()) {
    state.SkipWithError("mkdtemp failed");
    return;
  }
  {
    asio::io_context io;
    Journal journal(io, dir);
    if (!journal.Open([](pb::JournalRecord&) {}).ok()) {
      state.SkipWithError("Journal::Open failed");
      return;
    }
    const int batch = static_cast<int>(state.range(0));
    std::vector<std::string> encoded;
    for (int i = 0; i < batch; i++) encoded.push_back(Journal::Encode(TypicalJob(i + 1)));
    auto guard = asio::make_work_guard(io);
    for (auto _ : state) {
      bool done = false;
      journal.Append(encoded, [&] { done = true; });
      while (!done) io.run_one();
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * batch);
    journal.Stop();
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_JournalAppendDurable)->Arg(1)->Arg(16)->Arg(256)->UseRealTime();

// Replay: the restart path (Open of a journal holding range(0) job records).
void BM_JournalReplay(benchmark::State& state) {
  std::string dir = BenchDir();
  if (dir.empty()) {
    state.SkipWithError("mkdtemp failed");
    return;
  }
  const int n = static_cast<int>(state.range(0));
  {
    asio::io_context io;
    Journal journal(io, dir);
    if (!journal.Open([](pb::JournalRecord&) {}).ok()) {
      state.SkipWithError("Journal::Open failed");
      return;
    }
    std::vector<std::string> encoded;
    for (int i = 0; i < n; i++) encoded.push_back(Journal::Encode(TypicalJob(i + 1)));
    auto guard = asio::make_work_guard(io);
    bool done = false;
    journal.Append(std::move(encoded), [&] { done = true; });
    while (!done) io.run_one();
    journal.Stop();
  }
  for (auto _ : state) {
    asio::io_context io;
    Journal journal(io, dir);
    size_t seen = 0;
    if (!journal.Open([&](pb::JournalRecord&) { seen++; }).ok()) {
      state.SkipWithError("Journal::Open failed");
      break;
    }
    benchmark::DoNotOptimize(seen);
    journal.Stop();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * n);
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_JournalReplay)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
