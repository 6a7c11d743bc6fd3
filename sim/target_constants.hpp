#pragma once
// The target's *fitted* constants as data: the few figures of a target file
// that no document gives exactly and that a calibration against hardware
// measurements may adjust (docs/calibration.md). Every other figure of a
// target file is physical (documented) and is never fitted.
//
// Each constant is read and written in the unit of its target-file key
// (cycles, microseconds, bytes), and carries physically plausible bounds a fit
// must stay within. write_fitted_target() writes a copy of a target file with
// some of them replaced, keeping every comment and key;
// target_content_hash() identifies a target's figures for result caches.
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/output_file.hpp"
#include "sim/target.hpp"

namespace autotune::sim {

struct FittedConstant {
  std::string_view name;     // short name, e.g. "access_startup" (what --fit names)
  std::string_view key;      // YAML key path in a target file, e.g. "instruction_cycles.access_startup"
  std::string_view unit;     // "cycles", "us", "B"
  double low = 0, high = 0;  // physically plausible bounds, in `unit`
  std::string_view what;     // one line: what the constant is
  double (*get)(const TargetSpec&) = nullptr;  // in `unit`
  void (*set)(TargetSpec&, double) = nullptr;  // from `unit`
  // Whether `target` has the mechanism the constant belongs to (nullptr:
  // every target); a target without it has no such key to fit or write.
  bool (*applies)(const TargetSpec&) = nullptr;
  bool applies_to(const TargetSpec& target) const { return applies == nullptr || applies(target); }
};

// Every fitted constant, in target-file order.
const std::vector<FittedConstant>& fitted_constants();
// The constant called `name` (its short name or its key path); nullptr when unknown.
const FittedConstant* find_fitted_constant(std::string_view name);
// The same, as a UserError listing the accepted names when unknown.
const FittedConstant& fitted_constant(std::string_view name);
// "access_startup, cross_engine_dependency, ...", for errors and --help.
std::string fitted_constant_names();

// Name -> value (in the constant's unit) of every fitted constant that
// applies to `target`.
std::map<std::string, double> fitted_values(const TargetSpec& target);
// Sets each named constant (UserError on an unknown name).
void set_fitted_values(TargetSpec& target, const std::map<std::string, double>& values);

// Writes a copy of the target file `source` to `out` with each named constant
// (name -> value in its unit) replaced in place: the line of its key within its
// section is edited, every other line (comments, keys, spacing) is kept. A
// header comment at the top records `provenance` (which measurements fitted
// it; may span lines) and the values replaced. The written file is read back
// with load_target_file and must give the new values (InternalError
// otherwise); `out` is replaced only then (write_output_file). UserError when
// `source` cannot be read or lacks a key, or `out` cannot be written or is
// `source` or one of `keep` (the files the caller read).
void write_fitted_target(const std::filesystem::path& source, const std::map<std::string, double>& values,
                         const std::filesystem::path& out, const std::string& provenance,
                         std::vector<KeptFile> keep = {});

// A hash (16 hex digits) of everything that sets `target`'s simulated times:
// every key and value of its target file (comments and formatting excluded,
// so a recalibrated file with one constant changed differs and a re-commented
// one does not), and its fitted constants as held in memory (a target changed
// by set_fitted_values differs from its file). Part of the result-cache key,
// so a recalibrated target never reuses results cached under another one.
std::string target_content_hash(const TargetSpec& target);

}  // namespace autotune::sim
