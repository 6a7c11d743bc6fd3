// A suite's runs going at once share its --jobs workers.
#include "orchestrator/suite.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

using namespace autotune::orchestrator;

namespace {

// The suite's schedule as run_suite keeps it: `threads` take the runs in
// order; a run's workers come from workers_for_next_run when it starts and go
// back when it ends. `finish_order` says which run in progress ends next
// (its index among those in progress), round by round. Returns the most
// workers held at once, and each run's workers.
struct Schedule {
  int most_at_once = 0;
  std::vector<int> workers;
};

Schedule simulate(int jobs, int runs, const std::vector<int>& finish_order) {
  const int threads = std::max(1, std::min(jobs, runs));
  Schedule out;
  std::vector<int> going;  // workers of each run in progress
  int in_use = 0, next = 0;
  std::size_t round = 0;
  while (next < runs || !going.empty()) {
    while (next < runs && int(going.size()) < threads) {
      const int idle = threads - int(going.size());
      const int workers = workers_for_next_run(jobs, in_use, std::min(idle, runs - next));
      going.push_back(workers);
      out.workers.push_back(workers);
      in_use += workers;
      out.most_at_once = std::max(out.most_at_once, in_use);
      ++next;
    }
    const std::size_t ends =
        round < finish_order.size() ? std::size_t(finish_order[round]) % going.size() : 0;
    in_use -= going[ends];
    going.erase(going.begin() + std::ptrdiff_t(ends));
    ++round;
  }
  return out;
}

}  // namespace

TEST_CASE("the runs of a suite going at once never hold more workers than --jobs") {
  // --jobs 2, three runs: the second ends first, so the last starts beside the first, which holds one
  // worker; it takes the one left, not two.
  const Schedule two = simulate(2, 3, {1, 0});
  CHECK(two.workers == std::vector<int>{1, 1, 1});
  CHECK(two.most_at_once == 2);
  // A run that starts alone with nothing else to start has every worker.
  CHECK(simulate(4, 1, {}).workers == std::vector<int>{4});
  // Runs starting together split the workers; what the division leaves goes to the last of them.
  CHECK(simulate(5, 2, {}).workers == std::vector<int>{2, 3});
  // Every finishing order, for small suites: never more than --jobs, never less than one worker a run.
  for (int jobs = 1; jobs <= 6; ++jobs)
    for (int runs = 1; runs <= 7; ++runs)
      for (int pattern = 0; pattern < 64; ++pattern) {
        std::vector<int> order;
        for (int bit = 0; bit < runs; ++bit) order.push_back((pattern >> bit) & 1 ? 1 : 0);
        const Schedule s = simulate(jobs, runs, order);
        CHECK(s.most_at_once <= jobs);
        CHECK(int(s.workers.size()) == runs);
        CHECK(*std::min_element(s.workers.begin(), s.workers.end()) >= 1);
      }
}
