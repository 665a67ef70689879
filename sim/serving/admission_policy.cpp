// @brief The admission policies of admission_policy.h: pools, logical and v2 under the older rules (the ledger);
// v2 under the current rules is admission_v2_coordinator.cpp.
#include "sim/serving/admission_policy.h"

#include <algorithm>

#include "sim/serving/rank.h"

namespace hisparse::sim::serving {

namespace {

/// `pools` (HiSparse): every pool checked and taken up front, host pages included, so the KV never fails to land.
/// Full KV under any check: the logical and device pools, no host pool.
class PoolsAdmission : public AdmissionPolicy {
 public:
  explicit PoolsAdmission(bool check_host) : check_host_(check_host) {}
  AdmissionCheck check() const override { return AdmissionCheck::kPools; }
  AdmissionAsk ask(const PoolNeed& need, int64_t, int64_t, const Rank&, int64_t) const override {
    AdmissionAsk a;
    a.need = a.check = need;
    if (!check_host_) a.need.host = a.check.host = 0;
    return a;
  }
  bool never_fits(const AdmissionAsk& a, const PoolSizes& s, const Rank&) const override {
    return a.check.logical > s.logical || a.check.device > s.device ||
           (check_host_ && a.check.host > s.host);
  }
  bool fits(const Rank& g, const AdmissionAsk&, const PoolNeed& room) const override {
    return g.pools().fits(room, check_host_);
  }
  AdmissionTaken take(Rank& g, int64_t i, const AdmissionAsk& a, int64_t) const override {
    return {g.pools().take(i, a.need)};
  }
  int64_t land(Rank& g, int64_t i, int64_t tokens) const override { return g.pools().grow_host(i, tokens); }
  bool lands_in_decode() const override { return false; }

 private:
  bool check_host_;
};

/// `logical`: SGLang's scheduler before the fix: the logical and device pools only; host pages are taken as the KV
/// lands (the RDMA target, staging, one page per page_size decoded tokens) and can run out.
class LogicalAdmission : public PoolsAdmission {
 public:
  LogicalAdmission() : PoolsAdmission(false) {}
  AdmissionCheck check() const override { return AdmissionCheck::kLogicalOnly; }
  bool lands_in_decode() const override { return true; }
};

/// `v2` under the older rules: SGLang's HiCache-backing ledger (admission_ledger.h): an eligible request claims its page-aligned prompt
/// (reservable = host + usable device − claimed); an ineligible one runs as a standard request with its whole KV in
/// device rows and no claim. Homes are taken as the KV lands, host first, then device.
class V2Admission : public AdmissionPolicy {
 public:
  AdmissionCheck check() const override { return AdmissionCheck::kV2; }
  AdmissionAsk ask(const PoolNeed& need, int64_t input, int64_t output, const Rank& any, int64_t page) const override {
    AdmissionAsk a;
    a.need = a.check = need;
    a.need.host = 0;
    a.check.host = 0;
    const AdmissionLedger* ledger = any.ledger();
    a.claim = ledger && ledger->eligible(input);
    a.tree = a.claim ? ledger->tree_len(input) : 0;
    if (ledger && !a.claim) {
      const int64_t whole = (input + output + page - 1) / page * page;
      a.need.device = a.check.device = std::max(a.need.device, whole);
    }
    return a;
  }
  bool never_fits(const AdmissionAsk& a, const PoolSizes& s, const Rank& any) const override {
    return a.check.logical > s.logical || a.check.device > s.device ||
           (a.claim && a.tree > AdmissionLedger(any.ledger()->sizes()).reservable_left());
  }
  bool fits(const Rank& g, const AdmissionAsk& a, const PoolNeed& room) const override {
    return g.pools().fits(room, false) && !(a.claim && a.tree > g.ledger()->reservable_left());
  }
  AdmissionTaken take(Rank& g, int64_t i, const AdmissionAsk& a, int64_t output) const override {
    if (!g.pools().take(i, a.need)) return {};
    if (a.claim) g.ledger()->claim(i, a.tree, output);
    return {true};
  }
  int64_t land(Rank& g, int64_t i, int64_t tokens) const override {
    // A claimed request's tokens take a home, host first, then device; a standard one keeps its KV in device rows.
    if (!g.ledger()) return g.pools().grow_host(i, tokens);
    if (!g.ledger()->claimed(i)) return 0;
    return g.pools().grow_home(i, tokens);
  }
  bool lands_in_decode() const override { return true; }
};

}  // namespace

void AdmissionPolicy::release(Rank& g, int64_t i) const {
  if (g.ledger()) g.ledger()->release(i);
}

bool AdmissionPolicy::keeps_device_rows(const Rank& g, int64_t i) const {
  return g.ledger() && !g.ledger()->claimed(i);
}

std::unique_ptr<AdmissionPolicy> make_admission_policy(AdmissionCheck check, bool hisparse, V2Coordinator rules) {
  if (!hisparse) return std::make_unique<PoolsAdmission>(false);
  switch (check) {
    case AdmissionCheck::kLogicalOnly: return std::make_unique<LogicalAdmission>();
    case AdmissionCheck::kV2:
      if (rules == V2Coordinator::kCurrent) return make_v2_coordinator_admission();
      return std::make_unique<V2Admission>();
    case AdmissionCheck::kPools: break;
  }
  return std::make_unique<PoolsAdmission>(true);
}

}  // namespace hisparse::sim::serving
