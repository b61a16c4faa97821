#include "storage/folder_files.h"

#include <algorithm>

#include "model/json_fields.h"

namespace perfloom::storage {

namespace {

namespace fs = std::filesystem;

// True when `inner` (canonical) lies in `root` (canonical).
bool is_inside(const fs::path& inner, const fs::path& root) {
  auto r = root.begin(), i = inner.begin();
  for (; r != root.end(); ++r, ++i)
    if (i == inner.end() || *r != *i) return false;
  return true;
}

}  // namespace

FolderFiles folder_files(const fs::path& dir, bool recursive) {
  FolderFiles out;
  std::error_code ec;
  const fs::path root = fs::canonical(dir, ec);
  if (ec) throw fs::filesystem_error("cannot list the folder", dir, ec);
  auto take = [&](const fs::directory_entry& e) {
    std::error_code fec;
    if (!e.is_regular_file(fec)) return;  // follows a link: a link to a pipe or a device is left out too
    if (e.is_symlink(fec)) {
      const fs::path target = fs::canonical(e.path(), fec);
      if (fec || !is_inside(target, root)) {
        out.links_out.push_back(e.path().lexically_relative(dir).generic_string() + " -> " +
                                (fec ? fs::read_symlink(e.path(), fec).string() : target.string()));
        return;
      }
    }
    out.files.push_back(e.path());
  };
  if (recursive) {
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      take(*it);
  } else {
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) take(*it);
  }
  if (ec) throw fs::filesystem_error("cannot list the folder", dir, ec);
  std::sort(out.files.begin(), out.files.end());
  std::sort(out.links_out.begin(), out.links_out.end());
  return out;
}

std::string links_out_warning(const std::vector<std::string>& links_out) {
  if (links_out.empty()) return {};
  std::string list;
  for (std::size_t i = 0; i < links_out.size() && i < 4; ++i) list += (i ? ", " : "") + text_excerpt(links_out[i]);
  if (links_out.size() > 4) list += ", ...";
  return links_out.size() == 1 ? "1 symbolic link leads out of the folder and was not read (" + list + ")"
                               : std::to_string(links_out.size()) +
                                     " symbolic links lead out of the folder and were not read (" + list + ")";
}

}  // namespace perfloom::storage
