// Helpers shared by the cgroup backends.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "noded/cgroup/cgroup_backend.h"

namespace shoal::noded {

std::string StepCgroupName(uint32_t step_id) {
  if (step_id == kCgBatchStep) return "step_batch";
  if (step_id == kCgExternStep) return "step_extern";
  return "step_" + std::to_string(step_id);
}

// Control files exist in cgroupfs; a test tree gets them created (O_CREAT is harmless there).
Status WriteCgroupFile(const std::string& path, const std::string& value) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error(ErrorCode::kIoError, path + ": " + std::strerror(errno));
  ssize_t n = ::write(fd, value.data(), value.size());
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size()))
    return Error(ErrorCode::kIoError,
                 "write '" + value + "' to " + path + ": " + std::strerror(n < 0 ? err : EIO));
  return Status::Ok();
}

Result<std::string> ReadCgroupFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error(ErrorCode::kIoError, path + ": " + std::strerror(errno));
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

uint64_t KeyedValue(const std::string& text, const std::string& key) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 &&
        line[key.size()] == ' ')
      return std::strtoull(line.c_str() + key.size() + 1, nullptr, 10);
  }
  return 0;
}

std::vector<pid_t> ParsePids(const std::string& text) {
  std::vector<pid_t> pids;
  const char* p = text.c_str();
  while (*p) {
    char* end = nullptr;
    long v = std::strtol(p, &end, 10);
    if (end == p) {
      ++p;
      continue;
    }
    if (v > 0) pids.push_back(static_cast<pid_t>(v));
    p = end;
  }
  return pids;
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::string out;
  size_t i = 0;
  while (i < cpus.size()) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

std::vector<std::string> SubDirs(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::lstat((dir + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) out.push_back(name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

void CollectPids(const std::string& dir, std::vector<pid_t>* out) {
  if (auto procs = ReadCgroupFile(dir + "/cgroup.procs")) {
    for (pid_t p : ParsePids(*procs)) out->push_back(p);
  }
  for (const auto& sub : SubDirs(dir)) CollectPids(dir + "/" + sub, out);
}

void RemoveTreeOfCgroups(const std::string& dir) {
  for (const auto& sub : SubDirs(dir)) RemoveTreeOfCgroups(dir + "/" + sub);
  if (::rmdir(dir.c_str()) != 0 && errno == ENOTEMPTY) {
    if (DIR* d = ::opendir(dir.c_str())) {
      while (dirent* e = ::readdir(d)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") ::unlink((dir + "/" + name).c_str());
      }
      ::closedir(d);
    }
    ::rmdir(dir.c_str());
  }
}

}  // namespace shoal::noded
