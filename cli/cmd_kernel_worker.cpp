// autotune kernel-worker  (internal; not listed in --help)
//
// The isolated process in which a compiled kernel source is loaded (dlopen)
// and run: reads one JSON request on stdin, serves it
// (kernels/external/kernel_worker.hpp) and prints one JSON reply on stdout.
// Exit status 0 whenever it replied; a kernel that crashes or hangs takes only
// this process down, and its caller reports the signal or the timeout.
#include <sys/prctl.h>

#include <csignal>
#include <iostream>
#include <iterator>
#include <string>

#include "cli/command.hpp"
#include "core/json_text.hpp"
#include "kernels/external/kernel_worker.hpp"

namespace autotune::cli {
namespace {

int run_kernel_worker() {
  // autotune ends a worker's process group after its timeout; killed itself
  // (SIGKILL) it cannot, and a kernel that never returns would spin on for
  // good. The spawning thread waits for the reply, so its exit is autotune's.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  const std::string input{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  nlohmann::json reply;
  try {
    reply = kernels::external::serve_worker_request(parse_json(input));
  } catch (const nlohmann::json::exception& e) {
    reply = {
        {"ok", false}, {"status", "failed"}, {"error", std::string("malformed worker request: ") + e.what()}};
  }
  std::cout << reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
  return 0;
}

const CommandRegistration registration{"kernel-worker", "", [](CLI::App& app) -> CommandAction {
                                         app.group("");  // hidden: spawned by autotune itself
                                         return [] { return run_kernel_worker(); };
                                       }};

}  // namespace
}  // namespace autotune::cli
