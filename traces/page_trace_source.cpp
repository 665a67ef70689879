// @brief PageTraceSource: token lists to page lists (see page_trace_source.h).
#include "traces/page_trace_source.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "traces/step_validation.h"
#include "traces/trace_limits.h"

namespace hisparse::traces {
namespace {

/// Distinct pages of one layer list, ascending, into `pages` (cleared first).
void list_pages(const int32_t* list, int32_t k, int32_t page_size, std::vector<int32_t>& pages) {
  pages.clear();
  int32_t valid = k;
  while (valid > 0 && list[valid - 1] < 0) --valid;  // trailing padding
  if (valid > 0 && list[0] >= 0 && strictly_ascending(list, valid)) {
    // The commonest layout (the readers', generators' and indexers' sorted lists): pages come out ascending and
    // distinct by themselves, with one comparison per token and a division only where a new page starts.
    if (page_size == 1) {
      pages.assign(list, list + valid);
      return;
    }
    int64_t page_end = -1;
    for (int32_t i = 0; i < valid; ++i)
      if (list[i] >= page_end) {
        const int32_t page = list[i] / page_size;
        pages.push_back(page);
        page_end = (static_cast<int64_t>(page) + 1) * page_size;
      }
    return;
  }
  for (int32_t i = 0; i < k; ++i)
    if (list[i] >= 0) pages.push_back(list[i] / page_size);
  std::sort(pages.begin(), pages.end());
  pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
}

}  // namespace

void check_page_size(int64_t page_size, const std::string& what) {
  if (page_size < 1 || page_size > kMaxTopK)
    throw_error("{}: page size {} outside [1, {}] (tokens per page)", what, page_size, kMaxTopK);
}

int32_t widest_page_list(TraceSource& source, int32_t page_size) {
  check_page_size(page_size, source.meta().source);
  const int32_t L = source.meta().layers, K = source.meta().top_k;
  StepRecord rec;
  std::vector<int32_t> pages;
  int32_t widest = 0;
  while (source.next(rec))
    for (int32_t l = 0; l < L; ++l) {
      list_pages(rec.layer(l, K), K, page_size, pages);
      widest = std::max(widest, static_cast<int32_t>(pages.size()));
    }
  return widest;
}

PageTraceSource::PageTraceSource(std::unique_ptr<TraceSource> inner, int32_t page_size, int32_t width)
    : inner_(std::move(inner)), page_size_(page_size) {
  check_page_size(page_size, inner_->meta().source);
  if (width < 0) throw_error("{}: page width {} must be >= 0 (0: the widest list)", inner_->meta().source, width);
  if (width == 0) {
    const std::vector<int64_t> ids = inner_->request_ids();
    width = widest_page_list(*inner_, page_size);
    if (!ids.empty()) inner_->seek_request(ids.front());
    // An all-padding trace still needs a width of one for the swap-in (K >= 1).
    width = std::max(width, 1);
  }
  meta_ = inner_->meta();
  meta_.top_k = width;
  meta_.source = fmt::format("{} (pages of {} tokens)", inner_->meta().source, page_size);
}

bool PageTraceSource::next(StepRecord& out) {
  if (!inner_->next(tokens_)) return false;
  const int32_t L = inner_->meta().layers, K = inner_->meta().top_k, W = meta_.top_k;
  out.request_id = tokens_.request_id;
  out.step = tokens_.step;
  out.seq_len = pages_of(tokens_.seq_len, page_size_);
  out.positions.assign(static_cast<size_t>(L) * W, -1);
  for (int32_t l = 0; l < L; ++l) {
    list_pages(tokens_.layer(l, K), K, page_size_, pages_);
    if (static_cast<int32_t>(pages_.size()) > W)
      throw_error("{}: request {}, step {}, layer {}: the list touches {} pages of {} tokens, more than the page width {}",
                  inner_->meta().source, tokens_.request_id, tokens_.step, l, pages_.size(), page_size_, W);
    std::copy(pages_.begin(), pages_.end(), out.positions.begin() + static_cast<std::ptrdiff_t>(l) * W);
  }
  return true;
}

}  // namespace hisparse::traces
