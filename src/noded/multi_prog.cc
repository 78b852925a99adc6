#include "noded/multi_prog.h"

#include <cstdlib>
#include <sstream>

namespace shoal::noded {
namespace {

// Whether `ranks` ("0-3,5", "*") contains `task`; `offset` is its position in that set.
bool Contains(const std::string& ranks, uint32_t task, uint32_t* offset) {
  if (ranks == "*") {
    *offset = task;
    return true;
  }
  uint32_t seen = 0;
  std::stringstream ss(ranks);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (part.empty()) return false;
    auto dash = part.find('-');
    char* end = nullptr;
    unsigned long lo = std::strtoul(part.c_str(), &end, 10), hi = lo;
    if (dash != std::string::npos) hi = std::strtoul(part.c_str() + dash + 1, &end, 10);
    if (*end != '\0' || hi < lo) return false;
    if (task >= lo && task <= hi) {
      *offset = seen + (task - static_cast<uint32_t>(lo));
      return true;
    }
    seen += static_cast<uint32_t>(hi - lo + 1);
  }
  return false;
}

std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (char c : line) {
    if (quote) {
      if (c == quote)
        quote = 0;
      else
        cur.push_back(c);
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t') {
      if (in_word) out.push_back(cur), cur.clear(), in_word = false;
    } else {
      cur.push_back(c);
      in_word = true;
    }
  }
  if (in_word) out.push_back(cur);
  return out;
}

}  // namespace

Result<std::vector<std::string>> MultiProgArgv(std::string_view config, uint32_t task_id,
                                               uint32_t local_id) {
  (void)local_id;
  std::stringstream ss{std::string(config)};
  std::string line;
  while (std::getline(ss, line)) {
    auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    auto words = Words(line);
    if (words.size() < 2) continue;
    uint32_t offset = 0;
    if (!Contains(words[0], task_id, &offset)) continue;
    std::vector<std::string> argv(words.begin() + 1, words.end());
    for (auto& a : argv) {
      std::string out;
      for (size_t i = 0; i < a.size(); ++i) {
        if (a[i] == '%' && i + 1 < a.size() && (a[i + 1] == 't' || a[i + 1] == 'o')) {
          out += std::to_string(a[i + 1] == 't' ? task_id : offset);
          ++i;
        } else {
          out.push_back(a[i]);
        }
      }
      a = out;
    }
    return argv;
  }
  return InvalidArgument("no executable for task " + std::to_string(task_id) +
                         " in the --multi-prog configuration");
}

}  // namespace shoal::noded
