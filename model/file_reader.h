#pragma once
// One reader for the whole-file inputs the engine loads: GPU files, calibrations, Hugging Face
// configs, tuner tables, learned models, workload traces, a public dataset's MANIFEST.tsv. The
// files may be someone else's, or not files at all: a named pipe would block a plain open() and
// read() for ever, /dev/zero would grow memory until the machine gives out, a 2 GB "GPU file" would
// be parsed into gigabytes. So the reader
//   - refuses anything but a regular file (a named pipe, a device, a socket, a folder) before it
//     reads a byte: it checks the type with stat() and opens with O_NONBLOCK, so that even a pipe
//     swapped in between the two checks cannot block;
//   - refuses a file over its kind's size limit, from its size on disk and again while reading (a
//     file that grows, or a file whose size stat() does not know);
//   - inflates gzip content only for kinds that may be compressed, and stops at the kind's limit on
//     the inflated size (a gzip bomb is refused after at most that many bytes);
//   - names the file, and says why (the type found, the size and the limit, the system's error).
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "model/input_error.h"
#include "model/json_fields.h"

namespace perfloom {

// What one kind of file may be. The limits are far above what an honest file of the kind needs (the
// largest shipped tuner table is 8 MB on disk, 30 MB inflated) and far below what would hurt.
struct FileLimit {
  std::string_view what;           // "a GPU file": how a message names the kind
  std::uint64_t max_bytes = 0;     // on disk
  std::uint64_t max_inflated = 0;  // 0: the content is read as stored (gzip is not inflated)
  bool follow_symlinks = true;     // false: a symbolic link is refused, not followed
};

namespace file_limits {
inline constexpr std::uint64_t kMiB = 1024 * 1024;
inline constexpr FileLimit gpu_spec{"a GPU file", 1 * kMiB};
inline constexpr FileLimit calibration{"a calibration file", 4 * kMiB};
// A Hugging Face config.json: some vision models list tens of thousands of labels (about 1 MB).
inline constexpr FileLimit llm_config{"a model config", 16 * kMiB};
inline constexpr FileLimit tuner_table{"a tuner table", 64 * kMiB, 512 * kMiB};
// A booster file or the models' manifest.json.
inline constexpr FileLimit learned_model{"a learned model file", 256 * kMiB, 1024 * kMiB};
// --workload trace:FILE: about 25 bytes a request, so some ten million requests.
inline constexpr FileLimit workload_trace{"a workload trace", 256 * kMiB, 256 * kMiB};
// perfloom plan --prices FILE: a line per GPU.
inline constexpr FileLimit price_table{"a price table", 1 * kMiB};
inline constexpr FileLimit plan_json{"a plan (perfloom plan --json)", 64 * kMiB};
// Read beside a file the user named, not named itself: a symbolic link is not followed.
inline constexpr FileLimit dataset_manifest{"a MANIFEST.tsv", 4 * kMiB, 0, false};
}  // namespace file_limits

// A file that could not be read whole: FILE: REASON.
class FileReadError : public InputError {
 public:
  FileReadError(std::string file, std::string reason) : InputError(std::move(file), "", std::move(reason)) {}
};

// The content of `path` (inflated where `limit.max_inflated` allows gzip). Refuses through `raise`,
// with an empty field, as the input kind's own error (throw_field_error<GpuSpecError>), or as a
// FileReadError where `raise` is null.
std::string read_file_guarded(const std::filesystem::path& path, const FileLimit& limit, FieldErrorFn raise = nullptr);

// Why `path` is not a regular file that could be read ("is a named pipe (FIFO), not a regular
// file", "cannot be read: No such file or directory"), or "" when it is one. Follows a symbolic link where
// `follow_symlinks`. Opens nothing.
std::string not_a_regular_file(const std::filesystem::path& path, bool follow_symlinks = true);

// A byte count as a message says it: "1048576 bytes (1 MiB)", "512 bytes".
std::string byte_count_text(std::uint64_t bytes);

}  // namespace perfloom
