#pragma once
// A name-keyed registry for an extension point (search strategies, kernel
// families, measurement-target kinds, skills). `autotune kernels|targets|skills`
// and the goal reader list a registry, so what they show and accept is what is
// registered.
//
// Every extension point is filled the same way: a file defines one entry and
// registers it with a static Registration object at namespace scope,
//   const Registration<FamilySpec> registration(family_registry(), "exp", make_exp_family());
// so adding an entry is adding a file. The module's library is linked whole
// (autotune_module(... WHOLE_ARCHIVE), cmake/modules.cmake): objects that
// nothing refers to would otherwise be dropped by the linker with their
// registrations.
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/text.hpp"

namespace autotune {

template <class Entry>
class Registry {
 public:
  explicit Registry(std::string kind) : kind_(std::move(kind)) {}

  void add(const std::string& name, Entry entry) {
    if (!entries_.emplace(name, std::move(entry)).second)
      throw InternalError(kind_ + " '" + name + "' registered twice");
  }
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }

  // Throws a UserError naming what is accepted when `name` is unknown.
  const Entry& get(const std::string& name) const {
    auto it = entries_.find(name);
    if (it == entries_.end())
      throw UserError("unknown " + kind_ + " '" + name + "' (accepted: " + joined_names() + ")");
    return it->second;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, entry] : entries_) out.push_back(name);
    return out;
  }
  std::string joined_names() const {
    return join(entries_, ", ", [](const auto& entry) { return entry.first; });
  }
  const std::map<std::string, Entry>& entries() const { return entries_; }
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
  std::map<std::string, Entry> entries_;
};

template <class Entry>
struct Registration {
  // `registry` is a function-local static (first use builds it), so entries
  // registered from other files' static objects never meet an unbuilt registry.
  Registration(Registry<Entry>& registry, const std::string& name, Entry entry) {
    registry.add(name, std::move(entry));
  }
};

}  // namespace autotune
