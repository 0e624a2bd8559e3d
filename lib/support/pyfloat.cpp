#include "support/pyfloat.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace cct {

void append_python_float(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "nan";
    return;
  }
  if (std::isinf(value)) {
    out += value < 0 ? "-inf" : "inf";
    return;
  }
  // Shortest digits that round-trip, in scientific form: d.ddddde[+-]XX
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
  bool negative = sci.front() == '-';
  if (negative) sci.remove_prefix(1);
  size_t epos = sci.find('e');
  std::string_view mant = sci.substr(0, epos);
  int exp = std::atoi(std::string(sci.substr(epos + 1)).c_str());
  std::string digits;
  digits.reserve(20);
  for (char c : mant)
    if (c != '.') digits += c;
  // to_chars never gives trailing zeros in shortest form except the lone "0".
  if (negative) out += '-';
  if (exp >= -4 && exp < 16) {
    int ndig = static_cast<int>(digits.size());
    if (exp >= 0) {
      int int_len = exp + 1;
      if (ndig <= int_len) {
        out += digits;
        out.append(static_cast<size_t>(int_len - ndig), '0');
        out += ".0";
      } else {
        out.append(digits, 0, static_cast<size_t>(int_len));
        out += '.';
        out.append(digits, static_cast<size_t>(int_len), std::string::npos);
      }
    } else {
      out += "0.";
      out.append(static_cast<size_t>(-exp - 1), '0');
      out += digits;
    }
  } else {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1, std::string::npos);
    }
    out += 'e';
    out += exp < 0 ? '-' : '+';
    int a = std::abs(exp);
    if (a < 10) out += '0';
    out += std::to_string(a);
  }
}

std::string python_float(double value) {
  std::string s;
  append_python_float(s, value);
  return s;
}

}  // namespace cct
