// Numbers as text for reports, basis strings and command lines: one place for the printf
// formats the report writers share.
#pragma once

#include <istream>
#include <string>

namespace rg {

// `digits` significant digits, trailing zeros dropped ("%.*g"): 3694.48, 0.03, 1e-05.
std::string format_significant(double value, int digits = 6);
// A fixed number of decimals ("%.*f"): 12.35.
std::string format_fixed(double value, int decimals);

// std::getline without the line's '\r' when it ended in "\r\n": a file saved on Windows
// reads like one saved on Linux.
bool read_line(std::istream& in, std::string& line);

// `text` with its first letter capitalised (ASCII), for a phrase that starts a sentence.
std::string sentence_start(std::string text);

}  // namespace rg
