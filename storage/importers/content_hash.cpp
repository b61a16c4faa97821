#include "storage/importers/content_hash.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "storage/folder_files.h"
#include "storage/importers/importer.h"
#include "storage/importers/input_file.h"

namespace perfloom::storage {

namespace {

struct Digest {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  Digest() {
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1) {
      EVP_MD_CTX_free(ctx);  // the destructor does not run for a constructor that throws
      throw std::runtime_error("OpenSSL SHA-256 unavailable");
    }
  }
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;
  ~Digest() { EVP_MD_CTX_free(ctx); }
  void update(const void* p, std::size_t n) { EVP_DigestUpdate(ctx, p, n); }
  std::string hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx, md, &n);
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < n; ++i) {
      out.push_back(digits[md[i] >> 4]);
      out.push_back(digits[md[i] & 15]);
    }
    return out;
  }
};

void hash_file_into(Digest& d, const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ImportError(path.string(), "", std::string("cannot be opened: ") + std::strerror(errno));
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } close_fd{fd};
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  std::vector<char> buf(1 << 20);
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw ImportError(path.string(), "", std::string("read error: ") + std::strerror(errno));
    }
    if (n == 0) break;
    d.update(buf.data(), static_cast<std::size_t>(n));
  }
}

// The files an import of the folder reads: links out of it are not (storage/folder_files.h).
std::vector<std::filesystem::path> tree_files(const std::filesystem::path& dir) {
  try {
    return folder_files(dir, true).files;
  } catch (const std::filesystem::filesystem_error& e) {
    throw ImportError(dir.string(), "", "cannot list the folder: " + e.code().message());
  }
}

bool is_gzip_file(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  unsigned char magic[2] = {0, 0};
  const ssize_t n = ::pread(fd, magic, 2, 0);
  ::close(fd);
  return n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

// The content of a file as InputFile reads it (inflated when gzip) into `d` (when not null).
// Returns its bytes.
uint64_t hash_content_into(Digest* d, const std::filesystem::path& path, const std::function<void()>& poll) {
  InputFile in(path);
  std::vector<char> buf(1 << 20);
  uint64_t total = 0;
  for (;;) {
    if (poll) poll();
    const std::size_t n = in.read(buf.data(), buf.size());
    if (n == 0) break;
    if (d) d->update(buf.data(), n);
    total += n;
  }
  return total;
}

}  // namespace

std::optional<std::string> inflated_content_hash(const std::filesystem::path& path,
                                                 const std::vector<std::filesystem::path>& chosen,
                                                 const std::function<void()>& poll) {
  std::error_code ec;
  const bool folder = std::filesystem::is_directory(path, ec);
  std::vector<std::filesystem::path> files = folder ? (chosen.empty() ? tree_files(path) : chosen) : chosen;
  if (!folder && files.empty()) files.push_back(path);
  std::sort(files.begin(), files.end());
  bool any_gzip = false;
  for (const auto& f : files) any_gzip = any_gzip || is_gzip_file(f);
  if (!any_gzip) return std::nullopt;
  try {
    Digest d;
    if (!folder && files.size() == 1 && files[0] == path) {
      hash_content_into(&d, path, poll);
      return d.hex();
    }
    for (const auto& f : files) {
      std::string rel = std::filesystem::relative(f, path).generic_string();
      uint64_t bytes = 0;
      if (is_gzip_file(f)) {
        if (rel.size() > 3 && rel.compare(rel.size() - 3, 3, ".gz") == 0) rel.resize(rel.size() - 3);
        bytes = hash_content_into(nullptr, f, poll);  // the size goes first, as in sha256_files
      } else {
        bytes = std::filesystem::file_size(f, ec);
        if (ec) throw ImportError(f.string(), "", "cannot be read: " + ec.message());
      }
      const std::string header = rel + '\0' + std::to_string(bytes) + '\0';
      d.update(header.data(), header.size());
      hash_content_into(&d, f, poll);
    }
    return d.hex();
  } catch (const ImportCancelled&) {
    throw;
  } catch (const ImportError&) {
    return std::nullopt;  // does not inflate (or went away): the import says where and why
  }
}

std::string sha256_file(const std::filesystem::path& path) {
  Digest d;
  hash_file_into(d, path);
  return d.hex();
}

std::string sha256_files(const std::filesystem::path& root, std::vector<std::filesystem::path> files) {
  std::sort(files.begin(), files.end());
  Digest d;
  for (const auto& f : files) {
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(f, ec);
    if (ec) throw ImportError(f.string(), "", "cannot be read: " + ec.message());
    std::string rel = std::filesystem::relative(f, root).generic_string();
    std::string header = rel + '\0' + std::to_string(bytes) + '\0';
    d.update(header.data(), header.size());
    hash_file_into(d, f);
  }
  return d.hex();
}

std::string sha256_tree(const std::filesystem::path& dir) { return sha256_files(dir, tree_files(dir)); }

std::string sha256_bytes(std::string_view bytes) {
  Digest d;
  d.update(bytes.data(), bytes.size());
  return d.hex();
}

std::string content_hash(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) ? sha256_tree(path) : sha256_file(path);
}

uint64_t content_bytes(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    auto n = std::filesystem::file_size(path, ec);
    return ec ? 0 : n;
  }
  uint64_t total = 0;
  for (const auto& f : tree_files(path)) total += std::filesystem::file_size(f, ec);
  return total;
}

}  // namespace perfloom::storage
