// The `shoal` multi-call binary: dispatch on the name it was started as.
#include <cstring>
#include <string_view>

#include "cli/commands.h"
#include "common/name_service.h"

namespace {

using Entry = int (*)(int, char**);

struct Command {
  std::string_view name;
  Entry entry;
};

constexpr Command kCommands[] = {
    {"sbatch", shoal::cli::SbatchMain},     {"squeue", shoal::cli::SqueueMain},
    {"sinfo", shoal::cli::SinfoMain},       {"scancel", shoal::cli::ScancelMain},
    {"scontrol", shoal::cli::ScontrolMain}, {"sprio", shoal::cli::SprioMain},
    {"srun", shoal::cli::SrunMain},         {"salloc", shoal::cli::SallocMain},
    {"sacct", shoal::cli::SacctMain},       {"sacctmgr", shoal::cli::SacctmgrMain},
    {"sshare", shoal::cli::SshareMain},     {"sreport", shoal::cli::SreportMain},
    {"sdiag", shoal::cli::SdiagMain},
};

Entry Find(std::string_view name) {
  for (const auto& c : kCommands) {
    if (c.name == name) return c.entry;
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  shoal::UseBuiltinNameSources();  // linked statically: see name_service.h
  std::string_view self = argv[0];
  if (auto slash = self.rfind('/'); slash != std::string_view::npos) self = self.substr(slash + 1);
  if (Entry entry = Find(self)) return entry(argc, argv);
  // `shoal sbatch ...` works like `sbatch ...`.
  if (argc > 1) {
    if (Entry entry = Find(argv[1])) {
      return entry(argc - 1, argv + 1);
    }
  }
  return shoal::cli::ShoalMain(argc, argv);
}
