// @brief The host threads of `replay --backend cuda` (--threads): the project's TaskPool (core/parallel/task_pool.h)
// under the replay command's name, so that a bad --threads is reported as replay's.
#pragma once

#include "core/parallel/task_pool.h"

namespace hisparse::sim::replay_detail {

class ReplayTaskPool : public TaskPool {
 public:
  explicit ReplayTaskPool(int threads) : TaskPool(threads, "replay") {}
};

}  // namespace hisparse::sim::replay_detail
