#pragma once
// A scratch directory for a test, removed with everything in it when the
// object goes out of scope, plus writing small files (scripts) into it.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace autotune::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "autotune-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a temporary directory");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Writes `content` to `name` inside the directory; `executable` adds u+x.
  std::filesystem::path write(const std::string& name, const std::string& content,
                              bool executable = false) const {
    const auto file = path_ / name;
    std::filesystem::create_directories(file.parent_path());
    {
      std::ofstream out(file, std::ios::binary | std::ios::trunc);
      out << content;
    }
    if (executable) {
      std::filesystem::permissions(file,
                                   std::filesystem::perms::owner_exec | std::filesystem::perms::group_exec,
                                   std::filesystem::perm_options::add);
    }
    return file;
  }

  // An executable Python script (shebang `#!/usr/bin/env python3`).
  std::filesystem::path python_script(const std::string& name, const std::string& body) const {
    return write(name, "#!/usr/bin/env python3\n" + body, true);
  }

 private:
  std::filesystem::path path_;
};

}  // namespace autotune::testing
