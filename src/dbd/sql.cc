// OpenSql: picks the driver from StorageType.
#include "dbd/sql.h"

#include "dbd/mysql_connection.h"
#include "dbd/sqlite_connection.h"

namespace shoal::dbd {

Result<std::unique_ptr<SqlConnection>> OpenSql(const StorageConfig& config) {
  if (config.type == "accounting_storage/sqlite") return OpenSqlite(config.loc);
  if (config.type == "accounting_storage/mysql") return OpenMysql(config);
  return Error(ErrorCode::kInvalidArgument,
               "unknown StorageType '" + config.type +
                   "' (expected accounting_storage/sqlite or accounting_storage/mysql)");
}

bool IsPlainText(std::string_view s) {
  // UTF-8 validation: lead byte, then the right number of continuation bytes; overlong forms and
  // surrogates are not worth rejecting here (both databases store them as given).
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t extra = 0;
    if (c == 0) return false;
    if (c < 0x80) {
      extra = 0;
    } else if ((c & 0xe0) == 0xc0) {
      extra = 1;
    } else if ((c & 0xf0) == 0xe0) {
      extra = 2;
    } else if ((c & 0xf8) == 0xf0) {
      extra = 3;
    } else {
      return false;
    }
    if (i + extra >= s.size() && extra > 0) return false;  // truncated sequence
    for (size_t k = 1; k <= extra; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    }
    i += extra + 1;
  }
  return true;
}

}  // namespace shoal::dbd
