// Entry points of the multi-call `shoal` binary. main.cc picks one by argv[0]'s basename
// (sbatch, squeue, ...) or by the first argument of `shoal` (shoal sbatch ...). Each returns the
// process exit code; none throws.
#pragma once

namespace shoal::cli {

int SbatchMain(int argc, char** argv);
int SqueueMain(int argc, char** argv);
int SinfoMain(int argc, char** argv);
int ScancelMain(int argc, char** argv);
int ScontrolMain(int argc, char** argv);
int SprioMain(int argc, char** argv);
int SrunMain(int argc, char** argv);
int SallocMain(int argc, char** argv);
int SacctMain(int argc, char** argv);
int SacctmgrMain(int argc, char** argv);
int SshareMain(int argc, char** argv);
int SreportMain(int argc, char** argv);
int SdiagMain(int argc, char** argv);
// `shoal start|stop|keygen|version|<command>`.
int ShoalMain(int argc, char** argv);

}  // namespace shoal::cli
