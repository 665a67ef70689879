// @brief What `hisparse advise` recommends and the table of settings it prints under each context mix, as rows of
// standard types. One function each fills them from an Advice; the terminal text and Python's AdviseResult (bound
// field by field, `to_pandas()`) both read these rows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hisparse {
struct Scenario;
}

namespace hisparse::sim {

struct Advice;

/// The recommendation for one context mix (advise.json's "recommended", in brief).
struct AdviceRecommendation {
  std::string context;                 // the mix's label ("16K", or the workload's)
  bool fits = false;                   // false: no setting fits this mix (every other field empty)
  std::string setting;                 // "full KV" or "HiSparse H=4096 ratio=5"
  std::string mode;                    // full | hisparse
  int32_t device_buffer_size = 0;      // 0 for full KV
  int32_t host_to_device_ratio = 0;    // 0 for full KV
  int64_t concurrency = 0;             // per decode instance, = SGLang's --max-running-requests
  std::string binding_limit;
  double goodput_tokens_per_s = 0;     // per decode instance (modelled: decode-only steady state at full batch)
  double tpot_ms = 0;
  std::string sglang_flags;            // the flags to launch SGLang with
};

/// One line of the settings table under a mix: per device_buffer_size its best ratio (buffer_sweep), full KV first.
struct AdviceTableRow {
  std::string context;                 // the mix's label
  std::string setting;
  std::string mode;
  int32_t device_buffer_size = 0;      // 0 for full KV
  int32_t host_to_device_ratio = 0;    // 0 for full KV
  int64_t concurrency = 0;             // per decode instance
  std::string binding_limit;
  double goodput_tokens_per_s = 0;
  double vs_recommended = 0;           // goodput ÷ the recommendation's (0 when that is 0)
  double tpot_ms = 0;
  double hbm_bytes_per_request = 0;
  bool recommended = false;
};

AdviceRecommendation advice_recommendation(const Advice& advice, const Scenario& s);
/// The table's rows for one mix (none when nothing fits it: the CLI prints no table there).
std::vector<AdviceTableRow> advice_table(const Advice& advice);
/// The table as `hisparse advise` prints it (rows of one mix).
std::string advice_table_text(const std::vector<AdviceTableRow>& rows);

}  // namespace hisparse::sim
