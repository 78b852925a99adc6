// The operator's probe endpoint: /livez (the process answers), /readyz (the Kubernetes API
// answered and, once leading, every watch has listed) and /metrics (its own counters), over a tiny
// blocking HTTP/1.0 server on its own thread (answers are a few bytes; kubelet probes are the only
// clients).
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "common/http_head.h"
#include "common/result.h"

namespace shoal::op {

// Pure: the answer to one probe request; /metrics answers `metrics` (OpenMetrics text) when
// there is one.
HttpResponse HealthAnswer(const HttpRequest& request, bool ready,
                          const std::string* metrics = nullptr);

class HealthServer {
 public:
  ~HealthServer();
  // Listens on 0.0.0.0:port (port 0: an ephemeral one, see port()).
  Status Start(int port, std::function<bool()> ready,
               std::function<std::string()> metrics = nullptr);
  int port() const { return port_; }
  void Stop();

 private:
  void Loop();
  int fd_ = -1;
  int port_ = 0;
  std::function<bool()> ready_;
  std::function<std::string()> metrics_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace shoal::op
