// @brief Transfer granularity: the batched all-layer offload after prefill and the per-layer loads of decode,
// priced on one GPU's host path (see transfer_granularity.h).
#include "sim/cost/terms/transfer_granularity.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse::sim {
namespace {

TransferCost priced(const HardwareSpec& hw, int64_t transfers, double bytes, bool to_device, const NumaPlacement& p) {
  TransferCost c;
  c.transfers = transfers;
  c.bytes = bytes;
  c.bytes_per_s = host_path_bytes_per_s(hw, to_device, p);
  const double ns = static_cast<double>(transfers) * static_cast<double>(hw.pcie.latency_ns) + bytes / c.bytes_per_s * 1e9;
  c.ns = static_cast<SimTime>(std::llround(ns));
  c.formula = fmt::format("transfers × latency + bytes / rate = {} × {} ns + {:.0f} B / {:.4g} GB/s", transfers,
                          hw.pcie.latency_ns, bytes, c.bytes_per_s * 1e-9);
  return c;
}

void check_counts(const char* what, int64_t rows, int64_t layers, int64_t row_bytes) {
  if (rows < 0 || layers <= 0 || row_bytes <= 0)
    throw_error("{}: rows {}, layers {}, row_bytes {}: expected rows >= 0 and layers, row_bytes > 0", what, rows, layers,
                row_bytes);
}

}  // namespace

double host_path_bytes_per_s(const HardwareSpec& hw, bool to_device, const NumaPlacement& p) {
  const double link = to_device ? hw.pcie.h2d_bulk_bytes_per_s : hw.pcie.d2h_bulk_bytes_per_s;
  if (!(link > 0)) throw_error("hardware {}: pcie {} must be > 0", hw.name, to_device ? "h2d_bulk_bytes_per_s" : "d2h_bulk_bytes_per_s");
  if (p.gpus_sharing_node < 1) throw_error("NUMA placement: gpus_sharing_node {} (expected >= 1)", p.gpus_sharing_node);
  if (!(hw.host_dram_bytes_per_s_per_numa > 0)) return link;  // DRAM not described: the link alone
  const double dram = hw.host_dram_bytes_per_s_per_numa / p.gpus_sharing_node * (p.local ? 1.0 : hw.numa_cross_node_factor);
  return std::min(link, dram);
}

int64_t host_copy_calls(HostPoolLayout layout, int64_t pages, int64_t layers, bool per_layer) {
  if (pages <= 0) return 0;
  if (copies_per_page(layout)) return pages * layers;
  return per_layer ? layers : 1;
}

TransferCost prefill_offload_cost(const HardwareSpec& hw, int64_t tokens, int64_t layers, int64_t row_bytes,
                                  const NumaPlacement& placement, HostPoolLayout layout, int64_t page_rows) {
  check_counts("prefill offload", tokens, layers, row_bytes);
  if (page_rows < 1) throw_error("prefill offload: page_rows {}: expected >= 1", page_rows);
  const double bytes = static_cast<double>(tokens) * static_cast<double>(layers) * static_cast<double>(row_bytes);
  const int64_t pages = (tokens + page_rows - 1) / page_rows;
  return priced(hw, host_copy_calls(layout, pages, layers, false), bytes, false, placement);
}

TransferCost decode_per_layer_cost(const HardwareSpec& hw, int64_t rows_per_layer, int64_t layers, int64_t row_bytes,
                                   const NumaPlacement& placement, HostPoolLayout layout) {
  check_counts("decode per-layer load", rows_per_layer, layers, row_bytes);
  const double bytes = static_cast<double>(rows_per_layer) * static_cast<double>(layers) * static_cast<double>(row_bytes);
  return priced(hw, host_copy_calls(layout, rows_per_layer, layers, true), bytes, true, placement);
}

}  // namespace hisparse::sim
