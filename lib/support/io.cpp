#include "support/io.hpp"

#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/error.hpp"

namespace cct {
namespace {

std::string read_fd(int fd, const std::string& name) {
  std::string data;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_io_error(name + ": cannot read: " + std::strerror(errno));
    }
    data.append(buf, static_cast<size_t>(n));
  }
  return data;
}

void write_all(int fd, std::string_view data, const std::string& name) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_io_error(name + ": cannot write: " + std::strerror(errno));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

std::string display_name(const std::string& path) { return path == "-" ? "<stdin>" : path; }

bool has_zstd_magic(std::string_view d) {
  return d.size() >= 4 && static_cast<unsigned char>(d[0]) == 0x28 &&
         static_cast<unsigned char>(d[1]) == 0xB5 && static_cast<unsigned char>(d[2]) == 0x2F &&
         static_cast<unsigned char>(d[3]) == 0xFD;
}

bool ends_with_zst(std::string_view path) { return path.size() > 4 && path.substr(path.size() - 4) == ".zst"; }

std::string zstd_compress(std::string_view data, int level) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), level);
  if (ZSTD_isError(n)) throw Error(kExitInternal, std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

namespace {

// Decompresses `data` as a stream. With `out` null it only counts the bytes,
// keeping none; otherwise it appends them to *out. Refuses more than `limit`
// bytes as soon as the count passes it.
uint64_t zstd_stream(std::string_view data, const std::string& where, uint64_t limit, std::string* out) {
  // Streaming: frames need not record their content size.
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!ctx) throw Error(kExitInternal, where + ": out of memory for the zstd decoder");
  std::string buf(ZSTD_DStreamOutSize(), '\0');
  ZSTD_inBuffer in{data.data(), data.size(), 0};
  uint64_t total = 0;
  auto take = [&](size_t n) {
    total += n;
    if (total > limit)
      throw_input_error(where + ": zstd data decompresses to more than " + std::to_string(limit) +
                        " bytes, the limit for compressed input (a decompression bomb?); decompress it first if it is real");
    if (out) out->append(buf.data(), n);
  };
  size_t last = 0;
  while (in.pos < in.size) {
    ZSTD_outBuffer ob{buf.data(), buf.size(), 0};
    last = ZSTD_decompressStream(ctx.get(), &ob, &in);
    if (ZSTD_isError(last)) throw_input_error(where + ": corrupt zstd data: " + ZSTD_getErrorName(last));
    take(ob.pos);
    if (ob.pos == 0 && last != 0 && in.pos == in.size) break;
  }
  // Flush whatever is still buffered in the decoder.
  while (last != 0) {
    ZSTD_outBuffer ob{buf.data(), buf.size(), 0};
    last = ZSTD_decompressStream(ctx.get(), &ob, &in);
    if (ZSTD_isError(last)) throw_input_error(where + ": corrupt zstd data: " + ZSTD_getErrorName(last));
    take(ob.pos);
    if (ob.pos == 0) break;
  }
  if (last != 0) throw_input_error(where + ": truncated zstd data");
  return total;
}

}  // namespace

std::string zstd_decompress(std::string_view data, const std::string& where, uint64_t limit) {
  // A frame that declares a size beyond the limit is refused before any work.
  unsigned long long declared = ZSTD_getFrameContentSize(data.data(), data.size());
  if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != ZSTD_CONTENTSIZE_ERROR && declared > limit)
    throw_input_error(where + ": zstd data decompresses to " + std::to_string(declared) + " bytes, more than " +
                      std::to_string(limit) +
                      ", the limit for compressed input (a decompression bomb?); decompress it first if it is real");
  // Two passes: the first counts the bytes and keeps none, so a bomb is
  // refused without taking its memory; the second fills a string of exactly
  // that size (no doubling growth: peak memory is the output once).
  const uint64_t size = zstd_stream(data, where, limit, nullptr);
  std::string out;
  out.reserve(size_t(size));
  zstd_stream(data, where, limit, &out);
  return out;
}

