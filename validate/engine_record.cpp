// @brief The engine-record check (engine_record.h): every case of the record, in the order the report prints them.
#include "validate/engine_record.h"

namespace hisparse::validation {

bool EngineCheckResult::passed() const {
  for (const auto& r : rows)
    if (!r.pass) return false;
  return !rows.empty();
}

EngineCheckResult check_engine_record(const EngineRecord& record) {
  EngineCheckResult out;
  out.source = record.source;
  check_engine_v2(record, out);
  check_engine_flashmla(record, out);
  check_engine_deepgemm(record, out);
  return out;
}

}  // namespace hisparse::validation
