#pragma once
// gzip for the files the engine writes and reads back: the trained boosters are 5–7 MB of JSON
// each and about 3.5x smaller compressed (resources/models/*.json.gz).
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace perfloom {

struct CompressedTextError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The text inflates to more than the caller's limit: inflating stopped there.
struct CompressedTextTooLarge : CompressedTextError {
  using CompressedTextError::CompressedTextError;
};

// True when `bytes` starts with gzip's magic number.
bool is_gzip(std::string_view bytes);

// The text a gzip stream holds (concatenated members too); `bytes` unchanged where it is not gzip.
// Throws CompressedTextError "LABEL: corrupt gzip data (zlib's reason)" for a damaged or cut stream,
// and CompressedTextTooLarge once the text would pass `max_bytes` (a gzip bomb is stopped there).
std::string gunzip_if_compressed(std::string_view bytes, const std::string& label,
                                 std::size_t max_bytes = static_cast<std::size_t>(-1));

// A gzip stream of `text` at level 9. The header carries no file name and no time, so the same
// text always gives the same bytes (a retrained model that did not change leaves git clean).
std::string gzip_text(std::string_view text);

}  // namespace perfloom
