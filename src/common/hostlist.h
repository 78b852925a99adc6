// Hostlist expressions, as Slurm writes them: "gpu[01-04,07],cpu-[1-3]", "n[1-2]-ib[0-1]".
// Pure functions, no I/O.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace shoal {

// Expands an expression into host names, in order, keeping duplicates as written.
// Leading zeros are preserved ("n[01-03]" -> n01 n02 n03). Several bracket groups in one name
// expand as a cartesian product. Errors name the problem ("invalid hostlist: n[3-1]").
Result<std::vector<std::string>> ExpandHostlist(std::string_view expr);

// Compresses names back into Slurm's form: "n1,n2,n3,n5" -> "n[1-3,5]". Names sharing a prefix
// and zero-padding width are grouped; output order follows Slurm (sorted by prefix, then number;
// duplicates removed).
std::string CompressHostlist(const std::vector<std::string>& hosts);

}  // namespace shoal
