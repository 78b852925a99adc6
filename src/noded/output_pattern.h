// Expansion of sbatch's "filename pattern" (man sbatch) for --output/--error/--input.
// Pure: no I/O, everything comes in through OutputPatternContext.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace shoal::noded {

struct OutputPatternContext {
  uint32_t job_id = 0;
  uint32_t array_job_id = 0;            // 0 = not an array job (%A is then the job id)
  uint32_t array_task_id = 0xfffffffe;  // kNoArrayTask when not an array task
  std::string step = "batch";           // %s, and the ".step" part of %J (omitted for "batch")
  std::string node_name;                // %N: this node (the batch host)
  uint32_t node_index = 0;              // %n
  uint32_t task_id = 0;                 // %t
  std::string user_name;                // %u
  std::string job_name;                 // %x
};

// Replaces %%, %A, %a, %J, %j, %N, %n, %s, %t, %u, %x. A decimal width between '%' and the letter
// zero-pads numeric fields ("%4j" -> "0128"); it is ignored for text fields. Unknown sequences are
// kept as written. A pattern containing a backslash is not expanded: the backslashes are removed
// and the rest is used literally.
std::string ExpandOutputPattern(std::string_view pattern, const OutputPatternContext& ctx);

// The default --output pattern: "slurm-%A_%a.out" for array tasks, else "slurm-%j.out".
std::string DefaultOutputPattern(bool is_array_task);

}  // namespace shoal::noded
