#pragma once
// Writing a file a user named with -o: whole or not at all, never over a file
// the command reads.
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace autotune {

// A file an output must not replace, and what it is to the command ("the
// database it reads", "the measurements file").
struct KeptFile {
  std::filesystem::path path;
  std::string what;
};

// Refuses (UserError) an output path that write_output_file would refuse, so
// a command can say so before it starts its work. `checked`: the write will
// have a check, so a device or a pipe is refused too.
void check_output_path(const std::filesystem::path& path, const std::string& flag,
                       const std::vector<KeptFile>& keep = {}, bool checked = false);

// Writes `text` to `path`, which the user gave as `flag` (for messages):
//  - a path that is, or links to, one of `keep` is refused before anything
//    is written (UserError naming it);
//  - a regular file, or a new one, is written to a temporary file in the
//    same folder and renamed over it, so a failure leaves the old file as it
//    was; a symbolic link is followed and stays a link;
//  - a character device or a pipe (/dev/null, /dev/stdout) is written in
//    place; anything else that exists (a folder, a socket) is refused.
// `check`, if given, reads the finished temporary file before the rename and
// throws to abandon the write.
void write_output_file(const std::filesystem::path& path, std::string_view text, const std::string& flag,
                       const std::vector<KeptFile>& keep = {},
                       const std::function<void(const std::filesystem::path&)>& check = {});

}  // namespace autotune
