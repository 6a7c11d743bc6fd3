#include "core/config_reader.hpp"

#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <system_error>
#include <vector>

#include "core/text.hpp"

namespace autotune {

std::string flow_text(const YAML::Node& node) {
  YAML::Emitter out;
  out.SetSeqFormat(YAML::Flow);
  out.SetMapFormat(YAML::Flow);
  out << node;
  return out.c_str();
}

namespace {

// Aliases make a YAML document a graph: `a: &a [*a]` is a cycle, and anchors
// that alias each other ten times over ("billion laughs") expand to billions of
// nodes for every reader that walks the tree. Bounds on what a document may
// expand to, far beyond any real configuration.
constexpr int kMaxDepth = 100;
constexpr std::size_t kMaxNodes = 200000;

struct DocumentWalk {
  const std::string& where;
  std::vector<YAML::Node> ancestors;
  std::size_t nodes = 0;

  std::string at(const YAML::Node& node) const {
    return where + ":" + std::to_string(node.Mark().line + 1) + ": ";
  }

  // YAML lets a mapping repeat a key and yaml-cpp keeps the first: refuse that,
  // naming both lines and the key's path ("skills[0].role"), in every mapping
  // of the document, those inside lists included.
  void visit(const YAML::Node& node, const std::string& path = "") {
    if (++nodes > kMaxNodes)
      throw UserError(where + ": more than " + std::to_string(kMaxNodes) +
                      " values once its aliases are expanded; aliases that repeat each other are refused");
    for (const auto& ancestor : ancestors)
      if (ancestor.is(node))
        throw UserError(at(node) +
                        "an alias refers to a node that contains it (a recursive alias); aliases "
                        "must name a finished node");
    if (!node.IsMap() && !node.IsSequence()) return;
    if (static_cast<int>(ancestors.size()) >= kMaxDepth)
      throw UserError(at(node) + "nested deeper than " + std::to_string(kMaxDepth) + " levels");
    ancestors.push_back(node);
    if (node.IsMap()) {
      std::map<std::string, int> first_line;
      for (const auto& entry : node) {
        const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "?";
        const std::string key_path = path.empty() ? key : path + "." + key;
        if (entry.first.IsScalar()) {
          const int line = entry.first.Mark().line + 1;
          const auto [it, inserted] = first_line.emplace(key, line);
          if (!inserted)
            throw UserError(where + ":" + std::to_string(line) + ": " + key_path +
                            ": the key appears twice (first at line " + std::to_string(it->second) +
                            "); each key may appear once");
        } else {
          visit(entry.first, key_path);
        }
        visit(entry.second, key_path);
      }
    } else {
      std::size_t index = 0;
      for (const auto& item : node) visit(item, path + "[" + std::to_string(index++) + "]");
    }
    ancestors.pop_back();
  }
};

}  // namespace

namespace {

// Where the content of a second YAML document starts, if the text has one
// that is not empty. Two documents are parsed at most: yaml-cpp's LoadAll
// never returns on some malformed input (its parser keeps reporting another
// document), which the goal and space fuzzers found.
std::optional<YAML::Mark> second_document_content(const std::string& text) {
  struct FirstContent : YAML::EventHandler {
    std::optional<YAML::Mark> mark;
    void at(const YAML::Mark& m) {
      if (!mark) mark = m;
    }
    void OnDocumentStart(const YAML::Mark&) override {}
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { at(m); }
    void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override {
      at(m);
    }
    void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {
      at(m);
    }
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                    YAML::EmitterStyle::value) override {
      at(m);
    }
    void OnMapEnd() override {}
  };
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  FirstContent first;
  if (!parser.HandleNextDocument(first)) return std::nullopt;
  FirstContent second;
  if (!parser.HandleNextDocument(second)) return std::nullopt;
  return second.mark;
}

}  // namespace

YAML::Node load_yaml_file(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) throw UserError(path.string() + ": file not found");
  if (std::filesystem::is_directory(path, error))
    throw UserError(path.string() + ": is a directory; a YAML file is expected");
  // A pipe is read (a shell's <(...)); a device such as /dev/zero is not a
  // file to read to its end.
  const auto type = std::filesystem::status(path, error).type();
  if (type == std::filesystem::file_type::character || type == std::filesystem::file_type::block ||
      type == std::filesystem::file_type::socket)
    throw UserError(path.string() + ": is a device or a socket, not a file; a YAML file is expected");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path.string() + ": cannot read the file");
  // Configuration is small; a file far larger than any is a mistake, refused
  // before it fills the memory.
  constexpr std::size_t kMaxBytes = 64u << 20;
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxBytes)
      throw UserError(path.string() + ": is larger than 64 MiB; a YAML configuration file is expected");
  }
  return load_yaml_text(text, path.string());
}

