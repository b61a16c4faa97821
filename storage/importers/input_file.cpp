#include "storage/importers/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "storage/importers/importer.h"

namespace perfloom::storage {

namespace {

constexpr std::size_t kRawChunk = 256 * 1024;
constexpr std::size_t kBlock = 1024 * 1024;
constexpr std::size_t kMaxQueued = 4;

std::size_t read_some(int fd, char* buf, std::size_t cap, const std::string& label) {
  for (;;) {
    ssize_t n = ::read(fd, buf, cap);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EINTR) continue;
    throw ImportError(label, "", std::string("read error: ") + std::strerror(errno));
  }
}

bool is_gzip_magic(const unsigned char* p, std::size_t n) { return n >= 2 && p[0] == 0x1f && p[1] == 0x8b; }

// Inflates a gzip file (one or more members) from `fd`, calling `out(data, n)` for each piece.
// `stop()` ends it early. Throws ImportError for corrupt or truncated data.
template <class Out, class Stop>
void inflate_file(int fd, const std::string& label, std::atomic<uint64_t>& raw_done, Out&& out, Stop&& stop) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) throw ImportError(label, "", "zlib could not be initialised");
  struct Guard {
    z_stream* z;
    ~Guard() { inflateEnd(z); }
  } guard{&zs};
  std::vector<unsigned char> in(kRawChunk);
  std::vector<unsigned char> obuf(kBlock);
  uint64_t fed = 0;  // raw bytes given to zlib so far
  bool eof = false, in_member = true;
  for (;;) {
    if (stop()) return;
    if (zs.avail_in == 0 && !eof) {
      std::size_t n = read_some(fd, reinterpret_cast<char*>(in.data()), in.size(), label);
      if (n == 0) {
        eof = true;
      } else {
        fed += n;
        zs.next_in = in.data();
        zs.avail_in = static_cast<uInt>(n);
      }
      raw_done.store(fed - zs.avail_in, std::memory_order_relaxed);
    }
    if (zs.avail_in == 0 && eof) {
      if (in_member)
        throw ImportError(label, "compressed byte " + std::to_string(fed),
                          "truncated gzip file: the compressed stream ends before its end marker");
      return;
    }
    if (!in_member) {
      // Another gzip member may follow (concatenated .gz files); anything else is an error.
      if (zs.avail_in < 2 && !eof) {
        // Too little to tell: pull more input next round, keeping what we have.
        std::memmove(in.data(), zs.next_in, zs.avail_in);
        std::size_t keep = zs.avail_in;
        std::size_t n = read_some(fd, reinterpret_cast<char*>(in.data()) + keep, in.size() - keep, label);
        if (n == 0) eof = true;
        fed += n;
        zs.next_in = in.data();
        zs.avail_in = static_cast<uInt>(keep + n);
        if (zs.avail_in < 2) {
          if (zs.avail_in == 0) return;
          throw ImportError(label, "compressed byte " + std::to_string(fed - zs.avail_in),
                            "stray bytes after the end of the gzip stream");
        }
      }
      if (!is_gzip_magic(zs.next_in, zs.avail_in))
        throw ImportError(label, "compressed byte " + std::to_string(fed - zs.avail_in),
                          "stray bytes after the end of the gzip stream");
      inflateReset(&zs);
      in_member = true;
    }
    zs.next_out = obuf.data();
    zs.avail_out = static_cast<uInt>(obuf.size());
    int rc = inflate(&zs, Z_NO_FLUSH);
    std::size_t produced = obuf.size() - zs.avail_out;
    if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT || rc == Z_MEM_ERROR || rc == Z_STREAM_ERROR)
      throw ImportError(label, "compressed byte " + std::to_string(fed - zs.avail_in),
                        std::string("corrupt gzip data (") + (zs.msg ? zs.msg : "zlib error") + ")");
    if (produced) out(reinterpret_cast<const char*>(obuf.data()), produced);
    if (rc == Z_STREAM_END) in_member = false;
    raw_done.store(fed - zs.avail_in, std::memory_order_relaxed);
  }
}

}  // namespace

struct InputFile::Impl {
  int fd = -1;
  bool gzip = false;
  std::string label;
  std::atomic<uint64_t> raw_done{0};

  // gzip: a producer thread and a queue of inflated blocks.
  std::thread worker;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::vector<char>> full;
  std::vector<std::vector<char>> free_blocks;
  bool done = false, stop = false;
  std::exception_ptr error;
  std::vector<char> current;
  std::size_t current_pos = 0;

