#include "common/config_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "common/auth.h"
#include "common/files.h"

namespace shoal {
namespace {

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string BaseOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string Hex(const std::string& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

Status MakeDirs(const std::string& dir) {
  if (dir.empty()) return Status::Ok();
  struct stat sb;
  if (::stat(dir.c_str(), &sb) == 0)
    return S_ISDIR(sb.st_mode) ? Status::Ok()
                               : Error(ErrorCode::kIoError, dir + ": not a directory");
  if (Status st = MakeDirs(DirOf(dir)); !st.ok() && DirOf(dir) != dir) return st;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return Error(ErrorCode::kIoError, dir + ": " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace

const std::vector<std::string>& ConfiglessFileNames() {
  static const std::vector<std::string> kNames = {
      "acct_gather.conf", "cgroup.conf",        "cgroup_allowed_devices_file.conf",
      "cli_filter.lua",   "ext_sensors.conf",   "gres.conf",
      "helpers.conf",     "job_container.conf", "knl_cray.conf",
      "knl_generic.conf", "mpi.conf",           "oci.conf",
      "plugstack.conf",   "topology.conf",
  };
  return kNames;
}

bool SafeConfigFileName(std::string_view name) {
  if (name.empty() || name == "." || name == ".." || name == "slurm.key") return false;
  if (name.find('/') != std::string_view::npos || name.find('\0') != std::string_view::npos)
    return false;
  return name.size() < 256 && !(name.size() > 4 && name.substr(name.size() - 4) == ".tmp");
}

Result<SlurmConf> LoadSlurmConfRecording(const std::string& path,
                                         std::vector<std::string>* included) {
  Result<std::string> text = ReadFileToString(path);
  if (!text.ok()) return Error(ErrorCode::kIoError, "could not read " + path + ": " + text.error());
  FileReader reader = [included](const std::string& p) -> Result<std::string> {
    Result<std::string> r = ReadFileToString(p);
    if (r.ok()) included->push_back(p);
    return r;
  };
  return ParseSlurmConf(*text, path, reader, GlobPaths);
}

Result<pb::ConfigFilesResponse> CollectConfigFiles(const std::string& conf_path,
                                                   const std::vector<std::string>& included,
                                                   const FileReader& reader) {
  pb::ConfigFilesResponse out;
  std::set<std::string> names;
  auto add = [&](const std::string& name, std::string content) {
    if (!names.insert(name).second) return;
    pb::ConfigFile* f = out.add_files();
    f->set_name(name);
    f->set_content(std::move(content));
  };
  Result<std::string> main = reader(conf_path);
  if (!main.ok())
    return Error(ErrorCode::kIoError, "could not read " + conf_path + ": " + main.error());
  add("slurm.conf", std::move(*main));
  const std::string dir = DirOf(conf_path);
  for (const std::string& path : included) {
    // Only an include adjacent to slurm.conf: the node writes it beside its cached slurm.conf,
    // where the cached slurm.conf's "Include name" finds it.
    if (DirOf(path) != dir || !SafeConfigFileName(BaseOf(path))) continue;
    if (Result<std::string> text = reader(path); text.ok()) add(BaseOf(path), std::move(*text));
  }
  for (const std::string& name : ConfiglessFileNames()) {
    if (Result<std::string> text = reader(dir + "/" + name); text.ok()) add(name, std::move(*text));
  }
  std::string all;
  for (const pb::ConfigFile& f : out.files()) {
    all += f.name();
    all.push_back('\0');
    all += std::to_string(f.content().size());
    all.push_back('\0');
    all += f.content();
  }
  out.set_hash(Hex(Sha256(all)));
  return out;
}

Result<std::vector<std::string>> ParseConfServers(std::string_view list, uint32_t default_port) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view item = list.substr(pos, comma - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    pos = comma + 1;
    if (item.empty()) continue;
    std::string host(item);
    uint32_t port = default_port;
    if (size_t colon = item.rfind(':'); colon != std::string_view::npos) {
      host = std::string(item.substr(0, colon));
      std::string_view digits = item.substr(colon + 1);
      port = 0;
      for (char c : digits) {
        if (c < '0' || c > '9' || port > 65535) {
          port = 0;
          break;
        }
        port = port * 10 + static_cast<uint32_t>(c - '0');
      }
      if (digits.empty() || port == 0 || port > 65535)
        return InvalidArgument("invalid port in --conf-server '" + std::string(item) + "'");
    }
    if (host.empty())
      return InvalidArgument("missing host in --conf-server '" + std::string(item) + "'");
    out.push_back(host + ":" + std::to_string(port));
  }
  if (out.empty()) return InvalidArgument("--conf-server needs host[:port]");
  return out;
}

Status WriteConfigCache(const std::string& dir, const pb::ConfigFilesResponse& files,
                        const std::string& key_path) {
  if (Status st = MakeDirs(dir); !st.ok()) return st;
  ::chmod(dir.c_str(), 0755);
  std::set<std::string> served;
  bool has_conf = false;
  for (const pb::ConfigFile& f : files.files()) {
    if (!SafeConfigFileName(f.name())) continue;
    has_conf = has_conf || f.name() == "slurm.conf";
    served.insert(f.name());
  }
  if (!has_conf) return Error(ErrorCode::kProtocol, "the controller sent no slurm.conf");
  // slurm.conf last: a reader that sees the new slurm.conf also sees the files it names.
  for (int pass = 0; pass < 2; ++pass) {
    for (const pb::ConfigFile& f : files.files()) {
      if (!served.count(f.name()) || (f.name() == "slurm.conf") != (pass == 1)) continue;
      Status st = WriteFileAtomic(dir + "/" + f.name(), f.content(), f.executable() ? 0755 : 0644);
      if (!st.ok()) return st;
    }
  }
  if (DIR* d = ::opendir(dir.c_str())) {
    std::vector<std::string> stale;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == ".." || name == "slurm.key" || served.count(name)) continue;
      stale.push_back(name);
    }
    ::closedir(d);
    for (const std::string& name : stale) ::unlink((dir + "/" + name).c_str());
  }
  std::string link = dir + "/slurm.key";
  if (!key_path.empty() && key_path != link) {
    char buf[4096];
    ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
    if (n < 0 || std::string(buf, static_cast<size_t>(n)) != key_path) {
      ::unlink(link.c_str());
      if (::symlink(key_path.c_str(), link.c_str()) != 0)
        return Error(ErrorCode::kIoError, link + ": " + std::strerror(errno));
    }
  }
  return Status::Ok();
}

}  // namespace shoal
