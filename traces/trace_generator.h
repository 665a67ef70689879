// @brief Seeded synthetic top-k traces with settable statistics (overlap, sinks, recent window, topics, layers).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "traces/trace_source.h"

namespace hisparse::traces {

/// What one synthetic trace looks like. Step t of a request has seq_len = prompt_len + t; each layer selects
/// min(top_k, seq_len) positions: the attention sinks, the recent window (newest token included), and "topic"
/// positions. From one step to the next a layer keeps a fraction of its topic positions so that the adjacent
/// overlap |S_t ∩ S_t-1| / top_k is about `overlap`; new positions come from a few topic centres (which jump
/// now and then: drift) or uniformly from the whole context.
struct GeneratorOptions {
  int64_t requests = 2;
  int64_t steps = 64;              // decode steps per request
  int32_t layers = 8;
  int32_t top_k = 2048;
  int32_t prompt_len = 16384;      // seq_len at step 0
  double overlap = 0.85;           // target adjacent-step overlap, fraction of top_k
  int32_t sinks = 4;               // positions 0..sinks-1 always selected
  int32_t recent_window = 64;      // the newest `recent_window` positions always selected
  int32_t topics = 8;              // topic centres per layer
  double topic_width = 512.0;      // spread of a topic, tokens (triangular, +-width)
  double topic_drift = 0.02;       // per step and topic: probability the centre jumps elsewhere
  double uniform_fraction = 0.25;  // share of new positions drawn uniformly instead of around a topic
  double layer_spread = 0.1;       // layer l's overlap is overlap + layer_spread * (u - 0.5), u uniform per layer
  bool shuffle = false;            // emit each list in random (score-like) order instead of ascending
  InitialState initial_state = InitialState::kIdentity;
  uint64_t seed = 1;
};

/// Throws naming the field if an option is out of range.
void check_generator_options(const GeneratorOptions& options);

/// Named presets: "default" (8 layers, K 2048, 85% overlap), "tiny" (for tests and fuzz seeds), "dsv32"
/// (61 layers, K 2048, DeepSeek-V3.2 shape), "low-overlap" (60%).
GeneratorOptions generator_preset(const std::string& name);
std::vector<std::string> generator_preset_names();

/// A TraceSource computing records on the fly (memory: one step); request ids are 0..requests-1.
std::unique_ptr<TraceSource> make_generated_trace(const GeneratorOptions& options);

/// The portable random mapping used by the generator: splitmix64 for seeds, mt19937_64 output mapped by hand.
uint64_t mix_seed(uint64_t a, uint64_t b);

}  // namespace hisparse::traces
