// The SQLite driver: one database file, opened in WAL mode with synchronous=FULL so that a
// committed (acknowledged) record survives a crash or power loss.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "dbd/sql.h"

namespace shoal::dbd {

// Opens (creating if missing) the database file at `path`.
Result<std::unique_ptr<SqlConnection>> OpenSqlite(const std::string& path);

// True when `s` is valid UTF-8 without NUL bytes: such strings are bound as text, anything else
// (serialized records) as a blob. Shared by both drivers; defined in sql.cc.
bool IsPlainText(std::string_view s);

}  // namespace shoal::dbd
