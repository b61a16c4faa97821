#pragma once
// The files of a folder an import or a training run reads. A symbolic link among them is read only
// where it leads to a regular file inside the folder: one that leads out of it would copy the bytes
// of any file the user can read into the database, and the user named the folder, not that file.
#include <filesystem>
#include <string>
#include <vector>

namespace perfloom::storage {

struct FolderFiles {
  std::vector<std::filesystem::path> files;  // regular files (and links to regular files inside), sorted
  // Links to regular files outside the folder, which are not read: "NAME -> TARGET", sorted.
  std::vector<std::string> links_out;
};

// The regular files directly in `dir`, or under it where `recursive` (a link to a folder is not
// entered, as std::filesystem does by default). Named pipes, devices and sockets are left out.
// Throws std::filesystem::filesystem_error when `dir` cannot be listed.
FolderFiles folder_files(const std::filesystem::path& dir, bool recursive);

// "3 symbolic links lead out of the folder and were not read (a.csv -> /etc/passwd, ...)", or ""
// when there are none.
std::string links_out_warning(const std::vector<std::string>& links_out);

}  // namespace perfloom::storage
