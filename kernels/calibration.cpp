#include "kernels/calibration.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <charconv>
#include <cmath>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/text.hpp"
#include "kernels/evaluate.hpp"

namespace autotune::kernels {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kRequiredFields = {"family", "variant", "shape",
                                                  "dtype",  "target",  "measured_ms"};
const std::vector<std::string> kOptionalFields = {"source", "reference", "params", "fit", "launch", "note"};

std::string accepted_fields() {
  return join(kRequiredFields, ", ") + " (required), " + join(kOptionalFields, ", ") + " (optional)";
}

[[noreturn]] void fail(const std::string& where, const std::string& field, const std::string& reason) {
  throw UserError(where + ": " + (field.empty() ? "" : field + ": ") + reason);
}

std::string trim(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  const auto end = text.find_last_not_of(" \t\r");
  return text.substr(begin, end - begin + 1);
}

std::optional<std::int64_t> parse_integer(const std::string& text) {
  std::size_t used = 0;
  try {
    const long long value = std::stoll(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// {"name": integer, ...} of a JSON row.
std::map<std::string, std::int64_t> integer_map(const nlohmann::json& value, const std::string& where,
                                                const std::string& field) {
  if (!value.is_object()) fail(where, field, "expected an object of integers, e.g. {\"seq\": 2048}");
  std::map<std::string, std::int64_t> out;
  for (const auto& [name, item] : value.items()) {
    if (!item.is_number_integer()) fail(where, field + "." + name, "expected an integer, got " + item.dump());
    if (item.is_number_unsigned() && item.get<std::uint64_t>() > std::uint64_t(INT64_MAX))
      fail(where, field + "." + name,
           item.dump() + " is out of range; accepted: at most " + std::to_string(INT64_MAX));
    out[name] = item.get<std::int64_t>();
  }
  return out;
}

// "k=v;k=v" of a CSV row ("" is empty).
std::map<std::string, std::int64_t> integer_map(const std::string& text, const std::string& where,
                                                const std::string& field) {
  std::map<std::string, std::int64_t> out;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ';');) {
    item = trim(item);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      fail(where, field, "'" + item + "' is not NAME=INTEGER (accepted: k=v;k=v, e.g. seq=2048;q_heads=16)");
    const std::string name = trim(item.substr(0, eq));
    const auto value = parse_integer(trim(item.substr(eq + 1)));
    if (!value) fail(where, field + "." + name, "'" + item.substr(eq + 1) + "' is not an integer");
    if (out.count(name) != 0) fail(where, field + "." + name, "given twice");
    out[name] = *value;
  }
  return out;
}

Measurement row_from_json(const nlohmann::json& j, const std::string& file, int line, bool fit_default) {
  Measurement m;
  m.file = file;
  m.line = line;
  m.fit = fit_default;
  const std::string where = m.where();
  if (!j.is_object()) fail(where, "", "expected one JSON object per line, got " + j.dump());
  for (const auto& [key, value] : j.items()) {
    const bool known =
        std::find(kRequiredFields.begin(), kRequiredFields.end(), key) != kRequiredFields.end() ||
        std::find(kOptionalFields.begin(), kOptionalFields.end(), key) != kOptionalFields.end();
    if (!known) fail(where, key, "unknown field (accepted: " + accepted_fields() + ")");
  }
  for (const auto& key : kRequiredFields)
    if (!j.contains(key)) fail(where, key, "missing (accepted: " + accepted_fields() + ")");
  auto text = [&](const char* key, std::string& out) {
    if (!j.contains(key)) return;
    if (!j[key].is_string()) fail(where, key, "expected a string, got " + j[key].dump());
    out = j[key].get<std::string>();
  };
  text("source", m.source);
  text("reference", m.reference);
  text("family", m.family);
  text("variant", m.variant);
  text("dtype", m.dtype);
  text("target", m.target);
  text("note", m.note);
  if (j.contains("params")) m.params = integer_map(j["params"], where, "params");
  m.shape = integer_map(j["shape"], where, "shape");
  const nlohmann::json& measured = j["measured_ms"];
  if (!measured.is_number() || !(measured.get<double>() > 0) || !std::isfinite(measured.get<double>())) {
    // JSON writes a non-finite number as null: say what the row held.
    const std::string given = measured.is_number() ? number_text(measured.get<double>()) : measured.dump();
    fail(where, "measured_ms", "expected a positive, finite number of milliseconds, got " + given);
  }
  m.measured_ms = measured.get<double>();
  if (j.contains("fit")) {
    if (!j["fit"].is_boolean()) fail(where, "fit", "expected true or false, got " + j["fit"].dump());
    m.fit = j["fit"].get<bool>();
  }
  if (j.contains("launch")) {
    if (!j["launch"].is_boolean()) fail(where, "launch", "expected true or false, got " + j["launch"].dump());
    m.includes_launch = j["launch"].get<bool>();
  }
  return m;
}

// One CSV record: fields split on commas outside double quotes ("" is a quote).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"' && quoted && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  for (auto& field : out) field = trim(field);
  return out;
}

std::vector<Measurement> read_csv(std::istream& in, const std::string& file, bool fit_default) {
  std::vector<Measurement> rows;
  std::vector<std::string> header;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (trim(line).empty()) continue;
    const std::string where = file + ":" + std::to_string(number);
    const auto fields = csv_fields(line);
    if (header.empty()) {
      header = fields;
      std::set<std::string> seen;
      for (const auto& name : header) {
        const bool known =
            std::find(kRequiredFields.begin(), kRequiredFields.end(), name) != kRequiredFields.end() ||
            std::find(kOptionalFields.begin(), kOptionalFields.end(), name) != kOptionalFields.end();
        if (!known) fail(where, name, "unknown column (accepted: " + accepted_fields() + ")");
        if (!seen.insert(name).second) fail(where, name, "column given twice");
      }
      for (const auto& name : kRequiredFields)
        if (!seen.count(name))
          fail(where, name,
               "missing column; the header must name " + join(kRequiredFields, ",") +
                   " (params and shape as k=v;k=v)");
      continue;
    }
    if (fields.size() != header.size())
      fail(where, "",
           std::to_string(fields.size()) + " fields where the header has " + std::to_string(header.size()) +
               " (" + join(header, ",") + ")");
    nlohmann::json j = nlohmann::json::object();
    for (std::size_t i = 0; i < header.size(); ++i) {
      const std::string& name = header[i];
      const std::string& value = fields[i];
      if (name == "params" || name == "shape") {
        nlohmann::json map = nlohmann::json::object();
        for (const auto& [k, v] : integer_map(value, where, name)) map[k] = v;
        j[name] = map;
      } else if (name == "measured_ms") {
        // Decimal only (std::from_chars): strtod also read "0x10" as 16 and "inf" as a number.
        double ms = 0;
        const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), ms);
        if (value.empty() || error == std::errc::invalid_argument || end != value.data() + value.size())
          fail(where, name, "'" + value + "' is not a number of milliseconds");
        if (error == std::errc::result_out_of_range)
          fail(where, name, "'" + value + "' is out of a double's range");
        j[name] = ms;
      } else if (name == "fit" || name == "launch") {
        if (value.empty()) continue;
        if (value != "true" && value != "false") fail(where, name, "'" + value + "': expected true or false");
        j[name] = value == "true";
      } else if (!value.empty() ||
                 std::find(kRequiredFields.begin(), kRequiredFields.end(), name) == kRequiredFields.end()) {
        j[name] = value;
      } else {
        fail(where, name, "empty (accepted: " + accepted_fields() + ")");
      }
    }
    rows.push_back(row_from_json(j, file, number, fit_default));
  }
  if (header.empty())
    fail(file, "",
         "empty; a CSV needs a header: " + join(kRequiredFields, ",") + " (and optionally " +
             join(kOptionalFields, ",") + ")");
  return rows;
}

}  // namespace

