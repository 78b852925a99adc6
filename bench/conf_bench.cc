// slurm.conf parsing and hostlist expand/compress: paid by every command at start-up (the
// commands read slurm.conf) and by the controller for every node list it prints.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "common/hostlist.h"
#include "common/slurm_conf.h"

namespace {

std::string Conf(int nodes, bool one_line_per_node) {
  std::string s =
      "ClusterName=bench\nSlurmctldHost=head(10.0.0.1)\nSlurmctldPort=6817\nSlurmdPort=6818\n"
      "SlurmUser=slurm\nStateSaveLocation=/var/spool/slurmctld\nSlurmdSpoolDir=/var/spool/slurmd\n"
      "SelectType=select/cons_tres\nSchedulerType=sched/backfill\nMaxJobCount=200000\n"
      "MinJobAge=300\nKillWait=30\n# a comment\n";
  if (one_line_per_node) {
    for (int i = 1; i <= nodes; i++)
      s += "NodeName=n" + std::to_string(i) + " NodeAddr=10.1." + std::to_string(i / 250) + "." +
           std::to_string(i % 250) + " CPUs=64 RealMemory=256000 Feature=a,b State=UNKNOWN\n";
  } else {
    s += "NodeName=n[1-" + std::to_string(nodes) + "] CPUs=64 RealMemory=256000 State=UNKNOWN\n";
  }
  s += "PartitionName=batch Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n";
  s += "PartitionName=half Nodes=n[1-" + std::to_string(nodes / 2) + "] MaxTime=1-00:00:00\n";
  return s;
}

void ParseBench(benchmark::State& state, bool per_node) {
  std::string text = Conf(static_cast<int>(state.range(0)), per_node);
  shoal::FileReader reader = [](const std::string&) -> shoal::Result<std::string> {
    return std::string();
  };
  shoal::GlobExpander glob = [](const std::string& p) { return std::vector<std::string>{p}; };
  for (auto _ : state) {
    auto conf = shoal::ParseSlurmConf(text, "slurm.conf", reader, glob);
    if (!conf) {
      state.SkipWithError("parse failed");
      break;
    }
    benchmark::DoNotOptimize(conf);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

void BM_ParseSlurmConfHostlist(benchmark::State& state) { ParseBench(state, false); }
BENCHMARK(BM_ParseSlurmConfHostlist)->Arg(4)->Arg(1000)->Arg(10000);

void BM_ParseSlurmConfLinePerNode(benchmark::State& state) { ParseBench(state, true); }
BENCHMARK(BM_ParseSlurmConfLinePerNode)->Arg(1000)->Arg(10000);

void BM_ExpandHostlist(benchmark::State& state) {
  std::string expr = "n[1-" + std::to_string(state.range(0)) + "]";
  for (auto _ : state) {
    auto hosts = shoal::ExpandHostlist(expr);
    benchmark::DoNotOptimize(hosts);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ExpandHostlist)->Arg(4)->Arg(1000)->Arg(10000);

void BM_ExpandHostlistMixed(benchmark::State& state) {
  std::string expr = "gpu[01-04,07],cpu-[1-3],n[1-2]-ib[0-1],login1";
  for (auto _ : state) {
    auto hosts = shoal::ExpandHostlist(expr);
    benchmark::DoNotOptimize(hosts);
  }
}
BENCHMARK(BM_ExpandHostlistMixed);

void BM_CompressHostlist(benchmark::State& state) {
  std::vector<std::string> hosts;
  for (int i = 1; i <= state.range(0); i++)
    if (i % 7 != 0) hosts.push_back("n" + std::to_string(i));  // holes, so several ranges
  for (auto _ : state) {
    auto s = shoal::CompressHostlist(hosts);
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * hosts.size()));
}
BENCHMARK(BM_CompressHostlist)->Arg(4)->Arg(1000)->Arg(10000);

}  // namespace

BENCHMARK_MAIN();
