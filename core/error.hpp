#pragma once
// The three kinds of failure (STYLE.md):
//  - a bad candidate is data: a result carrying a reason, never an exception;
//  - misuse (bad YAML, unknown kernel, infeasible space, bad flag) is a UserError
//    whose what() is one line naming the file, line and key where known;
//  - a broken invariant is an InternalError raised by AUTOTUNE_CHECK, which
//    stays on in release builds.
#include <source_location>
#include <stdexcept>
#include <string>

namespace autotune {

// A UserError is one line whatever text it quotes: control characters
// (newlines, escapes, NULs from a broken file or a hostile reply) are shown
// as \xHH.
std::string single_line(const std::string& text);

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(single_line(message)) {}
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

[[noreturn]] void fail_internal_check(const char* condition, const std::string& message,
                                      std::source_location where = std::source_location::current());

}  // namespace autotune

#define AUTOTUNE_CHECK(condition, message)                                    \
  do {                                                                        \
    if (!(condition)) ::autotune::fail_internal_check(#condition, (message)); \
  } while (false)