std::string Measurement::where() const { return file + ":" + std::to_string(line); }

std::string Measurement::kernel_text() const {
  std::string text = family + "/" + variant;
  for (const auto& [name, value] : params) text += " " + name + "=" + std::to_string(value);
  return text;
}

std::string Measurement::shape_text() const {
  std::vector<std::string> order;
  if (family_registry().contains(family)) order = family_registry().get(family).shape_args;
  for (const auto& [name, value] : shape)
    if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
  std::vector<std::string> parts;
  for (const auto& name : order)
    if (const auto it = shape.find(name); it != shape.end())
      parts.push_back(name + "=" + std::to_string(it->second));
  return join(parts, ",");
}

nlohmann::json Measurement::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  j["source"] = source;
  j["reference"] = reference;
  j["family"] = family;
  j["variant"] = variant;
  j["params"] = nlohmann::json::object();
  for (const auto& [k, v] : params) j["params"][k] = v;
  j["shape"] = nlohmann::json::object();
  for (const auto& [k, v] : shape) j["shape"][k] = v;
  j["dtype"] = dtype;
  j["target"] = target;
  j["measured_ms"] = measured_ms;
  j["fit"] = fit;
  if (!includes_launch) j["launch"] = false;
  j["note"] = note;
  return j;
}

std::vector<Measurement> read_measurements(const fs::path& file, bool fit_default) {
  std::ifstream in(file);
  if (!in) throw UserError(file.string() + ": cannot be read (a JSON-lines or CSV file of measurements)");
  const std::string name = file.string();
  std::string extension = file.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(), ::tolower);
  // A byte order mark (some spreadsheets write one) is not part of the first line.
  if (in.peek() == 0xEF) {
    char mark[3] = {};
    in.read(mark, 3);
    if (std::string_view(mark, 3) != "\xEF\xBB\xBF") in.seekg(0);
  }
  if (extension == ".csv") return read_csv(in, name, fit_default);
  std::vector<Measurement> rows;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (trim(line).empty()) continue;
    nlohmann::json j;
    try {
      j = parse_json(line);
    } catch (const nlohmann::json::parse_error& e) {
      fail(name + ":" + std::to_string(number), "",
           "not a JSON object (" + std::string(e.what()) +
               "); a measurements file is JSON lines, one object per line, or a .csv");
    }
    rows.push_back(row_from_json(j, name, number, fit_default));
  }
  if (rows.empty()) throw UserError(name + ": no measurements (one JSON object per line, or a .csv)");
  return rows;
}

