// PLACEHOLDER until the SQLite and MariaDB drivers land (issue 6, in progress).
#include "dbd/sql.h"

namespace shoal::dbd {

Result<std::unique_ptr<SqlConnection>> OpenSql(const StorageConfig& config) {
  return Error(ErrorCode::kNotSupported, "storage type " + config.type + " is not built yet");
}

}  // namespace shoal::dbd
