#pragma once
// SHA-256 of what is imported (OpenSSL's libcrypto), to recognise a file imported before.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace perfloom::storage {

// Lower-case hex SHA-256 of the file's bytes as stored. Throws ImportError naming the file.
std::string sha256_file(const std::filesystem::path& path);
// Of a folder: every regular file under it, in path order, as (relative path, size, bytes).
std::string sha256_tree(const std::filesystem::path& dir);
// Of chosen files under `root`, hashed like sha256_tree (sorted by path, each as relative path,
// size, bytes), so the same files in the same places give the same hash.
std::string sha256_files(const std::filesystem::path& root, std::vector<std::filesystem::path> files);
// Of bytes in memory.
std::string sha256_bytes(std::string_view bytes);
// sha256_tree for a folder, sha256_file otherwise.
std::string content_hash(const std::filesystem::path& path);
// The SHA-256 of what an importer reads where that differs from the bytes as stored: of the
// file inflated when it is gzip (so t.json, t.json.gz and t.json.gz recompressed at another level
// agree), and, when `files` (chosen files under the folder `path`, as for sha256_files) holds a
// gzip file, of the files hashed like sha256_files with each gzip one inflated and named without
// its ".gz" suffix. Nothing gzip: std::nullopt (the content is the bytes as stored, whose hash
// sha256_file / sha256_files give). Gzip data that does not inflate is hashed as stored
// (std::nullopt): the importer reports where it breaks. `poll` is called for each block read (a
// cancel check may throw from it).
std::optional<std::string> inflated_content_hash(const std::filesystem::path& path,
                                                 const std::vector<std::filesystem::path>& files,
                                                 const std::function<void()>& poll = {});
// Bytes of a file, or of all regular files under a folder.
uint64_t content_bytes(const std::filesystem::path& path);

}  // namespace perfloom::storage
