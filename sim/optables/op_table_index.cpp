// @brief Reading the op-table index strictly and loading its tables (see op_table_index.h).
#include "sim/optables/op_table_index.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "core/yaml_reader.h"

namespace hisparse::sim {
namespace fs = std::filesystem;
namespace {

/// YYYY-MM-DD (digits and dashes in place; plain checks: GCC 12 reports std::regex's internals as maybe-uninitialized
/// in the sanitizer build).
bool is_iso_date(const std::string& s) {
  if (s.size() != 10) return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (i == 4 || i == 7 ? s[i] != '-' : !(s[i] >= '0' && s[i] <= '9')) return false;
  return true;
}

/// The date a file name ends with (`…_YYYY-MM-DD.csv`), "" when it has none.
std::string date_of_name(const std::string& name) {
  const std::string ext = ".csv";
  if (name.size() < 11 + ext.size() || name.compare(name.size() - ext.size(), ext.size(), ext) != 0) return "";
  const std::string date = name.substr(name.size() - ext.size() - 10, 10);
  return name[name.size() - ext.size() - 11] == '_' && is_iso_date(date) ? date : "";
}

}  // namespace

OpTableIndex load_op_table_index(const std::string& path) {
  OpTableIndex index;
  index.path = path;
  StrictMap root(load_yaml_file(path), path, "");
  root.require("tables");
  const YAML::Node list = root.sequence("tables");
  root.finish();
  const fs::path dir = fs::path(path).parent_path();
  const std::vector<std::string> hardware = list_scenarios("hardware");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = fmt::format("tables[{}]", i);
    if (!list[i].IsMap()) throw_error("{}: {} is {} (expected a mapping {{file, hardware, gpus, date, command, "
                                      "libraries, device_log}})", path, at, describe_node(list[i]));
    StrictMap e(list[i], path, at);
    OpTableEntry t;
    // Every field is the table's provenance: none may be left out or empty.
    for (const char* key : {"file", "hardware", "gpus", "date", "command", "libraries", "device_log"})
      if (!e.has(key))
        throw_error("{}: {}{} has no '{}' (every table needs its provenance: file, hardware, gpus, date, command, "
                    "libraries, device_log)", path, at, list[i]["file"] ? " (" + list[i]["file"].as<std::string>() + ")" : "",
                    key);
    e.get("file", &t.file);
    e.get("hardware", &t.hardware);
    e.get("gpus", &t.gpus, 1, 8);
    e.get("date", &t.date);
    e.get("command", &t.command);
    e.get("device_log", &t.device_log);
    const std::string named = fmt::format("{} ({})", at, t.file);
    for (auto [key, value] : {std::pair{"file", &t.file}, std::pair{"hardware", &t.hardware},
                              std::pair{"date", &t.date}, std::pair{"command", &t.command},
                              std::pair{"device_log", &t.device_log}})
      if (value->empty()) throw_error("{}: {}.{} is empty (expected the table's provenance)", path, named, key);
    if (!is_iso_date(t.date))
      throw_error("{}: {}.date is '{}' (expected YYYY-MM-DD)", path, named, t.date);
    const std::string named_date = date_of_name(fs::path(t.file).filename().string());
    if (!named_date.empty() && named_date != t.date)
      throw_error("{}: {}.date is {} but the file name says {} (expected the run's date in both)", path, named, t.date,
                  named_date);
    if (std::find(hardware.begin(), hardware.end(), t.hardware) == hardware.end())
      throw_error("{}: {}.hardware is '{}' (expected a hardware YAML stem of the scenario directories: {})", path,
                  named, t.hardware, fmt::join(hardware, ", "));
    const YAML::Node libs = list[i]["libraries"];
    e.child("libraries");  // read here, key by key
    if (!libs.IsMap() || libs.size() == 0)
      throw_error("{}: {}.libraries is {} (expected a mapping library: commit, at least one)", path, named,
                  describe_node(libs));
    for (const auto& kv : libs) {
      const std::string name = kv.first.as<std::string>();
      if (!kv.second.IsScalar() || kv.second.as<std::string>().empty())
        throw_error("{}: {}.libraries.{} is {} (expected its commit or version)", path, named, name,
                    describe_node(kv.second));
      t.libraries[name] = kv.second.as<std::string>();
    }
    e.finish();
    const fs::path p = fs::path(t.file).is_absolute() ? fs::path(t.file) : dir / t.file;
    if (!fs::exists(p)) throw_error("{}: {}.file: no file {}", path, named, p.string());
    t.path = p.lexically_normal().string();
    for (const OpTableEntry& other : index.tables)
      if (other.path == t.path) throw_error("{}: {} is listed twice", path, t.file);
    index.tables.push_back(std::move(t));
  }
  // A table the collector wrote but nobody indexed has no provenance: refuse it rather than leave it unread.
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(dir.empty() ? fs::path(".") : dir, ec)) {
    const std::string name = f.path().filename().string();
    if (name.rfind("engine_ops_", 0) != 0 || f.path().extension() != ".csv") continue;
    const std::string p = f.path().lexically_normal().string();
    const bool listed = std::any_of(index.tables.begin(), index.tables.end(), [&](const OpTableEntry& t) {
      return fs::equivalent(t.path, p, ec);
    });
    if (!listed)
      throw_error("{}: {} is not listed under tables (expected an entry with its hardware, gpus, date, command, "
                  "libraries and device_log: a table without provenance is not read)", path, name);
  }
  return index;
}

OpTableSet load_op_tables(const OpTableIndex& index, const std::string& hardware) {
  OpTableSet set;
  set.set_index_path(index.path);
  for (const OpTableEntry& t : index.tables) {
    std::vector<OpRow> rows = read_op_table_csv(t);  // every table is checked, whichever hardware is asked
    if (!hardware.empty() && t.hardware != hardware) continue;
    set.add_table(std::make_shared<const OpTableEntry>(t), std::move(rows));
  }
  return set;
}

std::string default_op_table_index() {
  for (const std::string& dir : scenario_dirs()) {
    const fs::path p = fs::path(dir) / "measurements" / "engine_ops.yaml";
    if (fs::exists(p)) return p.lexically_normal().string();
  }
  return "";
}

}  // namespace hisparse::sim
