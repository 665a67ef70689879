// @brief Loading the DeltaKV reconstruction calibration (see deltakv_calibration.h).
#include "sim/calibration/deltakv_calibration.h"

#include "core/yaml_reader.h"

namespace hisparse::sim {

DeltaKvCalibration load_deltakv_calibration(const std::string& path) {
  DeltaKvCalibration c;
  c.path = path;
  StrictMap root(load_yaml_file(path), path, "");
  StrictMap m = root.child("deltakv_reconstruction");
  for (const char* key : {"device", "date", "source", "dim", "refs", "rows_per_call", "ns_per_row", "hbm_bytes_per_s"})
    m.require(key);
  m.get("device", &c.device);
  m.get("date", &c.date);
  m.get("source", &c.source);
  m.get("dim", &c.dim, 1, 1 << 16);
  m.get("refs", &c.refs, 1, 64);
  m.get("rows_per_call", &c.rows_per_call, 1, int64_t(1) << 32);
  m.get("ns_per_row", &c.ns_per_row, 1e-3, 1e6);
  m.get("hbm_bytes_per_s", &c.hbm_bytes_per_s, 1e9, 1e14, Unit::kBytesPerSecond);
  m.finish();
  root.finish();
  return c;
}

}  // namespace hisparse::sim
