// Shortest round-trip formatting of doubles in Python's repr() style.
//
// The reference ISA files were written by Python, so reading and writing them
// byte for byte needs Python's rules: "6.0" for integral values, fixed
// notation for exponents in [-4, 16), otherwise "1e-05" / "1.5e+16".
// The JSON writer uses the same rules so every float we write reads back exactly.
#pragma once

#include <string>

namespace cct {

// Appends repr(value) to out. NaN and infinities give "nan", "inf", "-inf".
void append_python_float(std::string& out, double value);
std::string python_float(double value);

}  // namespace cct
