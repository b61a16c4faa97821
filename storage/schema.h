#pragma once
#include <string>
#include <vector>

namespace perfloom::storage {
// Element i brings the schema from version i to version i + 1. Never edit a shipped step:
// append a new one (databases in users' hands are at every version).
const std::vector<std::string>& schema_migrations();
}  // namespace perfloom::storage
