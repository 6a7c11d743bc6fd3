#pragma once
// What every fuzz target shares (docs/fuzzing.md). A target feeds its input to
// one of autotune's readers of untrusted text; the documented outcome of bad
// input is a UserError (one line), so that is caught, and anything else (a
// crash, another exception, a sanitizer report, a hang) is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace autotune::fuzz {

inline std::string text_of(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Runs `read`, accepting a UserError as the answer to bad input.
template <class Read>
void expect_user_errors_only(Read&& read) {
  try {
    read();
  } catch (const UserError& error) {
    const std::string_view message = error.what();
    // A UserError is one line.
    if (message.find('\n') != std::string_view::npos) {
      std::fprintf(stderr, "a UserError of several lines: %s\n", error.what());
      std::abort();
    }
  }
}

// A file holding `text`, for readers that take a path; one per process, rewritten per input.
inline std::filesystem::path file_with(const std::string& text, const std::string& name) {
  const auto folder =
      std::filesystem::temp_directory_path() / ("autotune-fuzz-" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  const auto path = folder / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

}  // namespace autotune::fuzz
