#include "traceview/text_table.hpp"

#include <algorithm>

namespace cct::traceview {

std::string strf(const char* f, ...) {
  va_list ap;
  va_start(ap, f);
  char buf[256];
  int n = vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  if (n < 0) return {};
  if (size_t(n) < sizeof buf) return std::string(buf, size_t(n));
  std::string out(size_t(n) + 1, '\0');
  va_start(ap, f);
  vsnprintf(out.data(), out.size(), f, ap);
  va_end(ap);
  out.resize(size_t(n));
  return out;
}

std::string TextTable::format(const std::string& indent) const {
  std::vector<size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], row[c].size());
  };
  measure(header_);
  for (const auto& r : rows_) measure(r);
  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line = indent;
    for (size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < row.size() ? row[c] : std::string();
      bool right = c < right_.size() && right_[c];
      size_t pad = width[c] - std::min(width[c], cell.size());
      if (c) line += "  ";
      if (right) line.append(pad, ' ');
      line += cell;
      if (!right && c + 1 < width.size()) line.append(pad, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  };
  emit(header_);
  for (const auto& r : rows_) emit(r);
  return out;
}

}  // namespace cct::traceview
