#include "core/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.hpp"

namespace autotune {
namespace fs = std::filesystem;

namespace {

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code error;
  if (fs::exists(a, error) && fs::exists(b, error)) return fs::equivalent(a, b, error);
  return fs::weakly_canonical(a, error) == fs::weakly_canonical(b, error);
}

// Writes all of `text` to the open descriptor `fd`; false with errno set on failure.
bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

void check_output_path(const fs::path& path, const std::string& flag, const std::vector<KeptFile>& keep,
                       bool checked) {
  const std::string named = flag + " " + path.string();
  if (path.empty()) throw UserError(flag + ": the path is empty");
  for (const auto& kept : keep)
    if (same_file(path, kept.path))
      throw UserError(named + " is " + kept.what + " (" + kept.path.string() + "); choose another file");
  std::error_code error;
  const fs::file_status status = fs::status(path, error);  // follows a symbolic link
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    if (fs::is_directory(status)) throw UserError(named + " is a folder, not a file");
    if (checked || (!fs::is_character_file(status) && !fs::is_fifo(status)))
      throw UserError(named + " is not a regular file");
    return;
  }
  const fs::path folder = fs::absolute(path).parent_path();
  if (!fs::is_directory(folder, error))
    throw UserError(named + ": the folder " + folder.string() + " does not exist");
}

void write_output_file(const fs::path& path, std::string_view text, const std::string& flag,
                       const std::vector<KeptFile>& keep, const std::function<void(const fs::path&)>& check) {
  check_output_path(path, flag, keep, bool(check));
  const std::string named = flag + " " + path.string();
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    // A device or a pipe (checked above): written in place.
    std::ofstream out(path, std::ios::binary);
    if (!out || !out.write(text.data(), std::streamsize(text.size())) || !out.flush())
      throw UserError(named + ": cannot be written");
    return;
  }

  // Replace what the link names, not the link.
  fs::path target = path;
  if (std::error_code no_link; fs::is_symlink(fs::symlink_status(path, no_link))) {
    target = fs::weakly_canonical(path, error);  // a dangling link: the file it will name
    if (error) throw UserError(named + ": cannot follow the link (" + error.message() + ")");
  }
  const fs::path folder = fs::absolute(target).parent_path();
  // A file the user may not write is not replaced by a rename in a folder they may.
  if (fs::exists(target, error) && ::access(target.c_str(), W_OK) != 0)
    throw UserError(named + ": cannot be written (" + std::strerror(errno) + ")");

  static std::atomic<unsigned> counter{0};
  fs::path temporary;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    temporary = folder / ("." + target.filename().string() + "." + std::to_string(::getpid()) + "." +
                          std::to_string(counter++) + ".tmp");
    fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);  // the umask applies
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) throw UserError(named + ": cannot be written (" + std::strerror(errno) + ")");
  // An existing file keeps its permissions.
  if (struct stat existing{}; ::stat(target.c_str(), &existing) == 0) ::fchmod(fd, existing.st_mode & 07777);
  const bool written = write_all(fd, text);
  const int write_errno = errno;
  const bool closed = ::close(fd) == 0;
  try {
    if (!written || !closed)
      throw UserError(named + ": cannot be written (" + std::strerror(written ? errno : write_errno) + ")");
    if (check) check(temporary);
    fs::rename(temporary, target, error);
    if (error) throw UserError(named + ": cannot be written (" + error.message() + ")");
  } catch (...) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw;
  }
}

}  // namespace autotune
