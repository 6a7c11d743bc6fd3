#pragma once
// Interruption (SIGINT, SIGTERM) and the child processes autotune starts.
//
// Every child started through core/subprocess registers here while it runs.
// On the first signal a watcher thread runs the callback in force (which
// records the interruption and freezes the store, so that nothing the
// interruption itself makes fail is recorded), then kills every registered
// child with its process group and whatever else descends from this process
// (a helper that moved to a session of its own is reparented here: the
// process is a child subreaper), and exits with 130. A second signal, 0.2 s
// or more after the first, kills the registered children and exits at once;
// one sooner is the first delivered again (timeout(1) signals the process and
// then its group) and changes nothing.
#include <sys/types.h>

#include <functional>

namespace autotune::interrupt {

// Installs the handlers (idempotent); main() calls it first.
void install();

// The callback for the scope of a command: records the interruption (the
// run's status), prints how to resume. Runs on the watcher thread.
class OnInterrupt {
 public:
  explicit OnInterrupt(std::function<void(int signal)> callback);
  ~OnInterrupt();
  OnInterrupt(const OnInterrupt&) = delete;
  OnInterrupt& operator=(const OnInterrupt&) = delete;
};

// core/subprocess registers each child between its start and its reaping.
void track_child(pid_t pid);
void untrack_child(pid_t pid);

// SIGKILL to every registered child and its group, then to every process
// whose parent is this one (repeatedly, as orphans are reparented here),
// reaping each. Used on interruption and when autotune exits.
void kill_descendants();

}  // namespace autotune::interrupt
