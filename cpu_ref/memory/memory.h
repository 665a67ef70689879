// @brief Umbrella header of the CPU-reference memory system (SGLang's pools and HiSparse's device buffers).
#pragma once

#include "cpu_ref/memory/allocator_common.h"
#include "cpu_ref/memory/hisparse_allocator.h"
#include "cpu_ref/memory/hisparse_coordinator.h"
#include "cpu_ref/memory/host_pool.h"
#include "cpu_ref/memory/paged_allocator.h"
#include "cpu_ref/memory/req_to_token_pool.h"
#include "cpu_ref/memory/token_allocator.h"
