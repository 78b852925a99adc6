#include "noded/oci_conf.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

namespace shoal::noded {
namespace {

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool Truthy(const std::string& v) {
  std::string l = Lower(v);
  return l == "true" || l == "yes" || l == "1";
}

}  // namespace

Result<OciConf> ParseOciConf(const std::string& text) {
  OciConf c;
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    ++line_no;
    // '#' starts a comment outside double quotes.
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '"') quoted = !quoted;
      if (line[i] == '#' && !quoted) {
        line.resize(i);
        break;
      }
    }
    line = Trim(line);
    if (line.empty()) continue;
    size_t eq = line.find('=');
    std::string where = "oci.conf:" + std::to_string(line_no) + ": ";
    if (eq == std::string::npos) return InvalidArgument(where + "expected Key=Value: " + line);
    std::string key = Lower(Trim(line.substr(0, eq)));
    std::string value = Trim(line.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
      value = value.substr(1, value.size() - 2);
    if (key == "runtimequery")
      c.runtime_query = value;
    else if (key == "runtimecreate")
      c.runtime_create = value;
    else if (key == "runtimestart")
      c.runtime_start = value;
    else if (key == "runtimekill")
      c.runtime_kill = value;
    else if (key == "runtimedelete")
      c.runtime_delete = value;
    else if (key == "runtimerun")
      c.runtime_run = value;
    else if (key == "runtimeenvexclude")
      c.runtime_env_exclude.push_back(value);
    else if (key == "envexclude")
      c.env_exclude = value;
    else if (key == "mountspooldir") {
      c.mount_spool_dir = value;
      c.mount_spool_dir_set = !value.empty();
    } else if (key == "containerpath")
      c.container_path = value;
    else if (key == "createenvfile") {
      std::string l = Lower(value);
      c.create_env_file = l != "false" && l != "no" && !l.empty();
      c.create_env_file_mode = l == "newline" ? "newline" : "null";
    } else if (key == "ignorefileconfigjson")
      c.ignore_file_config_json = Truthy(value);
    else if (key == "disablehooks") {
      c.disable_hooks = true;
      c.disable_hooks_list = value;
    } else if (key == "disablecleanup")
      c.disable_cleanup = Truthy(value);
    else if (key == "debug" || key == "srunpath" || key == "srunargs" || key == "stdiodebug" ||
             key == "syslogdebug" || key == "filedebug" || key == "debugflags")
      c.debug = value;
    else
      return InvalidArgument(where + "unknown key " + Trim(line.substr(0, eq)));
  }
  bool create_start = !c.runtime_create.empty() || !c.runtime_start.empty();
  if (!c.runtime_run.empty() && create_start)
    return InvalidArgument("oci.conf: RunTimeRun and RunTimeCreate/RunTimeStart are exclusive");
  if (c.runtime_run.empty() && (c.runtime_create.empty() || c.runtime_start.empty()))
    return InvalidArgument("oci.conf: RunTimeRun, or RunTimeCreate and RunTimeStart, required");
  if (c.mount_spool_dir.empty()) c.mount_spool_dir = "/var/run/slurm/";
  return c;
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\'')
      out += "'\\''";
    else
      out += ch;
  }
  return out + "'";
}

std::string ExpandOciPattern(const std::string& pattern, const OciPatternContext& ctx) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char ch = pattern[i];
    if (ch != '%' || i + 1 >= pattern.size()) {
      out += ch;
      continue;
    }
    char k = pattern[++i];
    switch (k) {
      case '%':
        out += '%';
        break;
      case '@':
        for (size_t a = 0; a < ctx.argv.size(); ++a)
          out += (a ? " " : "") + ShellQuote(ctx.argv[a]);
        break;
      case 'b':
        out += ctx.bundle;
        break;
      case 'e':
        out += ctx.env_file;
        break;
      case 'j':
        out += std::to_string(ctx.job_id);
        break;
      case 'm':
        out += ctx.spool_dir;
        break;
      case 'n':
        out += ctx.node_name;
        break;
      case 'r':
        out += ctx.rootfs;
        break;
      case 's':
        out += std::to_string(ctx.step_id);
        break;
      case 't':
        out += std::to_string(ctx.task_id);
        break;
      case 'u':
        out += ctx.user_name;
        break;
      case 'U':
        out += std::to_string(ctx.uid);
        break;
      default:  // unknown: kept as written
        out += '%';
        out += k;
        break;
    }
  }
  return out;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (ch < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", ch);
          out += buf;
        } else {
          out += static_cast<char>(ch);
        }
    }
  }
  return out + "\"";
}

