// @brief The index of the op tables (scenarios/measurements/engine_ops.yaml): which tables exist, for which hardware
// and how many GPUs, and the provenance of each (date, command, library commits, device log), read strictly; and the
// tables of one hardware loaded from it.
#pragma once

#include <string>
#include <vector>

#include "sim/optables/op_table.h"

namespace hisparse::sim {

struct OpTableIndex {
  std::string path;
  std::vector<OpTableEntry> tables;
};

/// Strict: `tables:` (a list, possibly empty) of {file, hardware, gpus, date, command, libraries, device_log}, every
/// field required and non-empty (an error names the index, the entry and the field); `file` must exist beside the
/// index and its name's date, if it has one, be `date`; `hardware` must be a hardware YAML of the scenario
/// directories. A file engine_ops_*.csv in the index's folder that no entry lists is an error too (a table without
/// provenance).
OpTableIndex load_op_table_index(const std::string& path);

/// Every table of the index read and checked (a bad one fails whatever the hardware asked), keeping those measured
/// on `hardware` (all when empty).
OpTableSet load_op_tables(const OpTableIndex& index, const std::string& hardware = "");

/// The bundled index: the first scenario directory holding measurements/engine_ops.yaml ("" when none does).
std::string default_op_table_index();

}  // namespace hisparse::sim