std::optional<MeasurementProblem> check_measurement(const Measurement& row) {
  const auto& families = family_registry();
  if (!families.contains(row.family))
    return MeasurementProblem{
        "family", "unknown kernel '" + row.family + "' (accepted: " + families.joined_names() + ")"};
  const FamilySpec& family = families.get(row.family);
  const VariantSpec* variant = nullptr;
  for (const auto& v : family.variants)
    if (v.name == row.variant) variant = &v;
  if (variant == nullptr)
    return MeasurementProblem{
        "variant", "unknown variant '" + row.variant + "' of kernel '" + family.name + "' (accepted: " +
                       join(family.variants, ", ", [](const VariantSpec& v) { return v.name; }) + ")"};
  try {
    (void)resolve_params(*variant, row.params);
  } catch (const UserError& e) {
    return MeasurementProblem{"params", e.what()};
  }
  const auto dtype = sim::parse_dtype(row.dtype);
  if (!dtype || !family.accepts(*dtype))
    return MeasurementProblem{
        "dtype", "'" + row.dtype + "' is not a dtype of kernel '" + family.name + "' (" +
                     (sim::unmodelled_dtype_reason(row.dtype).empty()
                          ? ""
                          : sim::unmodelled_dtype_reason(row.dtype) + "; ") +
                     "accepted: " +
                     join(family.dtypes, ", ", [](sim::Dtype d) { return std::string(sim::dtype_name(d)); }) +
                     ")"};
  for (const auto& [name, value] : row.shape)
    if (std::find(family.shape_args.begin(), family.shape_args.end(), name) == family.shape_args.end())
      return MeasurementProblem{"shape." + name, "unknown shape argument of kernel '" + family.name +
                                                     "' (accepted: " + join(family.shape_args, ", ") + ")"};
  for (const auto& name : family.shape_args)
    if (row.shape.count(name) == 0)
      return MeasurementProblem{
          "shape." + name, "missing: a measurement names every shape argument of kernel '" + family.name +
                               "' (" + join(family.shape_args, ", ") + ")"};
  if (family.check_shape)
    if (const std::string reason = family.check_shape(row.shape); !reason.empty())
      return MeasurementProblem{"shape", reason};
  return std::nullopt;
}

