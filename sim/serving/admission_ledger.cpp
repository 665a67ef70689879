// @brief AdmissionLedger's arithmetic (see admission_ledger.h for the rule and its source).
#include "sim/serving/admission_ledger.h"

#include <algorithm>

#include "core/error.h"

namespace hisparse::sim {

AdmissionLedger::AdmissionLedger(const LedgerSizes& s) : sizes_(s) {
  if (s.page <= 0) throw_error("admission ledger: page size {} must be positive", s.page);
  if (s.host < 0 || s.device < 0 || s.temp_slot < 0 || s.chunk < 0)
    throw_error("admission ledger: sizes must not be negative (host {}, device {}, temp buffer {}, chunk {})", s.host,
                s.device, s.temp_slot, s.chunk);
}

int64_t AdmissionLedger::tree_len(int64_t prompt) const { return prompt / sizes_.page * sizes_.page; }

bool AdmissionLedger::eligible(int64_t prompt) const {
  const int64_t t = tree_len(prompt);
  return t > 0 && t >= sizes_.temp_slot;
}

int64_t AdmissionLedger::usable_device() const {
  const int64_t with_candidate = live() + 1;
  int64_t reserve = with_candidate * (sizes_.temp_slot + sizes_.page) + sizes_.chunk;
  for (const Claim& c : claims_) reserve += c.decode_reserve;
  return std::max<int64_t>(0, sizes_.device - reserve);
}

int64_t AdmissionLedger::reservable_left() const {
  int64_t claimed = 0;
  for (const Claim& c : claims_) claimed += c.tree_len;
  return sizes_.host + usable_device() - claimed;
}

void AdmissionLedger::claim(int64_t owner, int64_t tree_len, int64_t decode_reserve) {
  if (claimed(owner)) throw_error("admission ledger: request {} already holds a claim", owner);
  if (tree_len < 0 || decode_reserve < 0)
    throw_error("admission ledger: request {} claims {} tokens with a decode reserve of {}", owner, tree_len, decode_reserve);
  claims_.push_back(Claim{owner, tree_len, decode_reserve});
}

bool AdmissionLedger::claimed(int64_t owner) const {
  return std::any_of(claims_.begin(), claims_.end(), [owner](const Claim& c) { return c.owner == owner; });
}

void AdmissionLedger::release(int64_t owner) {
  claims_.erase(std::remove_if(claims_.begin(), claims_.end(), [owner](const Claim& c) { return c.owner == owner; }),
                claims_.end());
}

}  // namespace hisparse::sim
