// JSON building blocks shared by the endpoint mappings: Slurm's "no value" number structs, time
// values, string lists, and tolerant readers for request bodies. Pure, no I/O.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace shoal::restd {

using json = nlohmann::json;

// {"set": true, "infinite": false, "number": v} (Slurm's *_no_val_struct).
json NoVal(int64_t v);
json NoValUnset();
json NoValInfinite();
// A uint32 where kTimeNoVal means unset and kTimeInfinite infinite.
json NoValU32(uint32_t v);
// A unix time (0 = unset).
json NoValTime(int64_t unix_seconds);
json NoValDouble(double v);
// A comma-separated string as a JSON array of its non-empty items.
json CsvList(const std::string& csv);
json StringList(const std::vector<std::string>& items);

// Readers: return nullopt when the key is absent or null; set *bad when present but of the wrong
// type. A number may be given plain (42) or as a no-val struct ({"set":true,"number":42});
// "infinite": true reads as `infinite_value`.
std::optional<int64_t> ReadInt(const json& obj, const char* key, bool* bad,
                               int64_t infinite_value = -1);
std::optional<std::string> ReadString(const json& obj, const char* key, bool* bad);
std::optional<bool> ReadBool(const json& obj, const char* key, bool* bad);
// A string or an array of strings, joined with `sep`.
std::optional<std::string> ReadStringOrList(const json& obj, const char* key, bool* bad,
                                            char sep = ',');

}  // namespace shoal::restd
