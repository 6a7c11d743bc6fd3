#pragma once
// Untrusted code (a kernel source an LLM wrote) is compiled and run inside a
// sandbox: Debian's bubblewrap (`bwrap`) with no network, the whole file
// system read-only but for the directories the step must write (the kernel
// cache, a scratch folder for TMPDIR), its own PID, IPC and UTS namespaces,
// killed with autotune, and resource limits (prlimit: CPU time, file size,
// address space). scripts/setup.sh installs bubblewrap; without it untrusted
// sources are refused unless the goal opts in (llm.allow_unsandboxed_sources).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace autotune::kernels::external {

struct SandboxLimits {
  double cpu_seconds = 600;
  std::uint64_t file_bytes = 1ull << 30;      // largest file a step may write
  std::uint64_t address_bytes = 16ull << 30;  // address space (not set in sanitized builds)
};

// Why no sandbox can be made here ("bwrap not found", or its trial run's
// error); nothing when bubblewrap works. Checked once per process.
std::optional<std::string> sandbox_unavailable();

// `argv` wrapped to run in the sandbox, writing only under `writable`
// (created if missing; the first also serves as TMPDIR).
std::vector<std::string> sandboxed_command(const std::vector<std::string>& argv,
                                           const std::vector<std::filesystem::path>& writable,
                                           const SandboxLimits& limits = {});

}  // namespace autotune::kernels::external
