// The MariaDB/MySQL driver (MariaDB Connector/C). Every statement is a server-side prepared
// statement with bound parameters. A lost server maps to ErrorCode::kUnavailable: the
// connection is then dead for good and the daemon opens a new one.
#pragma once

#include <memory>
#include <string_view>

#include "common/result.h"
#include "dbd/sql.h"

namespace shoal::dbd {

// Connects (unix socket when config.host starts with "/" or "unix:", else TCP host:port),
// creates the database config.loc when missing (default slurm_acct_db) and selects it.
Result<std::unique_ptr<SqlConnection>> OpenMysql(const StorageConfig& config);

// Database names are spliced into CREATE DATABASE (identifiers cannot be bound), so only
// [A-Za-z0-9_], 1 to 64 characters, is accepted.
bool IsValidDatabaseName(std::string_view name);

}  // namespace shoal::dbd
