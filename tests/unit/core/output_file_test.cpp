#include "core/output_file.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>

#include "core/error.hpp"
#include "tests/support/temp_dir.hpp"

using namespace autotune;
using testing::TempDir;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string refusal(const fs::path& path, const std::vector<KeptFile>& keep = {},
                    const std::function<void(const fs::path&)>& check = {}) {
  try {
    write_output_file(path, "new", "-o", keep, check);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("write_output_file replaces a file whole, keeps its mode, and follows a link") {
  TempDir dir;
  const fs::path file = dir.write("out.txt", "old");
  ::chmod(file.c_str(), 0600);
  write_output_file(file, "new", "-o");
  CHECK(read(file) == "new");
  struct stat status {};
  REQUIRE(::stat(file.c_str(), &status) == 0);
  CHECK((status.st_mode & 0777) == 0600);

  const fs::path link = dir.path() / "link.txt";
  fs::create_symlink(file, link);
  write_output_file(link, "through the link", "-o");
  CHECK(fs::is_symlink(link));
  CHECK(read(file) == "through the link");

  // A check that throws leaves the old file as it was and no temporary file behind.
  CHECK_THROWS_AS(write_output_file(file, "rejected", "-o", {},
                                    [](const fs::path&) { throw UserError("does not read back"); }),
                  UserError);
  CHECK(read(file) == "through the link");
  CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 2);
}

TEST_CASE("write_output_file refuses the files a command reads, folders and missing folders") {
  TempDir dir;
  const fs::path database = dir.write("runs.db", "committed");
  const std::vector<KeptFile> keep{{database, "the database it reads"},
                                   {database.string() + "-wal", "a file of the database it reads"}};
  CHECK(refusal(database, keep) == "-o " + database.string() + " is the database it reads (" +
                                       database.string() + "); choose another file");
  // By another name: a link to it, or its write-ahead log that is not there yet.
  const fs::path link = dir.path() / "alias.db";
  fs::create_symlink(database, link);
  CHECK(refusal(link, keep).find("is the database it reads") != std::string::npos);
  CHECK(refusal(database.string() + "-wal", keep).find("is a file of the database it reads") !=
        std::string::npos);
  CHECK(read(database) == "committed");
  CHECK(refusal(dir.path()) == "-o " + dir.path().string() + " is a folder, not a file");
  CHECK(refusal(dir.path() / "no" / "out.txt") == "-o " + (dir.path() / "no" / "out.txt").string() +
                                                      ": the folder " + (dir.path() / "no").string() +
                                                      " does not exist");
}

TEST_CASE("write_output_file writes a device in place, and refuses one where the result is checked") {
  write_output_file("/dev/null", "discarded", "-o");
  CHECK(fs::is_character_file("/dev/null"));
  CHECK(refusal("/dev/null", {}, [](const fs::path&) {}) == "-o /dev/null is not a regular file");
  CHECK(fs::is_character_file("/dev/null"));
}
