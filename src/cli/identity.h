// User and group names for the commands' output, looked up once per id (squeue prints the same
// few users thousands of times).
#pragma once

#include <cstdint>
#include <string>

namespace shoal::cli {

// "" when the id has no passwd/group entry.
std::string UserNameOf(uint32_t uid);
std::string GroupNameOf(uint32_t gid);

// A user name or number (-u of squeue and sprio); a number must belong to an existing user, as
// in Slurm. False when neither resolves.
bool UidOfUser(const std::string& text, uint32_t* uid);

}  // namespace shoal::cli