void check_yaml_document(const YAML::Node& document, const std::string& where) {
  DocumentWalk walk{where, {}, 0};
  walk.visit(document);
}

YAML::Node load_yaml_text(const std::string& text, const std::string& where) {
  YAML::Node document;
  try {
    document = YAML::Load(text);
    // A second document after '---' would otherwise be dropped without a word.
    if (const auto second = second_document_content(text))
      throw UserError(where + (second->line >= 0 ? ":" + std::to_string(second->line + 1) : std::string()) +
                      ": a second YAML document (after '---'); one document is expected");
  } catch (const YAML::ParserException& e) {
    throw UserError(where + ":" + std::to_string(e.mark.line + 1) + ": YAML syntax error: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw UserError(where + ": cannot read: " + e.msg);
  }
  check_yaml_document(document, where);
  return document;
}

KeyLocations::KeyLocations(const YAML::Node& document, std::string file, std::string prefix)
    : file_(std::move(file)), prefix_(std::move(prefix)) {
  std::vector<std::string> path;
  record(document, path);
}

void KeyLocations::record(const YAML::Node& node, std::vector<std::string>& path) {
  if (!node.IsMap()) return;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) continue;
    path.push_back(entry.first.Scalar());
    lines_.emplace(path, entry.first.Mark().line + 1);
    record(entry.second, path);
    path.pop_back();
  }
}

std::string KeyLocations::operator()(const std::vector<std::string>& key_path) const {
  int line = 1;
  std::vector<std::string> prefix;
  std::string joined = prefix_;
  for (const auto& key : key_path) {
    prefix.push_back(key);
    joined += (joined.empty() ? "" : ".") + key;
    if (const auto it = lines_.find(prefix); it != lines_.end()) line = it->second;
  }
  return file_ + ":" + std::to_string(line) + ": " + joined + ": ";
}

ConfigReader::ConfigReader(YAML::Node node, std::string file, std::string path)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)) {
  if (node_ && !node_.IsNull() && !node_.IsMap()) {
    throw UserError(location(node_) + ": " + (path_.empty() ? std::string("document") : path_) +
                    ": expected a mapping of keys to values");
  }
}

std::string ConfigReader::location(const YAML::Node& at) const {
  std::string out = file_;
  if (at && at.Mark().line >= 0) out += ":" + std::to_string(at.Mark().line + 1);
  return out;
}

std::string ConfigReader::key_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

std::pair<YAML::Node, YAML::Node> ConfigReader::entry(const std::string& key) const {
  if (node_ && node_.IsMap())
    for (const auto& entry : node_)
      if (entry.first.Scalar() == key) return {entry.first, entry.second};
  return {YAML::Node(YAML::NodeType::Undefined), YAML::Node(YAML::NodeType::Undefined)};
}

YAML::Node ConfigReader::lookup(const std::string& key) const { return entry(key).second; }

bool ConfigReader::has(const std::string& key) const {
  YAML::Node value = lookup(key);
  return value && !value.IsNull();
}

YAML::Node ConfigReader::raw(const std::string& key) const {
  read_keys_.insert(key);
  return lookup(key);
}

void ConfigReader::fail(const std::string& key, const std::string& message, const YAML::Node* at) const {
  // Without an explicit node, a key present in this mapping is located at its own line, not the mapping's.
  // (Never assign one YAML::Node to another that refers into the document: yaml-cpp's assignment
  // overwrites the node referred to, and this mapping would become its key.)
  const YAML::Node key_node =
      at == nullptr && !key.empty() ? entry(key).first : YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node& where = at != nullptr ? *at : key_node ? key_node : node_;
  throw UserError(location(where) + ": " + (key.empty() ? path_ : key_path(key)) + ": " + message);
}

std::string seconds_range_text() {
  return "a positive number of seconds, at most " + std::to_string(static_cast<long long>(kMaxSeconds)) +
         " (about " + std::to_string(std::lround(kMaxSeconds / 86400)) + " days)";
}

