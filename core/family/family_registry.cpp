// @brief The family registry (core/family/family_registry.h). Adding a family: its file in core/family/ defines a
// make_<name>_family() and one line of HISPARSE_FAMILIES below lists it (docs/families.md).
#include "core/family/family_registry.h"

#include <mutex>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse {

// The built-in families, one line each, in the order claims() is asked: the most specific first (DeepSeek-V4 before
// MLA, its layers are MLA-shaped; Double Sparsity before plain GQA, a deployment setting on a GQA model). X(name)
// stands for make_<name>_family(), defined in core/family/<name>_family.cpp; adding a family is its file and one line
// here (docs/families.md).
#define HISPARSE_FAMILIES(X) \
  X(dsv4)                    \
  X(mla_dsa)                 \
  X(mla)                     \
  X(double_sparse)           \
  X(gqa_swa)                 \
  X(gqa_mamba)               \
  X(gqa)

#define HISPARSE_DECLARE_FAMILY(name) std::unique_ptr<ModelFamily> make_##name##_family();
HISPARSE_FAMILIES(HISPARSE_DECLARE_FAMILY)
#undef HISPARSE_DECLARE_FAMILY

namespace {

struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<ModelFamily>> families;
};

Registry& registry() {
  static Registry* r = [] {
    auto* out = new Registry;
#define HISPARSE_FAMILY_MAKER(name) make_##name##_family,
    for (auto make : {HISPARSE_FAMILIES(HISPARSE_FAMILY_MAKER)}) out->families.push_back(make());
#undef HISPARSE_FAMILY_MAKER
    return out;
  }();
  return *r;
}

std::string names_of(const std::vector<std::unique_ptr<ModelFamily>>& fs) {
  std::string out;
  for (const auto& f : fs) out += (out.empty() ? "" : ", ") + std::string(f->name());
  return out;
}

}  // namespace

const ModelFamily* find_family(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const auto& f : r.families)
    if (name == f->name()) return f.get();
  return nullptr;
}

const ModelFamily& family_of(const Scenario& s) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!s.model.family.empty()) {
    for (const auto& f : r.families)
      if (s.model.family == f->name()) return *f;
    throw_error("{}: model {}: family: got '{}', expected one of {}", s.source, s.model.name, s.model.family,
                names_of(r.families));
  }
  for (const auto& f : r.families)
    if (f->claims(s)) return *f;
  throw_error("{}: model {}: no model family describes it; expected one of {}", s.source, s.model.name,
              names_of(r.families));
}

const ModelFamily& default_family() {
  static const ModelFamily* f = find_family("mla+dsa");
  return *f;
}

std::vector<std::string> family_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> out;
  for (const auto& f : r.families) out.emplace_back(f->name());
  return out;
}

void register_family(std::unique_ptr<ModelFamily> family) {
  if (!family) throw_error("register_family: got no family");
  if (find_family(family->name())) throw_error("register_family: '{}' is already registered", family->name());
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.families.insert(r.families.begin(), std::move(family));
}

}  // namespace hisparse