TracedMeasurement trace_measurement(const Measurement& row, const sim::TargetSpec& target) {
  TracedMeasurement out;
  out.measurement = row;
  if (const auto problem = check_measurement(row)) {
    out.error = problem->field + ": " + problem->reason;
    return out;
  }
  try {
    const FamilySpec& family = family_registry().get(row.family);
    const VariantSpec& variant = family.variant(row.variant);
    out.program = std::make_shared<const sim::Program>(
        trace_program(family, variant, row.shape, *sim::parse_dtype(row.dtype),
                      resolve_params(variant, row.params), target));
  } catch (const std::exception& e) {
    out.error = std::string("cannot be traced: ") + e.what();
  }
  return out;
}

RowTiming time_measurement(const TracedMeasurement& row, const sim::TargetSpec& target, bool keep_summary) {
  RowTiming out;
  if (!row.program) {
    out.error = row.error;
    return out;
  }
  sim::SimResult result = sim::simulate(*row.program, target, sim::SimOptions{false, false});
  out.valid = result.valid;
  if (!result.valid) {
    out.error = "invalid configuration (" + result.rule + "): " + result.error;
    return out;
  }
  // A measurement without the per-call floor is compared with the kernel alone.
  out.simulated_ms = (row.measurement.includes_launch ? result.total_time_s : result.total_time_s - target.launch_overhead_s) * 1e3;
  if (keep_summary) out.summary = std::move(result.summary);
  return out;
}

void parallel_for(std::size_t count, const std::function<void(std::size_t)>& job, unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, count));
  if (threads <= 1) {
    for (std::size_t i = 0; i < count; ++i) job(i);
    return;
  }
  std::exception_ptr failure;
  std::mutex failure_mutex;
  boost::asio::thread_pool pool(threads);
  for (std::size_t i = 0; i < count; ++i)
    boost::asio::post(pool, [&, i] {
      try {
        job(i);
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    });
  pool.join();
  if (failure) std::rethrow_exception(failure);
}

std::vector<CalibrationRow> run_calibration(const std::vector<Measurement>& rows,
                                            const CalibrationTargets& targets, unsigned threads) {
  // Each target named by a row, loaded once; a name that cannot be loaded is
  // every such row's error.
  std::map<std::string, sim::TargetSpec> loaded = targets;
  std::map<std::string, std::string> unloadable;
  for (const auto& row : rows) {
    if (loaded.count(row.target) || unloadable.count(row.target)) continue;
    try {
      loaded[row.target] = sim::load_target(row.target);
    } catch (const UserError& e) {
      unloadable[row.target] = e.what();
    }
  }
  std::vector<CalibrationRow> out(rows.size());
  parallel_for(
      rows.size(),
      [&](std::size_t i) {
        CalibrationRow& row = out[i];
        row.measurement = rows[i];
        if (const auto it = unloadable.find(rows[i].target); it != unloadable.end()) {
          row.error = "target: " + it->second;
          return;
        }
        const sim::TargetSpec& target = loaded.at(rows[i].target);
        row.target_file = target.source_file;
        const RowTiming timing = time_measurement(trace_measurement(rows[i], target), target, true);
        row.valid = timing.valid;
        row.error = timing.error;
        row.simulated_ms = timing.simulated_ms;
        row.summary = timing.summary;
      },
      threads);
  return out;
}

double kendall_tau(const std::vector<double>& a, const std::vector<double>& b) {
  AUTOTUNE_CHECK(a.size() == b.size(), "kendall_tau: series of different lengths");
  double concordant = 0, discordant = 0, ties_a = 0, ties_b = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = i + 1; j < a.size(); ++j) {
      const double da = a[i] - a[j], db = b[i] - b[j];
      if (da == 0 && db == 0) continue;
      if (da == 0) {
        ++ties_a;
      } else if (db == 0) {
        ++ties_b;
      } else if ((da > 0) == (db > 0)) {
        ++concordant;
      } else {
        ++discordant;
      }
    }
  const double denominator =
      std::sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b));
  return denominator > 0 ? (concordant - discordant) / denominator : 0;
}

