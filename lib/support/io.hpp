// File input and output with the conventions every tool follows:
//  - "-" means stdin / stdout;
//  - zstd-compressed input is recognised by its magic number and decompressed;
//  - an output path ending in ".zst" is written zstd-compressed;
//  - an output file appears complete or not at all (temp file, then rename).
#pragma once

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
// `where` names the source in error messages.
std::string zstd_decompress(std::string_view data, const std::string& where);

// The name to show for a path in messages ("<stdin>" for "-").
std::string display_name(const std::string& path);

}  // namespace cct
