#pragma once
// Measuring through the store's shared queue (docs/distributed.md): the
// pieces that the Benchmark Runner (coordinating a run or sweep) and
// `autotune worker` (on any host) share.
//
// A queued item's candidate is {"variant", "params"}; its result is a
// Measurement as JSON. Who measures it is whoever claims it: the
// coordinator's own jobs or any worker. The store guarantees a claim is
// exclusive and a result is recorded once (Store::complete_measurement).
#include <string>

#include "skills/measurement_target.hpp"
#include "store/store.hpp"

namespace autotune::skills {

// How long a claim stays with a claimer that stopped heartbeating.
inline constexpr double kClaimLeaseS = 30;
// How often claimers heartbeat (well inside the lease).
inline constexpr double kHeartbeatIntervalS = 2;
// A row claimed by a run's own jobs yet measured by none of them for this
// long is a claim lost with its connection: the run measures it again.
inline constexpr double kOrphanAfterS = 3;
// Workers that heartbeat this recently count as active.
inline constexpr double kActiveWorkerS = 10;

Json to_json(const Measurement& measurement);
// A measurement read back from the queue; a result that does not have the
// form is a failed measurement saying so (the queue is written by other
// processes, so it is checked like any input).
Measurement measurement_from_json(const Json& result);

Json candidate_to_json(const Candidate& candidate);
Candidate candidate_from_json(const Json& candidate);

// "host:pid:tag", unique per claimer process and role.
std::string claimer_id(const std::string& tag);

// Measures `candidate` on `target` within `limit`: a measurement running
// longer is a timeout (an in-process measurement cannot be stopped; it is
// left to finish on its own thread and its result discarded). A target that
// throws gives a failed measurement.
Measurement measure_with_deadline(MeasurementTarget& target, const Candidate& candidate,
                                  const TimeLimit& limit);

}  // namespace autotune::skills
