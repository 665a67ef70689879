// @brief The out-of-memory error: says what was requested, what is available and what could be evicted.
#include "cpu_ref/memory/allocator_common.h"

#include <fmt/format.h>

namespace hisparse::cpu_ref {

OutOfMemoryError::OutOfMemoryError(const std::string& what_pool, int64_t requested, int64_t available,
                                   int64_t evictable)
    : Error(fmt::format("{}: out of memory: requested {} tokens, available {} tokens, evictable {} tokens",
                        what_pool, requested, available, evictable)),
      requested_(requested),
      available_(available),
      evictable_(evictable) {}

}  // namespace hisparse::cpu_ref
