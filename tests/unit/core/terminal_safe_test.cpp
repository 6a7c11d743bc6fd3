#include <doctest/doctest.h>

#include "core/log.hpp"

using autotune::log::terminal_safe;

TEST_CASE("terminal_safe shows control characters escaped and keeps text, newlines, tabs and UTF-8") {
  CHECK(terminal_safe("plain text\twith a tab\nand a newline") == "plain text\twith a tab\nand a newline");
  CHECK(terminal_safe("\x1b]0;title\x07\x1b[2J\rover") == "\\x1b]0;title\\x07\\x1b[2J\\x0dover");
  CHECK(terminal_safe(std::string("a\0b\x7f", 4)) == "a\\x00b\\x7f");
  CHECK(terminal_safe("µs — 45%") == "µs — 45%");
  CHECK(terminal_safe("\xff\xfe") == "\xff\xfe");  // not UTF-8, but no control: left to the terminal
}
