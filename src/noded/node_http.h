// HTTP on shoald's port (pure): health probes and the node's own OpenMetrics text, from a
// snapshot the daemon takes on its event loop.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/http_head.h"

namespace shoal::noded {

struct NodeJobUsage {
  uint32_t job_id = 0;
  uint32_t steps = 0;          // step directories (srun steps) of the job on this node
  bool has_cpu = false;        // cgroup CPU accounting available
  uint64_t cpu_usec = 0;       // user + system, batch step and steps
  uint64_t max_rss_bytes = 0;  // largest of its steps' peaks; 0 = unknown
};

struct NodeHttpState {
  std::string node;
  bool registered = false;  // the controller accepted this node's registration
  int64_t start_time = 0;   // Unix time shoald started
  std::vector<NodeJobUsage> jobs;
  uint32_t steps = 0;  // every step directory in the spool
};

// /livez (always 200), /readyz and /healthz (200 once registered with the controller, else
// 503), /metrics; anything else 404.
HttpResponse NodeHttpAnswer(const HttpRequest& req, const NodeHttpState& state);

// The OpenMetrics document of /metrics.
std::string NodeMetricsText(const NodeHttpState& state);

}  // namespace shoal::noded
