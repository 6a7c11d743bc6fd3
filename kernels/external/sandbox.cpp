#include "kernels/external/sandbox.hpp"

#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string_view>

#include "core/subprocess.hpp"

namespace autotune::kernels::external {
namespace {

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/bin:/bin";
  while (!dirs.empty()) {
    const auto colon = dirs.find(':');
    const std::filesystem::path candidate = std::filesystem::path(std::string(dirs.substr(0, colon))) / name;
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate.string();
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return "";
}

// The sanitizers reserve terabytes of address space: no address-space limit then.
constexpr bool kSanitized = std::string_view(AUTOTUNE_KERNEL_SANITIZE_FLAGS).size() > 0;

}  // namespace

std::optional<std::string> sandbox_unavailable() {
  static std::once_flag once;
  static std::optional<std::string> reason;
  std::call_once(once, [] {
    if (find_on_path("bwrap").empty()) {
      reason = "bubblewrap (bwrap) is not installed";
      return;
    }
    if (find_on_path("prlimit").empty()) {
      reason = "prlimit (util-linux) is not installed";
      return;
    }
    ProcessOptions options;
    options.timeout = std::chrono::seconds(20);
    const ProcessResult trial = run_process(sandboxed_command({"true"}, {}), options);
    if (!trial.ok()) reason = "bubblewrap cannot make a sandbox here: " + trial.describe_failure();
  });
  return reason;
}

std::vector<std::string> sandboxed_command(const std::vector<std::string>& argv,
                                           const std::vector<std::filesystem::path>& writable,
                                           const SandboxLimits& limits) {
  std::vector<std::string> command = {"bwrap",
                                      "--ro-bind",
                                      "/",
                                      "/",
                                      "--dev",
                                      "/dev",
                                      "--proc",
                                      "/proc",
                                      "--unshare-net",
                                      "--unshare-pid",
                                      "--unshare-ipc",
                                      "--unshare-uts",
                                      "--die-with-parent"};
  for (const auto& dir : writable) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    command.insert(command.end(), {"--bind", dir.string(), dir.string()});
  }
  if (!writable.empty()) command.insert(command.end(), {"--setenv", "TMPDIR", writable.front().string()});
  command.insert(command.end(),
                 {"--", "prlimit", "--cpu=" + std::to_string(static_cast<long long>(limits.cpu_seconds)),
                  "--fsize=" + std::to_string(limits.file_bytes)});
  if (!kSanitized) command.push_back("--as=" + std::to_string(limits.address_bytes));
  command.push_back("--");
  command.insert(command.end(), argv.begin(), argv.end());
  return command;
}

}  // namespace autotune::kernels::external