  ~Impl() {
    if (worker.joinable()) {
      {
        std::lock_guard<std::mutex> lock(mu);
        stop = true;
      }
      cv.notify_all();
      worker.join();
    }
    if (fd >= 0) ::close(fd);
  }

  void start() {
    worker = std::thread([this] {
      std::vector<char> block;
      block.reserve(kBlock);
      auto push = [&](bool final_block) {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return stop || full.size() < kMaxQueued; });
        if (stop) return;
        if (!block.empty()) full.push_back(std::move(block));
        if (!free_blocks.empty()) {
          block = std::move(free_blocks.back());
          free_blocks.pop_back();
        } else {
          block = std::vector<char>();
        }
        block.clear();
        block.reserve(kBlock);
        if (final_block) done = true;
        cv.notify_all();
      };
      try {
        inflate_file(
            fd, label, raw_done,
            [&](const char* p, std::size_t n) {
              while (n) {
                std::size_t take = std::min(n, kBlock - block.size());
                block.insert(block.end(), p, p + take);
                p += take;
                n -= take;
                if (block.size() == kBlock) push(false);
              }
            },
            [&] {
              std::lock_guard<std::mutex> lock(mu);
              return stop;
            });
        push(true);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!block.empty()) full.push_back(std::move(block));
        error = std::current_exception();
        done = true;
        cv.notify_all();
      }
    });
  }

  std::size_t read_gzip(char* buf, std::size_t cap) {
    std::size_t total = 0;
    while (total < cap) {
      if (current_pos < current.size()) {
        std::size_t take = std::min(cap - total, current.size() - current_pos);
        std::memcpy(buf + total, current.data() + current_pos, take);
        current_pos += take;
        total += take;
        continue;
      }
      std::unique_lock<std::mutex> lock(mu);
      if (current.capacity()) {
        free_blocks.push_back(std::move(current));
        current = std::vector<char>();
      }
      current_pos = 0;
      if (total > 0 && full.empty()) break;  // hand out what we have rather than wait
      cv.wait(lock, [&] { return !full.empty() || done; });
      if (full.empty()) {
        if (error) std::rethrow_exception(error);
        break;
      }
      current = std::move(full.front());
      full.pop_front();
      cv.notify_all();
    }
    return total;
  }
};

InputFile::InputFile(const std::filesystem::path& path) : impl_(std::make_unique<Impl>()), label_(path.string()) {
  impl_->label = label_;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw ImportError(label_, "", "is a folder, not a file");
  impl_->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (impl_->fd < 0) throw ImportError(label_, "", std::string("cannot be opened: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(impl_->fd, &st) == 0) file_size_ = static_cast<uint64_t>(st.st_size);
  unsigned char magic[2] = {0, 0};
  ssize_t n = ::pread(impl_->fd, magic, 2, 0);
  gzip_ = n == 2 && is_gzip_magic(magic, 2);
  impl_->gzip = gzip_;
  ::posix_fadvise(impl_->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  if (gzip_) impl_->start();
}

InputFile::~InputFile() = default;

std::size_t InputFile::read(char* buf, std::size_t cap) {
  if (gzip_) return impl_->read_gzip(buf, cap);
  std::size_t n = read_some(impl_->fd, buf, cap, label_);
  impl_->raw_done.fetch_add(n, std::memory_order_relaxed);
  return n;
}

uint64_t InputFile::raw_offset() const { return impl_->raw_done.load(std::memory_order_relaxed); }

std::string InputFile::head(const std::filesystem::path& path, std::size_t max_bytes, bool* gzip) {
  std::string out;
  if (gzip) *gzip = false;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } close_fd{fd};
  std::string raw(max_bytes, '\0');
  std::size_t n = 0;
  try {
    for (;;) {
      std::size_t got = read_some(fd, raw.data() + n, raw.size() - n, path.string());
      if (got == 0) break;
      n += got;
      if (n == raw.size()) break;
    }
  } catch (...) {}
  raw.resize(n);
  if (!is_gzip_magic(reinterpret_cast<const unsigned char*>(raw.data()), raw.size())) return raw;
  if (gzip) *gzip = true;
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return out;
  out.resize(max_bytes);
  zs.next_in = reinterpret_cast<unsigned char*>(raw.data());
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = reinterpret_cast<unsigned char*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  while (zs.avail_out > 0 && zs.avail_in > 0) {
    int rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK) break;
  }
  out.resize(out.size() - zs.avail_out);
  inflateEnd(&zs);
  return out;
}

}  // namespace perfloom::storage
