#pragma once
// Untrusted code (a kernel source an LLM wrote) is compiled and run inside a
// sandbox: Debian's bubblewrap (`bwrap`) with
//  - no network, and its own user, PID, IPC and UTS namespaces and session
//    (so no controlling terminal to push keystrokes into);
//  - every capability dropped, even when autotune runs as root;
//  - a seccomp filter refusing (EPERM) mount, ptrace, keyctl, bpf, unshare,
//    setns, kernel modules, perf events, namespace-making clones and the
//    TIOCSTI/TIOCLINUX ioctls (x86-64 and aarch64; elsewhere none);
//  - a clean environment: PATH, the locale and the sanitizers' options only,
//    so API keys and database passwords never reach it; text that comes back
//    has the values of secret variables redacted as well (core/secrets.hpp);
//  - the whole file system read-only but for the directories the step must
//    write and a private scratch folder (mkdtemp, its HOME and TMPDIR,
//    removed afterwards);
//  - limits on wall time (the caller's timeout), CPU time, file size, address
//    space and processes (a pids cgroup where one can be made, as root;
//    otherwise RLIMIT_NPROC, which the kernel does not apply to root);
//  - killed with autotune.
// It does not hide files the user can read (only writes are confined).
// scripts/setup.sh installs bubblewrap; without it untrusted sources are
// refused unless the goal opts in (llm.allow_unsandboxed_sources).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/subprocess.hpp"

namespace autotune::kernels::external {

struct SandboxLimits {
  double cpu_seconds = 600;
  std::uint64_t file_bytes = 1ull << 30;     // largest file a step may write
  std::uint64_t address_bytes = 4ull << 30;  // address space (not set in sanitized builds)
  unsigned processes = 64;                   // processes and threads at once
};

// Why no sandbox can be made here ("bwrap not found", or its trial run's
// error); nothing when bubblewrap works. Checked once per process.
std::optional<std::string> sandbox_unavailable();

// Runs `argv` in a sandbox made for this call, writing only under `writable`
// (created if missing) and its own scratch folder, with `options` (its
// timeout bounds the wall time). The result's stdout and stderr have secret
// values redacted.
ProcessResult run_sandboxed(const std::vector<std::string>& argv,
                            const std::vector<std::filesystem::path>& writable, const SandboxLimits& limits,
                            ProcessOptions options);

}  // namespace autotune::kernels::external
