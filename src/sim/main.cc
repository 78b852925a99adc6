// shoal-sim: compares scheduling policies on a synthetic or SWF workload.
//   shoal-sim --policy backfill --nodes 128 --cpus 32 --jobs 5000 --seed 1
//   shoal-sim --policy all --swf trace.swf
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sched/backfill.h"
#include "sim/simulator.h"

namespace {

constexpr const char* kUsage =
    "usage: shoal-sim [--policy fifo|priority|backfill|all] [--nodes N] [--cpus N]\n"
    "                 [--jobs N] [--seed N] [--load X] [--swf FILE]\n"
    "                 [--sched-params bf_window=...,bf_max_job_test=...]\n"
    "                 [--keep-reservations 1|0]\n";

struct Options {
  std::string policy = "backfill";
  uint32_t nodes = 128, cpus = 32, jobs = 5000;
  uint64_t seed = 1;
  double load = 1.1;
  std::string swf, sched_params;
  bool keep_reservations = true;  // pass each cycle the previous plan (see SimConfig)
};

bool ParseArgs(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") return false;
    if (i + 1 >= argc) return false;
    std::string v = argv[++i];
    try {
      if (a == "--policy")
        o.policy = v;
      else if (a == "--nodes")
        o.nodes = static_cast<uint32_t>(std::stoul(v));
      else if (a == "--cpus")
        o.cpus = static_cast<uint32_t>(std::stoul(v));
      else if (a == "--jobs")
        o.jobs = static_cast<uint32_t>(std::stoul(v));
      else if (a == "--seed")
        o.seed = std::stoull(v);
      else if (a == "--load")
        o.load = std::stod(v);
      else if (a == "--swf")
        o.swf = v;
      else if (a == "--sched-params")
        o.sched_params = v;
      else if (a == "--keep-reservations" && (v == "0" || v == "1"))
        o.keep_reservations = v == "1";
      else
        return false;
    } catch (const std::exception&) {
      return false;
    }
  }
  return o.nodes > 0 && o.cpus > 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace shoal;
  Options o;
  if (!ParseArgs(argc, argv, o)) {
    std::fputs(kUsage, stderr);
    return 1;
  }
  sim::Workload workload;
  if (!o.swf.empty()) {
    std::ifstream f(o.swf);
    if (!f) {
      std::fprintf(stderr, "shoal-sim: error: cannot read %s\n", o.swf.c_str());
      return 1;
    }
    std::stringstream text;
    text << f.rdbuf();
    auto w = sim::ReadSwf(text.str(), o.nodes, o.cpus);
    if (!w) {
      std::fprintf(stderr, "shoal-sim: error: %s\n", w.error().c_str());
      return 1;
    }
    workload = std::move(*w);
  } else {
    workload = sim::Synthetic({o.jobs, o.seed, o.nodes, o.cpus, o.load});
  }
  std::vector<sim::Policy> policies;
  if (o.policy == "all") {
    policies = {sim::Policy::kFifo, sim::Policy::kPriority, sim::Policy::kBackfill};
  } else {
    auto p = sim::ParsePolicy(o.policy);
    if (!p) {
      std::fprintf(stderr, "shoal-sim: error: %s\n", p.error().c_str());
      return 1;
    }
    policies = {*p};
  }
  sim::SimConfig cfg;
  cfg.nodes = o.nodes;
  cfg.cpus_per_node = o.cpus;
  cfg.keep_reservations = o.keep_reservations;
  auto bf = sched::ParseSchedulerParameters(o.sched_params);
  if (!bf) {
    std::fprintf(stderr, "shoal-sim: error: %s\n", bf.error().c_str());
    return 1;
  }
  cfg.backfill = *bf;
  std::vector<sim::SimReport> reports;
  for (sim::Policy p : policies) {
    cfg.policy = p;
    reports.push_back(sim::Simulate(workload, cfg));
  }
  std::printf("%zu jobs, %u nodes x %u CPUs\n", workload.jobs.size(), o.nodes, o.cpus);
  std::fputs(sim::FormatReports(reports).c_str(), stdout);
  return 0;
}
