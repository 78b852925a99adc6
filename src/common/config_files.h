// Configless operation (SlurmctldParameters=enable_configless): the set of configuration files
// the controller hands to node daemons (`shoald --conf-server`), and the node side's cache of it.
//
// Served: slurm.conf, the files it Includes by a bare name (Slurm pushes an Include only "if the
// filename has no path separators and is located adjacent to slurm.conf"), and the other
// configuration files node daemons read when they sit beside slurm.conf (cgroup.conf, gres.conf,
// ...). The key is never served: a configless node brings its own (shoald --key).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/slurm_conf.h"
#include "shoal.pb.h"

namespace shoal {

// The other files served when present beside slurm.conf (Slurm's configless list).
const std::vector<std::string>& ConfiglessFileNames();

// Whether a served name may be written into the cache: a plain base name, not the key.
bool SafeConfigFileName(std::string_view name);

// Loads slurm.conf as LoadSlurmConf does, also returning every included file that was read.
Result<SlurmConf> LoadSlurmConfRecording(const std::string& path,
                                         std::vector<std::string>* included);

// The files served for `conf_path`: slurm.conf first, then the bare-named includes adjacent to
// it, then the known files present in its directory; with a hash over names and contents.
// Pure given `reader` (a missing optional file is skipped; a missing slurm.conf is an error).
Result<pb::ConfigFilesResponse> CollectConfigFiles(const std::string& conf_path,
                                                   const std::vector<std::string>& included,
                                                   const FileReader& reader);

// "host[:port][,host2[:port]...]" -> "host:port" addresses (port defaults to `default_port`).
Result<std::vector<std::string>> ParseConfServers(std::string_view list, uint32_t default_port);

// Writes the files into `dir` (created 0755; each file replaced atomically, 0644 or 0755 for
// scripts), removes cached files no longer served, and links `dir`/slurm.key to `key_path` so
// commands using the cache find the key as they would beside a local slurm.conf.
Status WriteConfigCache(const std::string& dir, const pb::ConfigFilesResponse& files,
                        const std::string& key_path);

}  // namespace shoal
