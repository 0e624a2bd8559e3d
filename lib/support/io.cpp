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

void write_output(const std::string& path, std::string_view data) {
  std::string compressed;
  if (ends_with_zst(path)) {
    compressed = zstd_compress(data);
    data = compressed;
  }
  if (path == "-" || path.empty()) {
    write_all(STDOUT_FILENO, data, "<stdout>");
    return;
  }
  // Devices, pipes and sockets (e.g. -o /dev/null, -o /dev/stderr, a FIFO) are
  // written in place: renaming a temporary file over them would replace them.
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) throw_io_error(path + ": is a directory");
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw_io_error(path + ": cannot open: " + std::strerror(errno));
    try {
      write_all(fd, data, path);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    return;
  }
  // Temp file beside the target so the rename stays on one filesystem.
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl = (dir / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw_io_error(path + ": cannot create temporary file in " + dir.string() + ": " + std::strerror(errno));
  try {
    write_all(fd, data, path);
    if (::fchmod(fd, 0644) != 0) { /* keep mkstemp's 0600 if chmod is refused */ }
    if (::close(fd) != 0) {
      fd = -1;
      throw_io_error(path + ": cannot write: " + std::strerror(errno));
    }
    fd = -1;
    if (std::rename(tmpl.c_str(), path.c_str()) != 0)
      throw_io_error(path + ": cannot rename temporary file: " + std::strerror(errno));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    std::remove(tmpl.c_str());
    throw;
  }
}

}  // namespace cct
