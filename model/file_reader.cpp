#include "model/file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "model/compressed_text.h"

namespace perfloom {

namespace {

// What a file of this mode is, for "is a named pipe (FIFO), not a regular file".
std::string type_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a plain file";
}

std::string refusal_of(mode_t mode) {
  if (S_ISLNK(mode)) return "is a symbolic link, which is not followed here";
  return "is " + type_of(mode) + ", not a regular file";
}

[[noreturn]] void refuse(FieldErrorFn raise, const std::filesystem::path& path, const std::string& reason) {
  if (raise) raise(path.string(), "", reason);
  throw FileReadError(path.string(), reason);
}

std::string too_large(std::uint64_t size, const FileLimit& limit) {
  return "is " + std::to_string(size) + " bytes; " + std::string(limit.what) + " may have at most " +
         byte_count_text(limit.max_bytes);
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string byte_count_text(std::uint64_t bytes) {
  constexpr std::uint64_t kMiB = 1024 * 1024;
  std::string s = std::to_string(bytes) + " bytes";
  if (bytes >= kMiB && bytes % kMiB == 0) s += " (" + std::to_string(bytes / kMiB) + " MiB)";
  return s;
}

std::string not_a_regular_file(const std::filesystem::path& path, bool follow_symlinks) {
  struct stat st {};
  const int rc = follow_symlinks ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st);
  if (rc != 0) return std::string("cannot be read: ") + std::strerror(errno);
  if (S_ISREG(st.st_mode)) return {};
  return refusal_of(st.st_mode);
}

std::string read_file_guarded(const std::filesystem::path& path, const FileLimit& limit, FieldErrorFn raise) {
  // The type first, without opening: opening some devices has effects of its own.
  if (std::string why = not_a_regular_file(path, limit.follow_symlinks); !why.empty()) refuse(raise, path, why);
  // O_NONBLOCK: a named pipe put in the file's place since the check opens at once instead of
  // waiting for a writer, and the fstat() below refuses it. It changes nothing for a regular file.
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | (limit.follow_symlinks ? 0 : O_NOFOLLOW))};
  if (f.fd < 0) {
    const int err = errno;
    refuse(raise, path,
           err == ELOOP && !limit.follow_symlinks ? refusal_of(S_IFLNK)
                                                  : std::string("cannot be opened: ") + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) refuse(raise, path, std::string("cannot be read: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) refuse(raise, path, refusal_of(st.st_mode));
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > limit.max_bytes) refuse(raise, path, too_large(size, limit));

  // Up to one byte past the limit: a file that grew since fstat(), or one whose size the file
  // system does not report (/proc), is refused as well.
  std::string bytes;
  bytes.resize(static_cast<std::size_t>(size) + 1);
  std::size_t have = 0;
  for (;;) {
    if (have == bytes.size()) {
      if (bytes.size() > limit.max_bytes)
        refuse(raise, path,
               "holds more than " + byte_count_text(limit.max_bytes) + ", the most " + std::string(limit.what) +
                   " may have");
      bytes.resize(std::min<std::uint64_t>(limit.max_bytes + 1, std::max<std::uint64_t>(2 * bytes.size(), 4096)));
    }
    const ssize_t n = ::read(f.fd, bytes.data() + have, bytes.size() - have);
    if (n < 0) {
      if (errno == EINTR) continue;
      refuse(raise, path, std::string("read error: ") + std::strerror(errno));
    }
    if (n == 0) break;
    have += static_cast<std::size_t>(n);
  }
  bytes.resize(have);
  if (have > limit.max_bytes) refuse(raise, path, too_large(have, limit));

  if (limit.max_inflated == 0 || !is_gzip(bytes)) return bytes;
  try {
    return gunzip_if_compressed(bytes, path.string(), static_cast<std::size_t>(limit.max_inflated));
  } catch (const CompressedTextTooLarge&) {
    refuse(raise, path,
           "inflates to more than " + byte_count_text(limit.max_inflated) + ", the most " + std::string(limit.what) +
               " may hold");
  } catch (const CompressedTextError& e) {
    // "FILE: corrupt gzip data (...)": the reason without the file, which the refusal names.
    std::string reason = e.what();
    const std::string prefix = path.string() + ": ";
    if (reason.rfind(prefix, 0) == 0) reason.erase(0, prefix.size());
    refuse(raise, path, reason);
  }
}

}  // namespace perfloom
