#include "common/openmetrics.h"

#include <charconv>
#include <cmath>

namespace shoal {

std::string FormatMetricValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[400];
  double mag = std::fabs(value);
  // Plain decimals for the usual range ("0.0001", not "1e-04"), exponents beyond it.
  auto r = mag == 0 || (mag >= 1e-6 && mag < 1e15)
               ? std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::fixed)
               : std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, r.ptr);
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void OpenMetricsWriter::Family(std::string_view name, std::string_view type,
                               std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  // HELP text escapes backslash and newline.
  for (char c : help) {
    if (c == '\\') {
      out_ += "\\\\";
    } else if (c == '\n') {
      out_ += "\\n";
    } else {
      out_ += c;
    }
  }
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void OpenMetricsWriter::Name(std::string_view name, const MetricLabels& labels) {
  out_ += name;
  if (labels.empty()) return;
  out_ += '{';
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out_ += ',';
    first = false;
    out_ += k;
    out_ += "=\"";
    out_ += EscapeLabelValue(v);
    out_ += '"';
  }
  out_ += '}';
}

void OpenMetricsWriter::Sample(std::string_view name, const MetricLabels& labels, double value) {
  Name(name, labels);
  out_ += ' ';
  out_ += FormatMetricValue(value);
  out_ += '\n';
}

void OpenMetricsWriter::Sample(std::string_view name, const MetricLabels& labels, uint64_t value) {
  Name(name, labels);
  out_ += ' ';
  out_ += std::to_string(value);
  out_ += '\n';
}

void OpenMetricsWriter::Gauge(std::string_view name, std::string_view help, uint64_t value) {
  Family(name, "gauge", help);
  Sample(name, {}, value);
}

void OpenMetricsWriter::Gauge(std::string_view name, std::string_view help, double value) {
  Family(name, "gauge", help);
  Sample(name, {}, value);
}

void OpenMetricsWriter::Histogram(std::string_view name, const MetricLabels& labels,
                                  const double* bounds, size_t n_bounds, const uint64_t* buckets,
                                  double sum) {
  std::string bucket_name = std::string(name) + "_bucket";
  MetricLabels with_le = labels;
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= n_bounds; ++i) {
    cumulative += buckets[i];
    std::string le = i < n_bounds ? FormatMetricValue(bounds[i]) : "+Inf";
    with_le.resize(labels.size());
    with_le.emplace_back("le", le);
    Sample(bucket_name, with_le, cumulative);
  }
  Sample(std::string(name) + "_count", labels, cumulative);
  Sample(std::string(name) + "_sum", labels, sum);
}

std::string OpenMetricsWriter::Finish() {
  out_ += "# EOF\n";
  std::string out = std::move(out_);
  out_.clear();
  return out;
}

}  // namespace shoal
