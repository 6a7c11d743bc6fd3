#pragma once
// What the Benchmark Runner measures and what it gets back.
//
// A candidate is a (variant, parameters) pair; parameters are a JSON object
// (name -> integer, real or string), which nlohmann keeps sorted by name, so
// its dump is a canonical text usable in hashes and cache keys.
#include <nlohmann/json.hpp>
#include <string>

#include "store/records.hpp"

namespace autotune::skills {

using Json = nlohmann::json;

struct Candidate {
  std::string variant;
  Json params = Json::object();

  // "variant{a=1,b=2}": stable within and across runs; the identity that
  // config hashes and cache keys are made of (a variant without parameters
  // keeps its placeholder: "naive{_=0}").
  std::string key() const;
  // The same for people: messages, rationales, decision inputs. Without the
  // placeholder parameter "_" of a variant that has none: "naive", not
  // "naive{_=0}".
  std::string text() const;
  bool operator==(const Candidate& other) const { return variant == other.variant && params == other.params; }
};

// The result of measuring one candidate on a target. A bad candidate is a
// Measurement with a status and a reason, never an exception.
struct Measurement {
  Outcome status = Outcome::failed;
  // At least "latency_s" when status is ok; plus what the target knows
  // (throughput_flops_per_s, mfu_percent, roofline_bound_s, ...).
  Json metrics = Json::object();
  Json repeats;       // every repeat when the target measures several
  Json verification;  // {"max_rel_error", "mse", "cosine", "shape"} when verified
  Json profile;       // the profile summary (NEURONCORE.md field names), when the target has one
  std::string error;  // why it is not ok
  double duration_ms = 0;
};

// A short hex digest (FNV-1a 64) of a text, for config hashes and cache keys.
std::string stable_hash(const std::string& text);

}  // namespace autotune::skills
