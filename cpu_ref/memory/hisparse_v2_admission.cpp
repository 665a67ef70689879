// @brief HiSparseV2Admission (see hisparse_v2_admission.h): admit_request's checks in its order. Current and older
// differ only in the short-prefix gate; the host, indexer and temp-buffer fallbacks are in both commits.
#include "cpu_ref/memory/hisparse_v2_admission.h"

#include "core/error.h"

namespace hisparse::cpu_ref {

const char* v2_admit_name(V2Admit a) {
  switch (a) {
    case V2Admit::kV2: return "v2";
    case V2Admit::kNoWholePage: return "standard: no whole page";
    case V2Admit::kShorterThanBuffer: return "standard: prefix shorter than the buffer";
    case V2Admit::kHostCapacity: return "standard: host capacity";
    case V2Admit::kIndexerPages: return "standard: indexer pages";
    case V2Admit::kTempBuffer: return "standard: temp buffer";
  }
  return "?";
}

HiSparseV2Admission::HiSparseV2Admission(const V2AdmissionSizes& sizes) : sizes_(sizes) {
  if (sizes.page < 1 || sizes.H < 1 || sizes.host_capacity_tokens < 0 || sizes.indexer_pages < 0)
    throw_error("hisparse-v2 admission: page {}, H {}, host capacity {} tokens, indexer pages {} (expected page, H "
                ">= 1 and capacities >= 0)",
                sizes.page, sizes.H, sizes.host_capacity_tokens, sizes.indexer_pages);
  indexer_free_ = sizes.indexer_pages;
}

V2AdmitResult HiSparseV2Admission::decide(int64_t seq_tokens, int64_t device_room_tokens) const {
  if (seq_tokens < 0 || device_room_tokens < 0)
    throw_error("hisparse-v2 admission: {} tokens, device room {} (expected >= 0)", seq_tokens, device_room_tokens);
  const int64_t pages = seq_tokens / sizes_.page, tree_len = pages * sizes_.page;
  V2AdmitResult r;
  if (pages == 0) r.outcome = V2Admit::kNoWholePage;
  else if (sizes_.rules == V2Coordinator::kCurrent && tree_len < sizes_.H) r.outcome = V2Admit::kShorterThanBuffer;
  else if (sizes_.host_capacity_tokens > 0 && host_reserved_ + tree_len > sizes_.host_capacity_tokens)
    r.outcome = V2Admit::kHostCapacity;
  else if (pages > indexer_free_) r.outcome = V2Admit::kIndexerPages;
  else if (device_room_tokens < sizes_.H) r.outcome = V2Admit::kTempBuffer;  // the indexer pages go back
  if (r.outcome != V2Admit::kV2) return r;
  r.evicted_end = static_cast<int32_t>(tree_len);
  r.temp_tokens = sizes_.H;
  return r;
}

V2AdmitResult HiSparseV2Admission::admit(int64_t id, int64_t seq_tokens, int64_t device_room_tokens) {
  if (seq_tokens < 0 || device_room_tokens < 0)
    throw_error("hisparse-v2 admission: request {}: {} tokens, device room {} (expected >= 0)", id, seq_tokens,
                device_room_tokens);
  if (active_.count(id)) throw_error("hisparse-v2 admission: request {} is already admitted as V2", id);
  const V2AdmitResult r = decide(seq_tokens, device_room_tokens);
  if (r.outcome != V2Admit::kV2) return r;
  indexer_free_ -= r.evicted_end / sizes_.page;
  host_reserved_ += r.evicted_end;
  active_[id] = r.evicted_end;
  return r;
}

int64_t HiSparseV2Admission::finish(int64_t id) {
  const auto it = active_.find(id);
  if (it == active_.end()) return 0;
  host_reserved_ -= it->second;
  indexer_free_ += it->second / sizes_.page;
  active_.erase(it);
  return sizes_.H;
}

}  // namespace hisparse::cpu_ref
