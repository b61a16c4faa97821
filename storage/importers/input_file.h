#pragma once
// A file read as a stream of bytes, plain or gzip (decided by the gzip magic bytes, not the name).
// gzip is inflated on a second thread, so that parsing and inflating share the two cores of a
// small machine. Memory is a few fixed buffers, whatever the size of the file.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace perfloom::storage {

class InputFile {
 public:
  // Throws ImportError naming the file when it cannot be opened or is a folder.
  explicit InputFile(const std::filesystem::path& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // Up to `cap` bytes of content into `buf`; 0 at the end. Throws ImportError for corrupt or
  // truncated gzip data, naming the compressed byte offset.
  std::size_t read(char* buf, std::size_t cap);

  bool gzip() const { return gzip_; }
  // Bytes of the file as stored that have been consumed so far (for progress).
  uint64_t raw_offset() const;
  uint64_t file_size() const { return file_size_; }
  const std::string& label() const { return label_; }

  // The first bytes of a file's content (inflated if gzip), for sniffing. Never throws for
  // corrupt data: it returns what could be read.
  static std::string head(const std::filesystem::path& path, std::size_t max_bytes, bool* gzip = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string label_;
  bool gzip_ = false;
  uint64_t file_size_ = 0;
};

}  // namespace perfloom::storage
