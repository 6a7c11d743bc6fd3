#pragma once
// Seeded random numbers. A run is a function of (goal, seed, simulator
// version), so components never share a generator: each forks its own stream
// from the run's seed and a stable tag (component name, worker index).
#include <cstdint>
#include <random>
#include <string_view>

namespace autotune {

class Rng {
 public:
  using result_type = std::uint64_t;
  explicit Rng(std::uint64_t seed = 0) : seed_(seed), engine_(mix(seed)) {}

  std::uint64_t seed() const { return seed_; }
  // An independent stream derived from this seed and a tag; deterministic.
  Rng fork(std::string_view tag) const;
  Rng fork(std::uint64_t index) const { return Rng(mix(seed_ ^ mix(index + 0x9E3779B97F4A7C15ULL))); }

  result_type operator()() { return engine_(); }
  static constexpr result_type min() { return std::mt19937_64::min(); }
  static constexpr result_type max() { return std::mt19937_64::max(); }

  // Uniform integer in [low, high].
  std::int64_t uniform_int(std::int64_t low, std::int64_t high) {
    return std::uniform_int_distribution<std::int64_t>(low, high)(engine_);
  }
  // Uniform real in [low, high).
  double uniform(double low = 0.0, double high = 1.0) {
    return std::uniform_real_distribution<double>(low, high)(engine_);
  }
  double normal(double mean = 0.0, double stddev = 1.0) {
    return std::normal_distribution<double>(mean, stddev)(engine_);
  }

  static std::uint64_t mix(std::uint64_t x);  // splitmix64 finaliser

 private:
  std::uint64_t seed_;
  std::mt19937_64 engine_;
};

}  // namespace autotune