std::vector<SourceAgreement> agreement_by_source(const std::vector<CalibrationRow>& rows) {
  std::vector<std::string> order;
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> series;
  for (const auto& row : rows) {
    if (!row.valid) continue;
    const std::string& source = row.measurement.source;
    if (!series.count(source)) order.push_back(source);
    series[source].first.push_back(row.measurement.measured_ms);
    series[source].second.push_back(row.simulated_ms);
  }
  std::vector<SourceAgreement> out;
  for (const auto& source : order) {
    const auto& [measured, simulated] = series[source];
    if (measured.size() < 3) continue;
    out.push_back({source, static_cast<int>(measured.size()), kendall_tau(measured, simulated)});
  }
  return out;
}

nlohmann::json calibration_json(const std::vector<CalibrationRow>& rows) {
  nlohmann::json out = nlohmann::json::object();
  out["simulator_version"] = std::string(sim::kSimulatorVersion);
  out["band"] = {kCalibrationLow, kCalibrationHigh};
  nlohmann::json list = nlohmann::json::array();
  bool all_in_band = !rows.empty();
  for (const auto& row : rows) {
    nlohmann::json j = row.measurement.to_json();
    j["where"] = row.measurement.where();
    j["target_file"] = row.target_file;
    j["valid"] = row.valid;
    if (row.valid) {
      j["simulated_ms"] = row.simulated_ms;
      j["ratio"] = row.ratio();
      if (row.summary.contains("mfu_estimated_percent")) j["mfu_percent"] = row.summary["mfu_estimated_percent"];
      if (row.summary.contains("critical_path")) j["critical_path"] = critical_path_headline(row.summary);
    } else {
      j["error"] = row.error;
    }
    j["in_band"] = row.in_band();
    all_in_band = all_in_band && row.in_band();
    list.push_back(j);
  }
  out["rows"] = list;
  nlohmann::json sources = nlohmann::json::array();
  for (const auto& s : agreement_by_source(rows))
    sources.push_back({{"source", s.source}, {"rows", s.rows}, {"kendall_tau", s.tau}});
  out["kendall_tau_by_source"] = sources;
  out["all_in_band"] = all_in_band;
  return out;
}

std::string table_text(const std::vector<std::vector<std::string>>& cells,
                       const std::vector<std::size_t>& right_aligned) {
  std::vector<std::size_t> width;
  for (const auto& row : cells)
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], row[c].size());
    }
  std::string out;
  for (const auto& row : cells) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      const bool right = std::find(right_aligned.begin(), right_aligned.end(), c) != right_aligned.end();
      line += right ? pad + row[c] : row[c] + pad;
      if (c + 1 < row.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string critical_path_headline(const nlohmann::json& summary) {
  if (!summary.is_object() || !summary.contains("critical_path")) return "no critical path in the profile";
  const nlohmann::json& path = summary["critical_path"];
  // The largest shares of the path's time: engines busy and waits by kind.
  std::vector<std::pair<double, std::string>> shares;
  for (const char* group : {"busy_percent", "wait_percent"}) {
    if (!path.contains(group)) continue;
    const std::string kind = std::string(group) == "busy_percent" ? " busy" : " wait";
    for (const auto& [name, value] : path[group].items())
      if (value.is_number() && value.get<double>() >= 0.5)
        shares.emplace_back(value.get<double>(), name + kind);
  }
  std::sort(shares.rbegin(), shares.rend());
  std::string out = "the path is ";
  for (std::size_t i = 0; i < shares.size() && i < 3; ++i) {
    char text[64];
    std::snprintf(text, sizeof text, "%s%.0f%% %s", i ? ", " : "", shares[i].first, shares[i].second.c_str());
    out += text;
  }
  if (shares.empty()) out += "empty";
  if (path.contains("lines") && !path["lines"].empty()) {
    const auto& line = path["lines"][0];
    char text[64];
    std::snprintf(text, sizeof text, " (%.0f%%)", line.value("percent", 0.0));
    out += "; top line: " + line.value("engine", std::string()) + " " + line.value("opcode", std::string()) +
           " at " + line.value("source", std::string()) + text;
  }
  return out;
}

}  // namespace autotune::kernels
