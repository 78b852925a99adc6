#include "noded/output_pattern.h"

#include <cctype>
#include <cstdlib>

namespace shoal::noded {
namespace {

void AppendPadded(std::string& out, uint64_t value, size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) out.append(width - digits.size(), '0');
  out += digits;
}

}  // namespace

std::string ExpandOutputPattern(std::string_view pattern, const OutputPatternContext& ctx) {
  std::string out;
  if (pattern.find('\\') != std::string_view::npos) {
    for (char c : pattern)
      if (c != '\\') out.push_back(c);
    return out;
  }
  out.reserve(pattern.size() + 16);
  size_t i = 0;
  while (i < pattern.size()) {
    char c = pattern[i];
    if (c != '%') {
      out.push_back(c);
      ++i;
      continue;
    }
    // '%' [width] letter
    size_t j = i + 1;
    size_t width = 0;
    while (j < pattern.size() && std::isdigit(static_cast<unsigned char>(pattern[j]))) {
      if (width < 64) width = width * 10 + static_cast<size_t>(pattern[j] - '0');
      ++j;
    }
    if (j >= pattern.size()) {  // trailing '%' or '%12': keep as written
      out.append(pattern.substr(i));
      break;
    }
    if (width > 64) width = 64;
    char spec = pattern[j];
    switch (spec) {
      case '%':
        out.push_back('%');
        break;
      case 'A':
        AppendPadded(out, ctx.array_job_id != 0 ? ctx.array_job_id : ctx.job_id, width);
        break;
      case 'a':
        AppendPadded(out, ctx.array_task_id, width);
        break;
      case 'j':
        AppendPadded(out, ctx.job_id, width);
        break;
      case 'J':
        AppendPadded(out, ctx.job_id, width);
        if (!ctx.step.empty() && ctx.step != "batch") out += "." + ctx.step;
        break;
      case 'N':
        out += ctx.node_name;
        break;
      case 'n':
        AppendPadded(out, ctx.node_index, width);
        break;
      case 's': {
        bool numeric = !ctx.step.empty();
        for (char d : ctx.step) numeric = numeric && std::isdigit(static_cast<unsigned char>(d));
        if (numeric)
          AppendPadded(out, std::strtoull(ctx.step.c_str(), nullptr, 10), width);
        else
          out += ctx.step;
        break;
      }
      case 't':
        AppendPadded(out, ctx.task_id, width);
        break;
      case 'u':
        out += ctx.user_name;
        break;
      case 'x':
        out += ctx.job_name;
        break;
      default:
        out.append(pattern.substr(i, j + 1 - i));
        break;
    }
    i = j + 1;
  }
  return out;
}

std::string DefaultOutputPattern(bool is_array_task) {
  return is_array_task ? "slurm-%A_%a.out" : "slurm-%j.out";
}

}  // namespace shoal::noded
