#include "search/space_yaml.hpp"

namespace autotune::search {

namespace {

const char* kAccepted =
    "a list of values, {range: [lo, hi], step: s}, {pow2: [lo, hi]} or {categorical: [a, b, ...]}";

ParamValue scalar_value(const ConfigReader& reader, const std::string& key, const YAML::Node& node) {
  if (!node.IsScalar()) reader.fail(key, "expected a number or a string in the value list", &node);
  std::int64_t i = 0;
  double d = 0;
  if (YAML::convert<std::int64_t>::decode(node, i)) return i;
  if (YAML::convert<double>::decode(node, d)) return d;
  return node.Scalar();
}

std::int64_t integer(const ConfigReader& reader, const std::string& key, const YAML::Node& node) {
  std::int64_t i = 0;
  if (!node.IsScalar() || !YAML::convert<std::int64_t>::decode(node, i))
    reader.fail(key, "expected an integer", &node);
  return i;
}

std::pair<std::int64_t, std::int64_t> bounds(const ConfigReader& reader, const std::string& key,
                                             const YAML::Node& node) {
  if (!node.IsSequence() || node.size() != 2) reader.fail(key, "expected [lo, hi]", &node);
  return {integer(reader, key, node[0]), integer(reader, key, node[1])};
}

ParameterSpec parse_parameter(ConfigReader& space, const std::string& name) {
  const YAML::Node node = space.raw(name);
  try {
    if (node.IsSequence()) {
      std::vector<ParamValue> values;
      bool strings = false, numbers = false;
      for (const auto& item : node) {
        values.push_back(scalar_value(space, name, item));
        (std::holds_alternative<std::string>(values.back()) ? strings : numbers) = true;
      }
      if (strings && numbers)
        space.fail(name, "mixes numbers and strings; use {categorical: [...]} for strings", &node);
      return ParameterSpec::ordered(name, std::move(values));
    }
    if (node.IsMap()) {
      ConfigReader domain(node, space.file(), space.key_path(name));
      if (domain.has("range")) {
        const auto [lo, hi] = bounds(domain, "range", domain.raw("range"));
        const std::int64_t step = domain.optional<std::int64_t>("step", 1);
        domain.finish({"range", "step"});
        return ParameterSpec::range(name, lo, hi, step);
      }
      if (domain.has("pow2")) {
        const auto [lo, hi] = bounds(domain, "pow2", domain.raw("pow2"));
        domain.finish({"pow2"});
        return ParameterSpec::powers_of_two(name, lo, hi);
      }
      if (domain.has("categorical")) {
        const auto values = domain.required<std::vector<std::string>>("categorical");
        domain.finish({"categorical"});
        return ParameterSpec::categorical(name, values);
      }
      domain.finish({"range", "step", "pow2", "categorical"});
    }
  } catch (const UserError& e) {
    const std::string message = e.what();
    if (message.rfind(space.file(), 0) == 0) throw;  // already located
    space.fail(name, message, &node);
  }
  space.fail(name, std::string("not a parameter domain; accepted: ") + kAccepted, &node);
}

}  // namespace

SearchSpace parse_space(ConfigReader& space_section, const std::vector<std::string>& constraints,
                        const std::map<std::string, double>& constants) {
  std::vector<ParameterSpec> parameters;
  for (const auto& name : space_section.keys()) parameters.push_back(parse_parameter(space_section, name));
  if (parameters.empty()) space_section.fail("", "no parameter; accepted: name: domain, one per line");
  space_section.finish();
  return SearchSpace(std::move(parameters), constraints, constants);
}

SearchSpace parse_space_and_constraints(ConfigReader& document,
                                        const std::map<std::string, double>& constants) {
  ConfigReader space = document.child("space");
  const YAML::Node list = document.raw("constraints");
  std::vector<std::string> constraints;
  if (list && !list.IsNull()) {
    if (!list.IsSequence()) document.fail("constraints", "expected a list of expressions", &list);
    for (const auto& item : list) {
      if (!item.IsScalar()) document.fail("constraints", "expected an expression string", &item);
      constraints.push_back(item.Scalar());
    }
  }
  std::vector<ParameterSpec> parameters;
  for (const auto& name : space.keys()) parameters.push_back(parse_parameter(space, name));
  if (parameters.empty()) space.fail("", "no parameter; accepted: name: domain, one per line");
  space.finish();
  // A constraint error is located at its own list item (file:line).
  try {
    return SearchSpace(std::move(parameters), constraints, constants);
  } catch (const UserError& e) {
    const std::string message = e.what();
    for (std::size_t i = 0; i < constraints.size(); ++i) {
      if (message.find("'" + constraints[i] + "'") != std::string::npos &&
          message.rfind("constraint", 0) == 0) {
        const YAML::Node item = list[i];
        document.fail("constraints[" + std::to_string(i) + "]", message, &item);
      }
    }
    if (list && !list.IsNull()) document.fail("constraints", message, &list);
    throw;
  }
}

SearchSpace load_space_file(const std::string& path, const std::map<std::string, double>& constants) {
  ConfigReader document(load_yaml_file(path), path);
  SearchSpace space = parse_space_and_constraints(document, constants);
  document.finish({"space", "constraints"});
  return space;
}

}  // namespace autotune::search
