// @brief The family registry: name → ModelFamily, and which family a scenario's model belongs to. The only place a
// family is named by string (core/family/family_registry.cpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/family/model_family.h"

namespace hisparse {

/// The family of the scenario's model: the one its model YAML names (`family:`), else the first registered family
/// that claims it. Throws (naming the source and the known families) when none does.
const ModelFamily& family_of(const Scenario& scenario);
/// The family registered under `name`, or nullptr.
const ModelFamily* find_family(const std::string& name);
/// The family a budget built without a scenario falls back to (MLA + DSA, the model HiSparse was written for).
const ModelFamily& default_family();
/// Every registered name, in the order claims() is asked.
std::vector<std::string> family_names();
/// Adds a family ahead of the built-in ones (a test's toy family, an out-of-tree model); the registry owns it.
/// Throws when the name is taken.
void register_family(std::unique_ptr<ModelFamily> family);

}  // namespace hisparse
