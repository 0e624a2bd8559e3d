// File input and output with the conventions every tool follows:
//  - "-" means stdin / stdout;
//  - zstd-compressed input is recognised by its magic number and decompressed;
//  - an output path ending in ".zst" is written zstd-compressed;
//  - an output file appears complete or not at all (temp file, then rename).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cct {

// Reads a whole file ("-" = stdin), decompressing zstd data transparently.
std::string read_input(const std::string& path);

// Writes data to path ("-" = stdout) atomically; compresses when path ends in .zst.
// A new file's permissions are 0666 less the umask. Until the rename the data
// is in a hidden temporary beside the target, ".NAME.tmp.XXXXXX"; a process
// killed with SIGKILL in between leaves it behind (safe to delete once no tool
// is writing NAME).
void write_output(const std::string& path, std::string_view data);

// Several outputs of one run (a mapping and its timeline, a FIR and its .npy
// files) written as one unit: every regular file first goes to a complete
// temporary beside it; then streams and devices (stdout, /dev/null, a FIFO)
// are written; the renames come last. A failure before the renames leaves no
// new file (what was already written to a stream cannot be taken back).
class OutputSet {
 public:
  OutputSet() = default;
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;
  ~OutputSet();  // removes the temporaries of an uncommitted set
  // Queues `data` for `path` ("-" = stdout); compressed when path ends in .zst.
  void add(std::string path, std::string data);
  // The same without a copy: `data` must outlive commit().
  void add_view(std::string path, std::string_view data);
  void commit();

 private:
  struct Entry {
    std::string path, owned, tmp;
    std::string_view view;  // the data when not owned
    bool is_view = false;
    std::string_view data() const { return is_view ? view : std::string_view(owned); }
  };
  void discard() noexcept;
  std::vector<Entry> entries_;
};

bool has_zstd_magic(std::string_view data);
bool ends_with_zst(std::string_view path);
std::string zstd_compress(std::string_view data, int level = 3);
// zstd input decompressing to more than this is refused (an input error
// naming the file), before its memory is taken: 1 GiB, about twice the
// largest real input (a 528 MiB float32 VGG-16 ONNX file; our largest
// outputs are ~60 MB Scheduler IR and ~100 MB weight .npy files). Larger
// inputs can be read uncompressed.
inline constexpr uint64_t kMaxDecompressedBytes = uint64_t(1) << 30;

// `where` names the source in error messages; more than `limit` bytes of
// output is an input error.
std::string zstd_decompress(std::string_view data, const std::string& where, uint64_t limit = kMaxDecompressedBytes);

// The name to show for a path in messages ("<stdin>" for "-").
std::string display_name(const std::string& path);

}  // namespace cct
