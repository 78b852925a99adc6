#include "operator/shoal_api_cli.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "operator/shoal_api.h"

namespace shoal::op {

Json ShoalNodeJson(const ShoalNode& n) {
  return {{"name", n.name},
          {"base_state", n.base_state},
          {"flags", Json(std::vector<std::string>(n.flags.begin(), n.flags.end()))},
          {"reason", n.reason},
          {"comment", n.comment},
          {"features", n.features},
          {"alloc_cpus", n.alloc_cpus},
          {"running_jobs", n.running_jobs},
          {"latest_job_end", n.latest_job_end}};
}

int RunShoalApiCommand(const std::vector<std::string>& args) {
  ShoalApiConfig cfg;
  std::string key_file;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) break;
    if (i + 1 >= args.size()) {
      std::fprintf(stderr, "shoal-operator shoal-api: %s needs a value\n", a.c_str());
      return 2;
    }
    if (a == "--controller-address") {
      cfg.address = args[++i];
    } else if (a == "--jwt-key-file") {
      key_file = args[++i];
    } else if (a == "--shoal-user") {
      cfg.user = args[++i];
    } else {
      std::fprintf(stderr, "shoal-operator shoal-api: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (!key_file.empty()) {
    std::ifstream in(key_file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "shoal-operator shoal-api: cannot read %s\n", key_file.c_str());
      return 1;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    cfg.jwt_key = ss.str();
  }
  std::vector<std::string> rest(args.begin() + static_cast<long>(i), args.end());
  if (rest.empty()) {
    std::fprintf(stderr,
                 "usage: shoal-operator shoal-api [--controller-address H:P] [--jwt-key-file F] "
                 "[--shoal-user U] ping|nodes|drain N REASON|undrain N|down N REASON|"
                 "comment N TEXT|delete N|reconfigure|reservation NAME START DURATION NODES\n");
    return 2;
  }
  ShoalApi api(cfg);
  const std::string& cmd = rest[0];
  auto need = [&](size_t n) {
    if (rest.size() == n + 1) return true;
    std::fprintf(stderr, "shoal-operator shoal-api: %s takes %zu argument(s)\n", cmd.c_str(), n);
    return false;
  };
  Status s;
  if (cmd == "nodes") {
    auto nodes = api.ListNodes();
    if (!nodes) {
      std::fprintf(stderr, "shoal-operator shoal-api: %s\n", nodes.error().c_str());
      return 1;
    }
    Json out = Json::array();
    for (const auto& n : *nodes) out.push_back(ShoalNodeJson(n));
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  } else if (cmd == "ping") {
    if (!need(0)) return 2;
    s = api.Ping();
  } else if (cmd == "drain") {
    if (!need(2)) return 2;
    s = api.Drain(rest[1], rest[2]);
  } else if (cmd == "undrain") {
    if (!need(1)) return 2;
    s = api.Undrain(rest[1]);
  } else if (cmd == "down") {
    if (!need(2)) return 2;
    s = api.Down(rest[1], rest[2]);
  } else if (cmd == "comment") {
    if (!need(2)) return 2;
    s = api.SetComment(rest[1], rest[2]);
  } else if (cmd == "delete") {
    if (!need(1)) return 2;
    s = api.DeleteNode(rest[1]);
  } else if (cmd == "reconfigure") {
    if (!need(0)) return 2;
    s = api.Reconfigure();
  } else if (cmd == "reservation") {
    if (!need(4)) return 2;
    s = api.CreateReservation(rest[1], std::atoll(rest[2].c_str()), std::atoll(rest[3].c_str()),
                              rest[4]);
  } else {
    std::fprintf(stderr, "shoal-operator shoal-api: unknown command %s\n", cmd.c_str());
    return 2;
  }
  if (!s.ok()) {
    std::fprintf(stderr, "shoal-operator shoal-api: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace shoal::op