namespace {
std::string JsonArray(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + JsonString(v[i]);
  return out + "]";
}
}  // namespace

std::string GenerateOciConfig(const OciProcessSpec& s) {
  const std::vector<std::string> caps = {"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"};
  std::string c = "{\n  \"ociVersion\": \"1.0.0\",\n  \"process\": {\n    \"terminal\": false,\n";
  c += "    \"user\": {\"uid\": 0, \"gid\": 0},\n";
  c += "    \"args\": " + JsonArray(s.argv) + ",\n";
  c += "    \"env\": " + JsonArray(s.env) + ",\n";
  c += "    \"cwd\": " + JsonString(s.cwd.empty() ? "/" : s.cwd) + ",\n";
  c += "    \"capabilities\": {\"bounding\": " + JsonArray(caps) +
       ", \"effective\": " + JsonArray(caps) + ", \"permitted\": " + JsonArray(caps) +
       ", \"ambient\": " + JsonArray(caps) + "},\n";
  c += "    \"noNewPrivileges\": true\n  },\n";
  c += "  \"root\": {\"path\": " + JsonString(s.rootfs) + ", \"readonly\": true},\n";
  c += "  \"hostname\": " + JsonString(s.hostname.empty() ? "container" : s.hostname) + ",\n";
  c += R"(  "mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
    {"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
    {"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
    {"destination": "/sys", "type": "none", "source": "/sys", "options": ["rbind", "nosuid", "noexec", "nodev", "ro"]})";
  for (const auto& [source, dest] : s.binds)
    c += ",\n    {\"destination\": " + JsonString(dest) +
         ", \"type\": \"none\", \"source\": " + JsonString(source) +
         ", \"options\": [\"rbind\", \"nosuid\", \"nodev\", \"rw\"]}";
  c += "\n  ],\n";
  c += "  \"linux\": {\n";
  c += "    \"uidMappings\": [{\"containerID\": 0, \"hostID\": " + std::to_string(s.uid) +
       ", \"size\": 1}],\n";
  c += "    \"gidMappings\": [{\"containerID\": 0, \"hostID\": " + std::to_string(s.gid) +
       ", \"size\": 1}],\n";
  c +=
      R"(    "namespaces": [{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}, {"type": "user"}],
    "maskedPaths": ["/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list", "/proc/sched_debug", "/sys/firmware", "/proc/scsi"],
    "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]
  }
}
)";
  return c;
}

namespace {
// The value after `"key":` in flat JSON text (string without quotes, or a bare token).
std::string JsonField(const std::string& json, const std::string& key) {
  size_t k = json.find("\"" + key + "\"");
  if (k == std::string::npos) return "";
  size_t colon = json.find(':', k + key.size() + 2);
  if (colon == std::string::npos) return "";
  size_t v = json.find_first_not_of(" \t\r\n", colon + 1);
  if (v == std::string::npos) return "";
  if (json[v] == '"') {
    size_t end = json.find('"', v + 1);
    return end == std::string::npos ? "" : json.substr(v + 1, end - v - 1);
  }
  size_t end = json.find_first_of(",}] \t\r\n", v);
  return json.substr(v, end == std::string::npos ? std::string::npos : end - v);
}
}  // namespace

OciState ParseOciState(const std::string& json) {
  OciState st;
  st.status = JsonField(json, "status");
  std::string pid = JsonField(json, "pid");
  char* end = nullptr;
  long long v = pid.empty() ? 0 : std::strtoll(pid.c_str(), &end, 10);
  if (!pid.empty() && end && *end == '\0' && v > 0) st.pid = v;
  return st;
}

}  // namespace shoal::noded
