// Writes OpenMetrics 1.0 text (pure): families with # HELP / # TYPE, samples with escaped
// labels, histograms with cumulative buckets, and the closing "# EOF". The daemons build one
// document per scrape into a single string.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shoal {

inline constexpr char kOpenMetricsContentType[] =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

using MetricLabels = std::vector<std::pair<std::string_view, std::string_view>>;

class OpenMetricsWriter {
 public:
  // Starts a family: type is "gauge", "counter", "histogram", ... A counter's family name has
  // no "_total"; its samples do.
  void Family(std::string_view name, std::string_view type, std::string_view help);
  void Sample(std::string_view name, const MetricLabels& labels, double value);
  void Sample(std::string_view name, const MetricLabels& labels, uint64_t value);
  void Sample(std::string_view name, uint64_t value) { Sample(name, {}, value); }
  // A family with one unlabelled sample.
  void Gauge(std::string_view name, std::string_view help, uint64_t value);
  void Gauge(std::string_view name, std::string_view help, double value);
  // One histogram series: `buckets` are per-bucket counts (not cumulative) for `bounds` plus a
  // last +Inf bucket; sum in the histogram's unit.
  void Histogram(std::string_view name, const MetricLabels& labels, const double* bounds,
                 size_t n_bounds, const uint64_t* buckets, double sum);

  // The text so far followed by "# EOF\n"; the writer is left empty.
  std::string Finish();
  const std::string& text() const { return out_; }

 private:
  void Name(std::string_view name, const MetricLabels& labels);
  std::string out_;
};

// A number as OpenMetrics writes it: integers without a fraction, others shortest round-trip.
std::string FormatMetricValue(double value);
// Label value escaping: backslash, double quote and newline.
std::string EscapeLabelValue(std::string_view value);

}  // namespace shoal
