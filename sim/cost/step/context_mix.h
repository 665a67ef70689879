// @brief ContextMix: the sequence lengths a steady decode batch holds, as weighted classes. The planner plans one
// length at a time (a mix of one class); `hisparse advise` plans a workload's whole mix, where the requests of a
// batch differ in length and the step, memory and PCIe terms are sums over them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hisparse::sim {

struct ContextClass {
  int64_t seq_len = 0;  // tokens in the KV cache of a request of this class
  double weight = 0;    // share of a steady batch's requests (the weights of a mix sum to 1)
};

struct ContextMix {
  std::vector<ContextClass> classes;
  std::string label;  // "16K", or "workload X (N requests, decode-time weighted)"

  /// A single length (weight 1).
  static ContextMix single(int64_t seq_len);
  double mean_seq_len() const;
  /// Σ weight × f(seq_len) over the classes.
  template <class F>
  double expect(const F& f) const {
    double s = 0;
    for (const auto& c : classes) s += c.weight * f(c.seq_len);
    return s;
  }
  /// Throws naming `where` if empty, a length < 1, a weight < 0 or weights not summing to 1.
  void validate(const std::string& where) const;
};

/// The lengths present in a steady decode batch of a workload with these (input, output) token counts. A request
/// occupies a batch slot for its `output` steps (Little's law: its share of the batch ∝ output), and during them
/// its context grows from input to input + output, so each request contributes `points` lengths
/// input + output × (j + ½) / points. They are merged into at most `max_classes` quantile classes (by weight)
/// whose length is the weighted mean of their members, rounded up to whole tokens.
ContextMix decode_context_mix(const std::vector<std::pair<int64_t, int64_t>>& input_output, int points, int max_classes,
                              std::string label);

/// At most `max_classes` equal-weight quantile classes of weighted length samples (length, weight > 0).
ContextMix context_mix_from_samples(std::vector<std::pair<double, double>> samples, int max_classes, std::string label);

}  // namespace hisparse::sim
