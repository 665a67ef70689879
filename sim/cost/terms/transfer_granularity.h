// @brief Transfer granularity of the host pool (issue 32): SGLang backs a request's KV up in one batched copy of
// every layer after prefill, and in decode loads the misses one layer at a time, just before that layer runs
// (python/sglang/srt/mem_cache/memory_pool_host.py: backup_from_device_all_layer, load_to_device_per_layer; the
// kernels transfer_kv_all_layer* and transfer_kv_per_layer* of sgl-kernel/csrc/kvcacheio/transfer.cu). Both are
// priced here on the host path of one GPU: its PCIe link and its share of its NUMA node's DRAM bandwidth, reduced
// by the hardware's cross_node_factor when the host pool sits on the other node. The deployment's host layout
// (core/host_layout.h, HostPoolLayout) sets how many copy calls a transfer takes: the kernel layouts (layer_first,
// page_first) one kernel per call, page_first_direct one cudaMemcpyAsync per page per layer; the bytes are the same.
#pragma once

#include <cstdint>
#include <string>

#include "core/hardware_spec.h"
#include "core/host_layout.h"
#include "sim/engine/sim_time.h"

namespace hisparse::sim {

/// Where the host pool lives relative to the GPU that reads or writes it.
struct NumaPlacement {
  int gpus_sharing_node = 1;  // GPUs of the node copying at the same time (they split its DRAM bandwidth)
  bool local = true;          // pool bound to the GPU's own node (numactl --membind); false: the other node
};

/// Bytes/s one GPU moves to (to_device) or from the host pool: min(PCIe bulk rate of the direction,
/// dram_bytes_per_s_per_node / gpus_sharing_node × (local ? 1 : cross_node_factor)).
double host_path_bytes_per_s(const HardwareSpec& hw, bool to_device, const NumaPlacement& placement);

/// One way of moving rows between the device and the host pool, priced.
struct TransferCost {
  int64_t transfers = 0;   // copy operations (each pays the hardware's pcie.latency_ns)
  double bytes = 0;        // bytes moved in all
  double bytes_per_s = 0;  // host path rate (host_path_bytes_per_s)
  SimTime ns = 0;          // transfers × latency + bytes / rate
  std::string formula;     // the same with the numbers in
};

/// Copy calls of one host-pool transfer of `pages` pages over `layers` layers (none when `pages` is 0): the kernel
/// layouts one call per layer when `per_layer` (decode's loads, load_to_device_per_layer) or one call for every layer
/// (backup_from_device_all_layer); page_first_direct one call per page per layer either way.
int64_t host_copy_calls(HostPoolLayout layout, int64_t pages, int64_t layers, bool per_layer);

/// After prefill: `tokens` rows of every one of `layers` layers device → host, in pages of `page_rows` rows: one
/// batched copy (kernel layouts) or ceil(tokens / page_rows) × layers copies (page_first_direct).
TransferCost prefill_offload_cost(const HardwareSpec& hw, int64_t tokens, int64_t layers, int64_t row_bytes,
                                  const NumaPlacement& placement, HostPoolLayout layout = HostPoolLayout::kLayerFirst,
                                  int64_t page_rows = 1);
/// In decode: `rows_per_layer` misses loaded host → device before each of `layers` layers: one copy per layer (kernel
/// layouts), or one per missed row per layer (page_first_direct: a missed row is a page run of its own).
TransferCost decode_per_layer_cost(const HardwareSpec& hw, int64_t rows_per_layer, int64_t layers, int64_t row_bytes,
                                   const NumaPlacement& placement,
                                   HostPoolLayout layout = HostPoolLayout::kLayerFirst);

}  // namespace hisparse::sim
