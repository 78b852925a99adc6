#include "noded/node_http.h"

#include "common/openmetrics.h"

namespace shoal::noded {

std::string NodeMetricsText(const NodeHttpState& s) {
  OpenMetricsWriter w;
  const std::string& n = s.node;
  w.Family("shoal_node_registered", "gauge",
           "Whether the node daemon is registered with the controller");
  w.Sample("shoal_node_registered", {{"node", n}}, uint64_t{s.registered ? 1u : 0u});
  w.Family("shoal_node_start_time_seconds", "gauge", "When the node daemon started (Unix time)");
  w.Sample("shoal_node_start_time_seconds", {{"node", n}}, static_cast<uint64_t>(s.start_time));
  w.Family("shoal_node_jobs", "gauge", "Jobs with processes or state on this node");
  w.Sample("shoal_node_jobs", {{"node", n}}, uint64_t{s.jobs.size()});
  w.Family("shoal_node_steps", "gauge", "Job steps (srun) running on this node");
  w.Sample("shoal_node_steps", {{"node", n}}, uint64_t{s.steps});
  w.Family("shoal_node_job_steps", "gauge", "Steps of each job on this node");
  for (const auto& j : s.jobs)
    w.Sample("shoal_node_job_steps", {{"node", n}, {"job", std::to_string(j.job_id)}},
             uint64_t{j.steps});
  w.Family("shoal_node_job_cpu_seconds", "counter",
           "CPU time (user + system) of each job's cgroups on this node");
  for (const auto& j : s.jobs)
    if (j.has_cpu)
      w.Sample("shoal_node_job_cpu_seconds_total", {{"node", n}, {"job", std::to_string(j.job_id)}},
               static_cast<double>(j.cpu_usec) / 1e6);
  w.Family("shoal_node_job_memory_max_bytes", "gauge",
           "Peak memory of each job's cgroups on this node");
  for (const auto& j : s.jobs)
    if (j.max_rss_bytes > 0)
      w.Sample("shoal_node_job_memory_max_bytes", {{"node", n}, {"job", std::to_string(j.job_id)}},
               j.max_rss_bytes);
  return w.Finish();
}

HttpResponse NodeHttpAnswer(const HttpRequest& req, const NodeHttpState& s) {
  std::string path = req.path;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  HttpResponse r;
  if (path == "/livez") {
    r.body = "ok\n";
  } else if (path == "/readyz" || path == "/healthz") {
    if (s.registered) {
      r.body = "ok\n";
    } else {
      r.status = 503;
      r.body = "not registered with the controller\n";
    }
  } else if (path == "/metrics") {
    r.content_type = kOpenMetricsContentType;
    r.body = NodeMetricsText(s);
  } else {
    r = HttpError(404);
  }
  return r;
}

}  // namespace shoal::noded
