#include "kernels/external/sandbox.hpp"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string_view>
#include <thread>

#include "core/secrets.hpp"

namespace autotune::kernels::external {
namespace fs = std::filesystem;
namespace {

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/bin:/bin";
  while (!dirs.empty()) {
    const auto colon = dirs.find(':');
    const fs::path candidate = fs::path(std::string(dirs.substr(0, colon))) / name;
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate.string();
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return "";
}

// The sanitizers reserve terabytes of address space: no address-space limit then.
constexpr bool kSanitized = std::string_view(AUTOTUNE_KERNEL_SANITIZE_FLAGS).size() > 0;

// The seccomp program bubblewrap installs before it starts the command: the
// system calls that reach beyond the sandbox (or make a new one to escape
// through) fail with EPERM; clone3 fails with ENOSYS so that the C library
// falls back to clone, whose namespace flags can be checked. Empty on an
// architecture this does not know.
std::vector<sock_filter> seccomp_program() {
#if defined(__x86_64__)
  constexpr std::uint32_t arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr std::uint32_t arch = AUDIT_ARCH_AARCH64;
#else
  return {};
#endif
  constexpr std::uint32_t allow = SECCOMP_RET_ALLOW;
  constexpr std::uint32_t deny = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
  constexpr std::uint32_t no_such_call = SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA);
  std::vector<sock_filter> program;
  auto load = [&](std::uint32_t offset) { program.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset)); };
  auto ret = [&](std::uint32_t action) { program.push_back(BPF_STMT(BPF_RET | BPF_K, action)); };
  // "if A == value then <the next `length` instructions, ending in a return>"
  auto when = [&](std::uint32_t value, std::size_t length) {
    program.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, value, 0, static_cast<std::uint8_t>(length)));
  };
  load(offsetof(seccomp_data, arch));
  when(arch, 1);
  program.push_back(BPF_JUMP(BPF_JMP | BPF_JA, 1, 0, 0));
  ret(deny);  // another ABI (i386 on x86-64): its numbers differ
  load(offsetof(seccomp_data, nr));
#if defined(__x86_64__)
  program.push_back(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));  // the x32 ABI
  ret(deny);
#endif
  const std::vector<long> denied = {
      SYS_mount,
      SYS_umount2,
      SYS_pivot_root,
      SYS_chroot,
      SYS_ptrace,
      SYS_process_vm_readv,
      SYS_process_vm_writev,
      SYS_keyctl,
      SYS_add_key,
      SYS_request_key,
      SYS_bpf,
      SYS_unshare,
      SYS_setns,
      SYS_perf_event_open,
      SYS_init_module,
      SYS_finit_module,
      SYS_delete_module,
      SYS_kexec_load,
      SYS_kexec_file_load,
      SYS_open_by_handle_at,
      SYS_name_to_handle_at,
      SYS_userfaultfd,
      SYS_reboot,
      SYS_swapon,
      SYS_swapoff,
      SYS_acct,
      SYS_syslog,
      SYS_io_uring_setup,
      SYS_io_uring_enter,
      SYS_io_uring_register,
      SYS_fsopen,
      SYS_fsconfig,
      SYS_fsmount,
      SYS_fspick,
      SYS_move_mount,
      SYS_open_tree,
      SYS_mount_setattr,
  };
  for (const long call : denied) {
    when(static_cast<std::uint32_t>(call), 1);
    ret(deny);
  }
  when(SYS_clone3, 1);
  ret(no_such_call);
  constexpr std::uint32_t namespaces = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
                                       CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP;
  when(SYS_clone, 4);
  load(offsetof(seccomp_data, args[0]));  // the flags' low word (little-endian)
  program.push_back(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, namespaces, 0, 1));
  ret(deny);
  ret(allow);
  when(SYS_ioctl, 5);
  load(offsetof(seccomp_data, args[1]));  // the request (an unsigned int)
  program.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 2, 0));
  program.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCLINUX, 1, 0));
  ret(allow);
  ret(deny);
  ret(allow);
  return program;
}

// Processes (threads) of this user now: RLIMIT_NPROC counts them all.
unsigned tasks_of_this_user() {
  unsigned count = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    struct stat info {};
    if (::stat(entry.path().c_str(), &info) != 0 || info.st_uid != ::getuid()) continue;
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code task_ec;
    for (auto it = fs::directory_iterator(entry.path() / "task", task_ec);
         !task_ec && it != fs::directory_iterator(); it.increment(task_ec))
      ++count;
  }
  return count;
}

