#pragma once
// The small text parsing the option and spec grammars share (workload specs, --sla, --load, the
// price list): trimmed fields and whole-string numbers, locale-independent (std::from_chars), so
// that "2.5" reads the same in the GUI, whose locale Qt sets from the environment.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace perfloom {

// `s` without leading and trailing ASCII white space.
std::string trim(std::string_view s);
// The fields between `sep`s, each trimmed: n separators give n + 1 fields ("" gives one empty field).
std::vector<std::string> split_fields(std::string_view s, char sep);
// The whole of `s` as a number: false for an empty string, trailing characters, a value out of
// range, and (doubles) infinities and NaN. A leading '+' is accepted.
bool parse_int(std::string_view s, int64_t& v);
bool parse_double(std::string_view s, double& v);

}  // namespace perfloom
