// Whole-file I/O shared by the daemons and commands: atomic replacement and whole reads.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "common/result.h"

namespace shoal {

// Writes `data` to path.tmp with exactly `mode` (the umask does not narrow it) and renames it
// over `path`, so a reader never sees half a file. With `sync`, fsyncs the file before the rename
// and the directory after it (what must survive a crash); without, it only needs to be atomic.
Status WriteFileAtomic(const std::string& path, std::string_view data, mode_t mode,
                       bool sync = true);
Result<std::string> ReadWholeFile(const std::string& path);

}  // namespace shoal
