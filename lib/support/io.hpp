// File input and output with the conventions every tool follows:
//  - "-" means stdin / stdout;
//  - zstd-compressed input is recognised by its magic number and decompressed;
//  - an output path ending in ".zst" is written zstd-compressed;
//  - an output file appears complete or not at all (temp file, then rename).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cct {

// Reads a whole file ("-" = stdin), decompressing zstd data transparently.
std::string read_input(const std::string& path);

// Writes data to path ("-" = stdout) atomically; compresses when path ends in .zst.
void write_output(const std::string& path, std::string_view data);

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