std::string ConfigReader::name(const std::string& key, std::optional<std::string> fallback) {
  const std::string value = fallback ? optional<std::string>(key, *fallback) : required<std::string>(key);
  if (value.empty()) fail(key, "must not be empty");
  if (std::any_of(value.begin(), value.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
    fail(key, "must not hold line breaks or other control characters");
  return value;
}

double ConfigReader::optional_seconds(const std::string& key, double fallback) {
  const double seconds = optional<double>(key, fallback, seconds_range_text());
  if (!(seconds > 0 && seconds <= kMaxSeconds))
    fail(key, number_text(seconds) + " is out of range; accepted: " + seconds_range_text());
  return seconds;
}

namespace {

std::string count_range(std::int64_t lowest, std::int64_t largest) {
  return std::to_string(lowest) + " to " + std::to_string(largest);
}

std::string count_accepted(std::int64_t lowest, std::int64_t largest) {
  return "a whole number from " + count_range(lowest, largest);
}

}  // namespace

std::int64_t ConfigReader::in_count_range(const std::string& key, std::int64_t value, std::int64_t lowest,
                                          std::int64_t largest) const {
  if (value < lowest || value > largest)
    fail(key, std::to_string(value) + " is out of range; accepted: " + count_range(lowest, largest));
  return value;
}

std::int64_t ConfigReader::required_count(const std::string& key, std::int64_t lowest, std::int64_t largest) {
  return in_count_range(key, required<std::int64_t>(key, count_accepted(lowest, largest)), lowest, largest);
}

std::optional<std::int64_t> ConfigReader::maybe_count(const std::string& key, std::int64_t lowest,
                                                      std::int64_t largest) {
  const auto value = maybe<std::int64_t>(key, count_accepted(lowest, largest));
  if (value) in_count_range(key, *value, lowest, largest);
  return value;
}

std::int64_t ConfigReader::optional_count(const std::string& key, std::int64_t fallback, std::int64_t lowest,
                                          std::int64_t largest) {
  return in_count_range(key, optional<std::int64_t>(key, fallback, count_accepted(lowest, largest)), lowest,
                        largest);
}

void ConfigReader::fail_missing(const std::string& key, const std::string& what,
                                const std::string& accepted) const {
  if (node_ && node_.IsMap())
    for (const auto& entry : node_) {
      const std::string written = entry.first.Scalar();
      // A key already read is some other setting, however alike its name.
      if (read_keys_.count(written) || !looks_like_typo_of(written, key)) continue;
      throw UserError(location(entry.first) + ": " + key_path(key) + ": " + what + "; unknown key '" +
                      written + "' (did you mean " + key + "?)");
    }
  fail(key, what + (accepted.empty() ? "" : "; accepted: " + accepted));
}

ConfigReader ConfigReader::child(const std::string& key) {
  read_keys_.insert(key);
  YAML::Node value = lookup(key);
  if (!value) fail_missing(key, "missing required section");
  if (!value.IsMap()) fail(key, "expected a mapping of keys to values", &value);
  return ConfigReader(value, file_, key_path(key));
}

std::optional<ConfigReader> ConfigReader::maybe_child(const std::string& key) {
  read_keys_.insert(key);
  YAML::Node value = lookup(key);
  if (!value || value.IsNull()) return std::nullopt;
  if (!value.IsMap()) fail(key, "expected a mapping of keys to values", &value);
  return ConfigReader(value, file_, key_path(key));
}

std::vector<std::string> ConfigReader::keys() {
  std::vector<std::string> out;
  if (!node_ || !node_.IsMap()) return out;
  for (const auto& entry : node_) {
    out.push_back(entry.first.Scalar());
    read_keys_.insert(entry.first.Scalar());
  }
  return out;
}

void ConfigReader::finish(const std::vector<std::string>& accepted) const {
  if (!node_ || !node_.IsMap()) return;
  for (const auto& entry : node_) {
    const std::string& key = entry.first.Scalar();
    if (read_keys_.count(key)) continue;
    const std::string list = join(accepted, ", ");
    std::string meant;
    for (const auto& name : accepted)
      if (looks_like_typo_of(key, name) &&
          (meant.empty() || edit_distance(key, name) < edit_distance(key, meant)))
        meant = name;
    throw UserError(location(entry.first) + ": " + key_path(key) + ": unknown key" +
                    (meant.empty() ? "" : " (did you mean " + meant + "?)") +
                    (list.empty() ? "" : "; accepted: " + list));
  }
}

}  // namespace autotune