// A pids cgroup of its own for one sandbox (cgroup v1's pids hierarchy, or a
// v2 root that delegates pids), when this process may make one: as root. The
// sandbox joins it before bubblewrap starts; it is removed afterwards.
class PidsCgroup {
 public:
  explicit PidsCgroup(unsigned max_processes) {
    if (::geteuid() != 0) return;
    for (const char* root : {"/sys/fs/cgroup/pids", "/sys/fs/cgroup"}) {
      if (::access((std::string(root) + "/cgroup.procs").c_str(), W_OK) != 0) continue;
      std::string name = std::string(root) + "/autotune-sandbox-XXXXXX";
      if (::mkdtemp(name.data()) == nullptr) continue;
      std::ofstream max(name + "/pids.max");
      max << max_processes << "\n";
      max.close();
      if (!max) {
        ::rmdir(name.c_str());
        continue;
      }
      dir_ = name;
      return;
    }
  }
  PidsCgroup(const PidsCgroup&) = delete;
  PidsCgroup& operator=(const PidsCgroup&) = delete;
  ~PidsCgroup() {
    if (dir_.empty()) return;
    // The sandbox's PID namespace is torn down when its first process dies;
    // the last of its processes may take a moment to leave.
    for (int attempt = 0; attempt < 50 && ::rmdir(dir_.c_str()) != 0 && errno == EBUSY; ++attempt)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  bool made() const { return !dir_.empty(); }
  std::string procs() const { return dir_ + "/cgroup.procs"; }

 private:
  std::string dir_;
};

// mkdtemp's private folder under the temporary folder, removed with this.
class ScratchFolder {
 public:
  ScratchFolder() {
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    if (ec) base = "/tmp";
    std::string name = (base / "autotune-sandbox-XXXXXX").string();
    if (::mkdtemp(name.data()) == nullptr)
      error_ = "cannot make a scratch folder under " + base.string() + ": " + std::strerror(errno);
    else
      path_ = name;
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  ~ScratchFolder() {
    if (path_.empty()) return;
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  const std::string& error() const { return error_; }

 private:
  fs::path path_;
  std::string error_;
};

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
    const ProcessResult trial = run_sandboxed({"true"}, {}, {}, options);
    if (!trial.ok()) reason = "bubblewrap cannot make a sandbox here: " + trial.describe_failure();
  });
  return reason;
}

ProcessResult run_sandboxed(const std::vector<std::string>& argv, const std::vector<fs::path>& writable,
                            const SandboxLimits& limits, ProcessOptions options) {
  ProcessResult failed;
  const ScratchFolder scratch;
  if (scratch.path().empty()) {
    failed.error = scratch.error();
    return failed;
  }
  const fs::path home = scratch.path() / "home";  // the only folder of the scratch the command sees
  std::error_code ec;
  fs::create_directory(home, ec);

  std::vector<std::string> command = {"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"};
  for (const auto& dir : writable) {
    fs::create_directories(dir, ec);
    command.insert(command.end(), {"--bind", dir.string(), dir.string()});
  }
  command.insert(command.end(), {"--bind", home.string(), home.string()});
  command.insert(command.end(),
                 {"--unshare-user", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                  "--unshare-cgroup-try", "--new-session", "--die-with-parent", "--cap-drop", "ALL"});
  if (::geteuid() == 0) command.insert(command.end(), {"--uid", "65534", "--gid", "65534"});
  command.insert(command.end(),
                 {"--clearenv", "--setenv", "HOME", home.string(), "--setenv", "TMPDIR", home.string()});
  const char* path = std::getenv("PATH");
  command.insert(command.end(),
                 {"--setenv", "PATH", path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin"});
  for (const char* name : {"LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "ASAN_OPTIONS", "UBSAN_OPTIONS",
                           "LSAN_OPTIONS", "MSAN_OPTIONS"})
    if (const char* value = std::getenv(name); value != nullptr)
      command.insert(command.end(), {"--setenv", name, value});

  const std::vector<sock_filter> program = seccomp_program();
  if (!program.empty()) {
    const fs::path filter = scratch.path() / "seccomp.bpf";
    std::ofstream out(filter, std::ios::binary);
    out.write(reinterpret_cast<const char*>(program.data()),
              static_cast<std::streamsize>(program.size() * sizeof(sock_filter)));
    out.close();
    options.inherited_files.push_back(filter);
    command.insert(command.end(), {"--seccomp", std::to_string(2 + options.inherited_files.size())});
  }

  const PidsCgroup cgroup(limits.processes);
  command.insert(command.end(),
                 {"--", "prlimit", "--cpu=" + std::to_string(static_cast<long long>(limits.cpu_seconds)),
                  "--fsize=" + std::to_string(limits.file_bytes), "--core=0"});
  if (!kSanitized) command.push_back("--as=" + std::to_string(limits.address_bytes));
  // RLIMIT_NPROC counts every process of the user, and root is exempt from it.
  if (!cgroup.made() && ::geteuid() != 0)
    command.push_back("--nproc=" + std::to_string(tasks_of_this_user() + limits.processes));
  command.push_back("--");
  command.insert(command.end(), argv.begin(), argv.end());
  if (cgroup.made())  // joins the cgroup, then becomes bubblewrap: nothing forks outside it
    command.insert(command.begin(), {"sh", "-c", "echo $$ >\"$0\" && exec \"$@\"", cgroup.procs()});

  ProcessResult result = run_process(command, options);
  result.stdout_text = redact_secret_values(std::move(result.stdout_text));
  result.stderr_tail = redact_secret_values(std::move(result.stderr_tail));
  result.error = redact_secret_values(std::move(result.error));
  return result;
}

}  // namespace autotune::kernels::external
