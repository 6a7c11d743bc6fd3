#include "core/interrupt.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace autotune::interrupt {
namespace {

// Registered children: a fixed table of atomics, read by the signal handler.
constexpr std::size_t kSlots = 1024;
std::array<std::atomic<pid_t>, kSlots> children{};

// When the first signal came (CLOCK_MONOTONIC, ns; 0 before it). A signal
// within kRepeatWindowNs of it is the same request delivered twice: timeout(1)
// and job schedulers signal the process and then its process group. Only a
// later one (a second Ctrl-C) means "no more waiting".
std::atomic<int64_t> first_signal_ns{0};
constexpr int64_t kRepeatWindowNs = 200'000'000;
int wake_pipe[2] = {-1, -1};

std::mutex callback_mutex;
std::function<void(int)> callback;

void kill_tracked_children() {
  for (auto& slot : children) {
    const pid_t pid = slot.load();
    if (pid > 0) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
  }
}

extern "C" void on_signal(int signal) {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  const int64_t now_ns = std::max<int64_t>(1, int64_t(now.tv_sec) * 1'000'000'000 + now.tv_nsec);
  int64_t first_ns = 0;
  if (!first_signal_ns.compare_exchange_strong(first_ns, now_ns)) {
    if (now_ns - first_ns < kRepeatWindowNs) return;
    kill_tracked_children();  // a second signal: no more waiting
    ::_exit(130);
  }
  const unsigned char byte = static_cast<unsigned char>(signal);
  const ssize_t written = ::write(wake_pipe[1], &byte, 1);
  (void)written;
}

// Processes whose parent is this one, from /proc.
std::vector<pid_t> child_processes() {
  std::vector<pid_t> out;
  const pid_t self = ::getpid();
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || pid <= 0) continue;
    // Plain read(2): the process may be gone by now, which only means it is no child of ours.
    const std::string path = "/proc/" + std::string(entry->d_name) + "/stat";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buffer[512];
    const ssize_t n = ::read(fd, buffer, sizeof buffer - 1);
    ::close(fd);
    if (n <= 0) continue;
    const std::string text(buffer, static_cast<std::size_t>(n));
    // pid (comm) state ppid ...: comm may hold spaces and parentheses.
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(text.c_str() + close + 1, " %c %ld", &state, &ppid) == 2 && ppid == self)
      out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return out;
}

void watch() {
  unsigned char byte = 0;
  while (::read(wake_pipe[0], &byte, 1) != 1) {
  }
  // The callback first: it freezes the store, so that nothing the killing
  // below makes fail (a plugin's reply, a measurement) is recorded.
  {
    std::lock_guard lock(callback_mutex);
    if (callback) callback(byte);
  }
  kill_descendants();
  ::_exit(130);
}

}  // namespace

void install() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (::pipe2(wake_pipe, O_CLOEXEC) != 0) return;
    // Orphaned descendants (a plugin's daemonised helper) become our
    // children, so that kill_descendants() finds them.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    std::thread(watch).detach();
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);
  });
}

OnInterrupt::OnInterrupt(std::function<void(int)> fn) {
  std::lock_guard lock(callback_mutex);
  callback = std::move(fn);
}

OnInterrupt::~OnInterrupt() {
  std::lock_guard lock(callback_mutex);
  callback = nullptr;
}

void track_child(pid_t pid) {
  for (auto& slot : children) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, pid)) return;
  }
  // Table full: the child is still found by kill_descendants().
}

void untrack_child(pid_t pid) {
  for (auto& slot : children) {
    pid_t expected = pid;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

void kill_descendants() {
  kill_tracked_children();
  // Killing a child reparents its own children here; go round until none is left.
  for (int round = 0; round < 64; ++round) {
    const auto found = child_processes();
    if (found.empty()) return;
    for (const pid_t pid : found) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
    for (const pid_t pid : found) {
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
}

}  // namespace autotune::interrupt
