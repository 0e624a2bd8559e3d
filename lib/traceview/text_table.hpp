// Aligned plain-text tables for the summary and the comparison: text columns
// left-aligned, numeric columns right-aligned, two spaces between columns.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

namespace cct::traceview {

std::string strf(const char* f, ...) __attribute__((format(printf, 1, 2)));

class TextTable {
 public:
  // `right[i]`: column i is right-aligned (numbers).
  TextTable(std::vector<std::string> header, std::vector<bool> right)
      : header_(std::move(header)), right_(std::move(right)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  size_t rows() const { return rows_.size(); }
  // Each line starts with `indent`.
  std::string format(const std::string& indent = "  ") const;

 private:
  std::vector<std::string> header_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace cct::traceview