std::string read_input(const std::string& path) {
  std::string data;
  const std::string name = display_name(path);
  if (path == "-") {
    data = read_fd(STDIN_FILENO, name);
  } else {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw_io_error(name + ": is a directory");
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw_io_error(name + ": cannot open: " + std::strerror(errno));
    try {
      data = read_fd(fd, name);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
  }
  if (has_zstd_magic(data)) return zstd_decompress(data, name);
  return data;
}

namespace {

// The permissions a new file gets from open(..., 0666): 0666 less the umask.
// Read from /proc (umask() cannot be read without setting it, which would
// race with threads creating files); the umask() round trip is the fallback.
mode_t new_file_mode() {
  if (std::FILE* f = std::fopen("/proc/self/status", "re")) {
    char line[256];
    unsigned mask = 0;
    bool found = false;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "Umask: %o", &mask) == 1) {
        found = true;
        break;
      }
    std::fclose(f);
    if (found) return mode_t(0666) & ~mode_t(mask);
  }
  mode_t mask = ::umask(022);
  ::umask(mask);
  return mode_t(0666) & ~mask;
}

bool is_stream(const std::string& path) { return path == "-" || path.empty(); }

}  // namespace

void OutputSet::add(std::string path, std::string data) {
  if (ends_with_zst(path)) data = zstd_compress(data);
  Entry e;
  e.path = std::move(path);
  e.owned = std::move(data);
  entries_.push_back(std::move(e));
}

void OutputSet::add_view(std::string path, std::string_view data) {
  Entry e;
  if (ends_with_zst(path)) {  // the compressed copy is ours
    e.owned = zstd_compress(data);
    e.path = std::move(path);
    entries_.push_back(std::move(e));
    return;
  }
  e.path = std::move(path);
  e.view = data;
  e.is_view = true;
  entries_.push_back(std::move(e));
}

void OutputSet::discard() noexcept {
  for (Entry& e : entries_)
    if (!e.tmp.empty()) {
      std::remove(e.tmp.c_str());
      e.tmp.clear();
    }
}

OutputSet::~OutputSet() { discard(); }

void OutputSet::commit() {
  namespace fs = std::filesystem;
  try {
    // 1. Every regular file to a complete temporary beside it (same
    //    filesystem, so the rename is atomic).
    std::vector<Entry*> in_place;
    const mode_t mode = new_file_mode();
    for (Entry& e : entries_) {
      if (is_stream(e.path)) {
        in_place.push_back(&e);
        continue;
      }
      // Devices, pipes and sockets (-o /dev/null, /dev/stderr, a FIFO) are
      // written in place: renaming a temporary over them would replace them.
      struct stat st;
      if (::stat(e.path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode)) throw_io_error(e.path + ": is a directory");
        in_place.push_back(&e);
        continue;
      }
      fs::path target(e.path);
      fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
      std::string tmpl = (dir / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
      int fd = ::mkstemp(tmpl.data());
      if (fd < 0) throw_io_error(e.path + ": cannot create temporary file in " + dir.string() + ": " + std::strerror(errno));
      e.tmp = tmpl;
      try {
        write_all(fd, e.data(), e.path);
      } catch (...) {
        ::close(fd);
        throw;
      }
      // mkstemp makes 0600; a new output gets what the umask allows, like `>`.
      if (::fchmod(fd, mode) != 0) { /* keep 0600 if chmod is refused */ }
      if (::close(fd) != 0) throw_io_error(e.path + ": cannot write: " + std::strerror(errno));
    }
    // 2. Streams and devices, which cannot be taken back, once every file is
    //    complete.
    for (Entry* e : in_place) {
      if (is_stream(e->path)) {
        write_all(STDOUT_FILENO, e->data(), "<stdout>");
        continue;
      }
      int fd = ::open(e->path.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) throw_io_error(e->path + ": cannot open: " + std::strerror(errno));
      try {
        write_all(fd, e->data(), e->path);
      } catch (...) {
        ::close(fd);
        throw;
      }
      if (::close(fd) != 0) throw_io_error(e->path + ": cannot write: " + std::strerror(errno));
    }
    // 3. The renames.
    for (Entry& e : entries_) {
      if (e.tmp.empty()) continue;
      if (std::rename(e.tmp.c_str(), e.path.c_str()) != 0)
        throw_io_error(e.path + ": cannot rename temporary file: " + std::strerror(errno));
      e.tmp.clear();
    }
  } catch (...) {
    discard();
    throw;
  }
  entries_.clear();
}

void write_output(const std::string& path, std::string_view data) {
  OutputSet out;
  out.add_view(path, data);
  out.commit();
}

}  // namespace cct
