#pragma once
// The rules a program must satisfy before it is scheduled (docs/simulator.md,
// "Rules of validity"). The first violation in program order is reported.
#include <cstdint>
#include <string>

#include "sim/program.hpp"
#include "sim/target.hpp"

namespace autotune::sim {

struct ValidationResult {
  bool valid = true;
  std::string rule;   // e.g. "sbuf_overflow"
  std::string error;  // "file:line: what is wrong"
  std::uint32_t location = 0;
  // Address high-water marks, whether valid or not.
  std::int64_t sbuf_peak_bytes_per_partition = 0;
  std::int64_t psum_peak_bytes_per_partition = 0;
  int psum_peak_banks = 0;
};

ValidationResult validate_program(const Program& program, const TargetSpec& target);

}  // namespace autotune::sim
